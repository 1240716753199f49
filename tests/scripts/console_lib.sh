# Shared by the console tests: starts console-demo on a fresh socket and stops it at exit.
# Sourced with: console=<spool-console> demo=<console-demo>.
dir=$(mktemp -d)
sock="$dir/console.sock"
demo_pid=
cleanup() {
  [[ -n $demo_pid ]] && kill "$demo_pid" 2>/dev/null && wait "$demo_pid" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT

# Runs the command until it succeeds, at most 200 times 50 ms apart (10 s): what is awaited is
# the command's condition, with an overall bound; fails when the bound passes.
poll_until() {
  for _ in $(seq 1 200); do
    "$@" && return 0
    sleep 0.05
  done
  return 1
}

# Runs console-demo for at most 120 s and waits until it serves.
start_demo() {
  "$demo" "$sock" 120 >"$dir/demo.log" 2>&1 &
  demo_pid=$!
  poll_until grep -q serving "$dir/demo.log" && return 0
  echo "FAILED: console-demo did not start:"
  cat "$dir/demo.log"
  exit 1
}
