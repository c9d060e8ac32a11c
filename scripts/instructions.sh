#!/usr/bin/env bash
# Instructions per call of each case in benches/instructions.rs,
# counted by callgrind (immune to machine load): (count at N - count at 0) / N.
#
# Two builds, side by side: the library as the benches build it (`tokio`, `http`)
# and the same with its `metrics` feature on and no recorder installed (a feature
# must tax only the calls that use it: the last column is their ratio); then the
# `*_recorder` cases, which exist only in the second build (a recorder installed).
#   scripts/instructions.sh [CASE...]
# ONLY=default or ONLY=metrics counts one build; N=20000 calls per case.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${N:-20000}

# The bench binary cargo builds with `$1` as extra arguments (its path, from cargo's JSON).
build() {
  cargo bench -p herdless-benches --bench instructions --no-run --message-format=json "$@" 2>/dev/null |
    jq -r 'select(.reason == "compiler-artifact" and .target.name == "instructions") | .executable' |
    tail -1
}
count() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$1" "$2" "$3" 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'; }
per_call() {
  local base full
  base=$(count "$1" "$2" 0); full=$(count "$1" "$2" "$n")
  echo "($full - $base) / $n" | bc -l
}

plain=""; metered=""
[ "${ONLY:-}" = metrics ] || plain=$(build)
[ "${ONLY:-}" = default ] || metered=$(build --features metrics)
bin=${plain:-$metered}
[ -x "$bin" ] || { echo "the instructions bench did not build: cargo bench -p herdless-benches --bench instructions --no-run" >&2; exit 1; }

cases=("$@")
[ ${#cases[@]} -gt 0 ] || mapfile -t cases < <("$bin" --list | grep -v '_recorder$')
printf '%-36s %10s %22s %8s\n' case default 'metrics (no recorder)' ratio
for c in "${cases[@]}"; do
  a=""; b=""
  [ -z "$plain" ] || a=$(per_call "$plain" "$c")
  [ -z "$metered" ] || b=$(per_call "$metered" "$c")
  r=""; [ -z "$a" ] || [ -z "$b" ] || r=$(printf '%.3f' "$(echo "$b / $a" | bc -l)")
  printf '%-36s %10s %22s %8s\n' "$c" "${a:+$(printf '%.1f' "$a")}" "${b:+$(printf '%.1f' "$b")}" "$r"
done
if [ -n "$metered" ] && [ $# -eq 0 ]; then
  echo "with a recorder installed (the metrics build):"
  "$metered" --list | grep '_recorder$' | while read -r c; do
    printf '%-36s %10s %22.1f %8s\n' "$c" "" "$(per_call "$metered" "$c")" ""
  done
fi
