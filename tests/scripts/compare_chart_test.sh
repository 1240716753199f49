#!/usr/bin/env bash
# scripts/lib/compare-chart on made-up tables: one workload whose every ratio is below 1 (a
# labels plot with no point crashed gnuplot 5.4), and ratios on both sides of 1 with a
# spool-only row; each must give both PNGs. Run by CTest (test compare-chart).
set -uo pipefail

chart="$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/compare-chart"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failures=0
draws() {  # description, table
  mkdir -p "$dir/$1"
  printf '%s' "$2" >"$dir/$1/compare.csv"
  if ! "$chart" "$dir/$1/compare.csv" "$dir/$1" "test" >"$dir/$1/log" 2>&1; then
    echo "FAILED: $1: compare-chart failed:"
    sed 's/^/    /' "$dir/$1/log"
    failures=$((failures + 1))
  fi
  for png in compare.png compare-medians.png; do
    if [[ $(head -c 4 "$dir/$1/$png" 2>/dev/null | tail -c 3) != PNG ]]; then
      echo "FAILED: $1: no $png"
      failures=$((failures + 1))
    fi
  done
}

draws one-workload-below-1 'workload,id,area,unit,spool,tokio,ratio_spool_vs_tokio
framed_lines,W19,streams,ns/op,71.34,77.16,0.925
'
draws both-sides 'workload,id,area,unit,spool,tokio,tbb,ratio_spool_vs_tokio,ratio_spool_vs_tbb
spawn_many_local,W1,scheduler,ns/op,85,140,54,0.61,1.57
framed_lines,W19,streams,ns/op,71,77,,0.92,
generator_sum,W18,streams,ns/op,15.3,,,,
'
((failures == 0)) && echo "compare-chart: all cases passed"
exit $((failures > 0))
