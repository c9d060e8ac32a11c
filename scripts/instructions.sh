#!/usr/bin/env bash
# Instructions per call of each case in benches/instructions.rs,
# counted by callgrind (immune to machine load): (count at N - count at 0) / N.
#   cargo bench -p herdless-benches --bench instructions --no-run
#   scripts/instructions.sh [CASE...]
set -euo pipefail
target=${CARGO_TARGET_DIR:-target}
bin=$(ls -t "$target"/release/deps/instructions-* 2>/dev/null | grep -v '\.d$' | head -1)
[ -x "$bin" ] || { echo "build first: cargo bench -p herdless-benches --bench instructions --no-run" >&2; exit 1; }
n=${N:-20000}
count() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" "$1" "$2" 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'; }
cases=("$@")
[ ${#cases[@]} -gt 0 ] || mapfile -t cases < <("$bin" --list)
printf '%-36s %12s\n' case instructions/call
for c in "${cases[@]}"; do
  base=$(count "$c" 0); full=$(count "$c" "$n")
  printf '%-36s %12.1f\n' "$c" "$(echo "($full - $base) / $n" | bc -l)"
done
