#!/usr/bin/env bash
# spool-console's live screen, driven in tmux against a running program (examples/console-demo):
# keys sent with send-keys, the screen read with capture-pane and checked. Each wait polls the
# pane until the expected text shows, with an overall bound. Skipped (exit 77) without tmux.
# Run by CTest (test console-tmux) with the two programs' paths.
set -uo pipefail
console=$1 demo=$2
if ! command -v tmux >/dev/null; then
  echo "console-tmux: SKIPPED: tmux is not installed (apt install tmux)"
  exit 77
fi
source "$(dirname "${BASH_SOURCE[0]}")/console_lib.sh"
tmux_socket="spool-console-test-$$"  # a tmux server of our own: the user's is left alone
tmux() { command tmux -L "$tmux_socket" "$@"; }
trap 'tmux kill-server 2>/dev/null; cleanup' EXIT
start_demo

tmux new-session -d -s console -x 160 -y 40 "$console --interval 100 $sock"

# Waits until the pane shows `text` (a fixed string), at most 10 s.
failures=0
screen() { tmux capture-pane -p -t console; }
shows() { screen | grep -qF -- "$1"; }
expect() {
  poll_until shows "$1" && return 0
  echo "FAILED: the screen never showed '$1'; it shows:"
  screen | sed 's/^/    /'
  failures=$((failures + 1))
  return 1
}

expect 'sort: polls'
expect 'spinner'
expect 'conn 127.0.0.1:5412'
# The tasks table: its header and, first by polls, the spinner (selected).
expect '    ID  NAME'
tmux send-keys -t console s
expect 'sort: wakes'
tmux send-keys -t console Enter
expect 'task 2 "spinner"'
# Between its spins it sleeps: idle, with its chain (a running or queued task shows none).
expect 'waiting on     spool::Sleep'
expect '  backtrace:'
tmux send-keys -t console b c
expect 'LEVEL / CHANNEL'
expect 'batch (drain)'
tmux send-keys -t console w
expect 'WORKER'
tmux send-keys -t console l
expect '[self_wake]'
tmux send-keys -t console q
gone() { ! tmux has-session -t console 2>/dev/null; }
if ! poll_until gone; then
  echo "FAILED: q did not quit spool-console"
  failures=$((failures + 1))
fi
[[ $failures == 0 ]] && echo "console-tmux: OK"
exit $((failures > 0))
