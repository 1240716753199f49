#!/usr/bin/env bash
# scripts/lib/bench-report on made-up results and references: a ratio to a peer and to
# another figure of the run, a target on the value, both directions, met and missed; the
# warning names each miss and says whether the machine was busy; a malformed reference file
# is refused. Run by CTest (test bench-report).
set -uo pipefail

report="$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/bench-report"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failures=0
expect() {  # description, pattern (grep -E), text
  if ! grep -qE -- "$2" <<<"$3"; then
    echo "FAILED: $1: no line matches '$2' in:"
    printf '%s\n' "$3" | sed 's/^/    /'
    failures=$((failures + 1))
  fi
}
reject() {  # description, pattern (grep -E), text
  if grep -qE -- "$2" <<<"$3"; then
    echo "FAILED: $1: a line matches '$2' in:"
    printf '%s\n' "$3" | sed 's/^/    /'
    failures=$((failures + 1))
  fi
}

printf '%s\t%s\t%s\t%s\t%s\t%s\n' \
  fast ns/op tokio 100 'ratio<=0.8' 'made up' \
  slow ns/op tokio 100 'ratio<=0.8' 'made up' \
  slow ns/op asio 400 - 'made up' \
  p99 us - - 'value<=100' 'made up' \
  p99 us run:flat_p99 - 'ratio<=0.05' 'made up' \
  thr ops/s run:alone - 'ratio>=0.95' 'made up' >"$dir/ref.tsv"
sed -i '1i # a comment line, skipped' "$dir/ref.tsv"
cat >"$dir/results.txt" <<'R'
RESULT spool fast 70.00 ns/op
RESULT spool slow 90.00 ns/op
RESULT spool p99 120.00 us
RESULT spool flat_p99 1000.00 us
RESULT spool alone 100.00 ops/s
RESULT spool thr 96.00 ops/s
RESULT spool unjudged 5.00 ns/op
R

busy=$("$report" "$dir/results.txt" "$dir/ref.tsv" 0.50 2 2.40)
expect "a met ratio" '^fast +70.00 ns/op +tokio 100 +0.700 +<= 0.8 +met$' "$busy"
expect "a missed ratio" '^slow +90.00 ns/op +tokio 100 +0.900 +<= 0.8 +MISSED$' "$busy"
expect "a reference without target" '^ +asio 400 +0.225$' "$busy"
expect "a missed value" '^p99 +120.00 us +- +- +<= 100 us +MISSED$' "$busy"
expect "a ratio within the run" '^ +flat_p99 1000.00 \(this run\) +0.120 +<= 0.05 +MISSED$' "$busy"
expect "a >= ratio met" '^thr +96.00 ops/s +alone 100.00 \(this run\) +0.960 +>= 0.95 +met$' "$busy"
expect "a workload with no reference" '^unjudged +5.00 ns/op +-$' "$busy"
expect "each miss warned" '^WARNING: missed target: slow 0.900 x tokio, target <= 0.8$' "$busy"
expect "each miss warned" '^WARNING: missed target: p99 120.00 us, target <= 100 us$' "$busy"
expect "each miss warned" '^WARNING: missed target: p99 0.120 x flat_p99, target <= 0.05$' "$busy"
expect "busy" '^WARNING: 3 target\(s\) missed; the machine was busy \(other processes used 0.50 of its 2 cores during the run; load average 2.40\): rerun on a quiet machine$' "$busy"
reject "a met target warned" 'WARNING: missed target: (fast|thr)' "$busy"

quiet=$("$report" "$dir/results.txt" "$dir/ref.tsv" 0.10 2 0.30)
expect "quiet" '^WARNING: 3 target\(s\) missed; the machine was quiet \(other processes used 0.10 of its 2 cores' "$quiet"

met=$("$report" <(grep -E ' (fast|thr|alone) ' "$dir/results.txt") "$dir/ref.tsv" 0.00 2 0.10)
expect "all met" '^every target was met; the machine was quiet' "$met"
reject "all met, no warning" '^WARNING' "$met"

printf 'fast\tns/op\ttokio\t100\n' >"$dir/bad.tsv"
"$report" "$dir/results.txt" "$dir/bad.tsv" 0 2 0 >/dev/null 2>"$dir/err"
rc=$?
[[ $rc == 2 ]] || { echo "FAILED: a row of 4 columns: exit status $rc, not 2"; failures=$((failures + 1)); }
expect "a row of 4 columns named" 'bad.tsv:1: 4 columns, not 6' "$(cat "$dir/err")"

# The repository's own file parses.
"$report" "$dir/results.txt" "$(dirname "${BASH_SOURCE[0]}")/../../benches/reference.tsv" 0 2 0 >/dev/null ||
  { echo "FAILED: benches/reference.tsv does not parse"; failures=$((failures + 1)); }

((failures == 0)) && echo "bench-report: every check passed"
exit $((failures > 0))
