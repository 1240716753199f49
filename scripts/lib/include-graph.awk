# The include graph of src/ and include/, for scripts/check-layers (which passes every file
# as an argument, and `layers` bottom to top). POSIX awk (Debian's mawk runs it). Prints
# each breach of the layering with the include chain that leads to it, and each quoted
# include that resolves to no file; exits 1 if any.
# A quoted include resolves as the compiler finds it: next to the including file, then
# under include/, then under src/ (CMakeLists.txt's order).

BEGIN {
  nlayers = split(layers, layer_at, " ")
  for (i = 1; i <= nlayers; ++i) rank[layer_at[i]] = i
  api["include/spool/runtime.hpp"] = 1  # the public Runtime API: runtime/ and net/ only
  api["include/spool/spool.hpp"] = 1
  bad = 0
}

FNR == 1 { files[++nfiles] = FILENAME; known[FILENAME] = 1 }

/^[ \t]*#[ \t]*include[ \t]*"/ {
  spelled = $0
  sub(/^[^"]*"/, "", spelled)
  sub(/".*/, "", spelled)
  raw_from[++nraw] = FILENAME
  raw_inc[nraw] = spelled
}

# The file `spelled` names when `from` includes it; "" when none is known.
function resolve(from, spelled,    dir) {
  dir = from
  sub(/[^\/]*$/, "", dir)
  if ((dir spelled) in known) return dir spelled
  if (("include/" spelled) in known) return "include/" spelled
  if (("src/" spelled) in known) return "src/" spelled
  return ""
}

# src/<layer>/...: the layer; include/...: "public".
function layer_of(path,    rest) {
  if (path !~ /^src\//) return "public"
  rest = substr(path, 5)
  sub(/\/.*/, "", rest)
  return rest
}

# How a chain shows a file: src/ files by path, public headers as they are included.
function shown(path) { return path ~ /^include\// ? substr(path, 9) : path }

function chain(to,    s) {
  s = shown(to)
  while (to in parent) {
    to = parent[to]
    s = shown(to) " -> " s
  }
  return s
}

function breach(msg) {
  print "check-layers: " msg
  bad = 1
}

# The files `start` reaches through public headers (other src/ files are checked on their
# own: a layer may include a lower one, and anything a lower layer must not reach, a
# higher one must not either, but for runtime/ and net/ and the API). Reports each breach.
function check_from(start,    own, head, tail, queue, u, v, k, lv) {
  own = layer_of(start)
  split("", parent)
  split("", seen)
  seen[start] = 1
  head = 1
  tail = 0
  queue[++tail] = start
  while (head <= tail) {
    u = queue[head++]
    for (k = 1; k <= deg[u]; ++k) {
      v = adj[u, k]
      if (v in seen) continue
      seen[v] = 1
      if (u != start) parent[v] = u
      lv = layer_of(v)
      if (lv != "public") {
        if (rank[lv] > rank[own]) {
          breach(start " -> " chain(v) " (" lv "/ is above " own "/)")
        }
      } else if ((v in api) && own != "runtime" && own != "net") {
        breach(start " -> " chain(v) " (only runtime/ and net/ may use the public Runtime API)")
      } else {
        queue[++tail] = v
      }
    }
  }
}

END {
  for (i = 1; i <= nraw; ++i) {
    to = resolve(raw_from[i], raw_inc[i])
    if (to == "") {
      breach(raw_from[i] " includes \"" raw_inc[i] "\", which is no file of src/ or include/")
      continue
    }
    adj[raw_from[i], ++deg[raw_from[i]]] = to
    if (raw_from[i] ~ /^include\// && to ~ /^src\//) {
      breach(raw_from[i] " includes \"" raw_inc[i] "\": a public header cannot use src/ (not installed)")
    }
  }
  for (i = 1; i <= nfiles; ++i) {
    f = files[i]
    if (f !~ /^src\//) continue
    if (!(layer_of(f) in rank)) {
      breach(f ": src/" layer_of(f) "/ is no layer; add it to scripts/check-layers and docs/layers.md")
      continue
    }
    check_from(f)
  }
  exit bad
}
