#!/usr/bin/env bash
# spool-console --once against a running program (examples/console-demo): one snapshot printed
# as text, its tasks, workers, channels and lints there; bad options refused. Run by CTest
# (test console-once) with the two programs' paths, and mini-redis's (the README's quick start:
# mini-redis --console, a connection named by its peer).
set -uo pipefail
console=$1 demo=$2 mini_redis=${3-}
source "$(dirname "${BASH_SOURCE[0]}")/console_lib.sh"
start_demo

failures=0
out=$("$console" --once "$sock" 2>&1)
rc=$?
if [[ $rc != 0 ]]; then
  echo "FAILED: spool-console --once exited $rc: $out"
  exit 1
fi
for want in '2 worker(s)' '== tasks (by polls)' 'ticker' 'spinner' 'conn 127.0.0.1:5412' \
  'report' 'examples/console-demo/main.cpp:' '== workers' 'level 1' 'batch (drain)' \
  '[self_wake] task' '"spinner" woke itself'; do
  if ! grep -qF -- "$want" <<<"$out"; then
    echo "FAILED: --once does not show '$want'"
    failures=$((failures + 1))
  fi
done
# Sorted by polls, the spinner (a thousand yields per nap) comes first.
first=$(grep -A1 '^    ID  NAME' <<<"$out" | tail -1)
if ! grep -q spinner <<<"$first"; then
  echo "FAILED: by polls the spinner is not first: $first"
  failures=$((failures + 1))
fi
by_name=$("$console" --once --sort name "$sock" | grep -A1 '^    ID  NAME' | tail -1)
if ! grep -q 'conn 127.0.0.1:5412' <<<"$by_name"; then
  echo "FAILED: --sort name does not put 'conn ...' first: $by_name"
  failures=$((failures + 1))
fi

err=$("$console" --once --sort nonsense "$sock" 2>&1)
rc=$?
if [[ $rc != 2 ]] || ! grep -q 'no sort key "nonsense"' <<<"$err"; then
  echo "FAILED: a bad --sort gave $rc: $err"
  failures=$((failures + 1))
fi
err=$("$console" --once "$dir/nothing.sock" 2>&1)
rc=$?
if [[ $rc != 1 ]] || ! grep -q 'cannot connect' <<<"$err"; then
  echo "FAILED: a missing socket gave $rc: $err"
  failures=$((failures + 1))
fi

if [[ -n $mini_redis ]]; then
  "$mini_redis" --port 0 --workers 1 --console "$dir/redis.sock" >"$dir/redis.log" 2>&1 &
  redis_pid=$!
  if poll_until grep -q 'listening on' "$dir/redis.log"; then
    port=$(grep -o ':[0-9]*$' "$dir/redis.log" | tr -d :)
    exec 3<>"/dev/tcp/127.0.0.1/$port"  # one connection, held open
    connected() { "$console" --once "$dir/redis.sock" | grep -q 'conn 127.0.0.1:'; }
    if ! poll_until connected; then
      echo "FAILED: mini-redis's console shows no connection task:"
      "$console" --once "$dir/redis.sock" | sed 's/^/    /'
      failures=$((failures + 1))
    fi
    exec 3>&-
  else
    echo "FAILED: mini-redis --console did not start:"
    cat "$dir/redis.log"
    failures=$((failures + 1))
  fi
  kill "$redis_pid" 2>/dev/null
  wait "$redis_pid" 2>/dev/null
  if [[ -e $dir/redis.sock ]]; then
    echo "FAILED: mini-redis left its console socket after SIGTERM"
    failures=$((failures + 1))
  fi
fi
[[ $failures == 0 ]] && echo "console-once: OK"
exit $((failures > 0))
