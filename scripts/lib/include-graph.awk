# The include graph of src/ and include/, for scripts/check-layers (which passes every file
# as an argument, and `layers` bottom to top). POSIX awk (Debian's mawk runs it).
#   mode=check: prints each breach of the layering with the include chain that leads to
#               it, and each quoted include that resolves to no file; exits 1 if any.
#   mode=graph: prints the layer graph: which layer includes which, how many times.
# A quoted include resolves as the compiler finds it: next to the including file, then
# under include/, then under src/ (CMakeLists.txt's order).

BEGIN {
  nlayers = split(layers, layer_at, " ")
  for (i = 1; i <= nlayers; ++i) rank[layer_at[i]] = i
  api["include/spool/runtime.hpp"] = 1  # the public Runtime API: runtime/ and the leaves only
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

# Fills reached[1..nreached] with the files `start` includes, directly or not, nearest
# first, and parent[] with the chains that reach them. Stops at the public Runtime API, and
# with `public_only` at other src/ files (they are checked on their own: what a lower layer
# must not reach, a higher one must not either, but for runtime/ and the layers above it,
# and the API).
function walk(start, public_only,    head, u, v, k, seen) {
  split("", parent)
  split("", reached)
  nreached = 0
  seen[start] = 1
  head = 0
  u = start
  while (1) {
    if (!(u in api) && (u == start || !public_only || u !~ /^src\//)) {
      for (k = 1; k <= deg[u]; ++k) {
        v = adj[u, k]
        if (v in seen) continue
        seen[v] = 1
        if (u != start) parent[v] = u
        reached[++nreached] = v
      }
    }
    if (head == nreached) break
    u = reached[++head]
  }
}

# Reports each breach of the rule by `start`, a src/ file.
function check_from(start,    own, i, v, lv) {
  own = layer_of(start)
  walk(start, 1)
  for (i = 1; i <= nreached; ++i) {
    v = reached[i]
    lv = layer_of(v)
    if (lv != "public" && rank[lv] > rank[own]) {
      breach(start " -> " chain(v) " (" lv "/ is above " own "/)")
    } else if (v ~ /^include\/spool\/tls/ && own != "tls") {
      breach(start " -> " chain(v) " (only tls/ may use spool/tls: the core library never needs OpenSSL)")
    } else if ((v in api) && rank[own] < rank["runtime"]) {
      breach(start " -> " chain(v) " (only runtime/ and the layers above it may use the public Runtime API)")
    }
  }
}

# Whether `start` reaches the public Runtime API through any header, src/ ones included.
function reaches_api(start,    i) {
  walk(start, 0)
  for (i = 1; i <= nreached; ++i) {
    if (reached[i] in api) return 1
  }
  return 0
}

# One row per layer, top to bottom: how many include lines of its files name a header of
# each layer (spool/: the public headers), and how many of its files reach spool/runtime.hpp
# through any chain of includes.
function print_graph(    i, j, f, l, t, col, cols, ncols) {
  for (i = 1; i <= nfiles; ++i) {
    f = files[i]
    l = layer_of(f)
    ++count_files[l]
    if (l != "public" && reaches_api(f)) ++count_api[l]
    for (j = 1; j <= deg[f]; ++j) ++count_inc[l, layer_of(adj[f, j])]
  }
  ncols = 0
  for (i = 1; i <= nlayers; ++i) cols[++ncols] = layer_at[i]
  cols[++ncols] = "public"
  print "include lines from each layer (row) to each layer (column); API: files that reach"
  print "spool/runtime.hpp through their includes"
  printf "%-22s", ""
  for (i = 1; i <= nlayers; ++i) printf " %s", cols[i]
  printf " spool/ | API\n"
  for (i = nlayers; i >= 1; --i) {
    l = layer_at[i]
    printf "%-22s", l "/ (" (count_files[l] + 0) " files)"
    for (j = 1; j <= ncols; ++j) {
      col = cols[j]
      t = count_inc[l, col] + 0
      printf " %" (col == "public" ? 6 : length(col)) "s", (t == 0 ? "." : t)
    }
    printf " | %3d\n", count_api[l] + 0
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
  if (mode == "graph") {
    if (bad) exit 1
    print_graph()
    exit 0
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
