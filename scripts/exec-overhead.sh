#!/usr/bin/env bash
# Whole-process wall time of `herdless exec -- true` against `true` alone, against
# the floor of a Rust program that only spawns and waits (examples/spawn_floor.rs,
# dynamically and statically linked), and against herdless built three other ways:
# linked without PIE, statically (static-pie), statically without PIE.
#
#   scripts/exec-overhead.sh [ROUNDS] [REPS]      (defaults 8 and 100)
#
# Each round runs `perf stat -r REPS` of every command, the commands interleaved so
# that the machine's load falls on all of them alike; the minimum and the median of
# the rounds' means are printed, with the ratio of the medians to `true`. The other
# builds go to $CARGO_TARGET_DIR/exec-overhead/ (default target/; each takes a full
# release build the first time).
set -euo pipefail
rounds=${1:-8}
reps=${2:-100}
root=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
out=$target/exec-overhead
mkdir -p "$out"
host=x86_64-unknown-linux-gnu

cd "$root"
cargo build -q --release -p herdless-cli --example spawn_floor
# herdless as it ships: the dist profile (fat LTO, one code unit, symbols stripped).
cargo build -q --profile dist -p herdless-cli --bin herdless
rustc -O --edition 2021 -C target-feature=+crt-static -C relocation-model=static \
  crates/herdless-cli/examples/spawn_floor.rs -o "$out/spawn_floor_static"
# Flags that change the link need --target: without it, cargo gives RUSTFLAGS to the
# proc-macro libraries too, which cannot link as executables or statically.
RUSTFLAGS="-C relocation-model=static" CARGO_TARGET_DIR=$out/no-pie \
  cargo build -q --profile dist --target $host -p herdless-cli --bin herdless
RUSTFLAGS="-C target-feature=+crt-static" CARGO_TARGET_DIR=$out/static-pie \
  cargo build -q --profile dist --target $host -p herdless-cli --bin herdless
RUSTFLAGS="-C target-feature=+crt-static -C relocation-model=static" CARGO_TARGET_DIR=$out/static \
  cargo build -q --profile dist --target $host -p herdless-cli --bin herdless

names=(true "spawn_floor (dynamic)" "spawn_floor (static, no PIE)" "herdless (default)"
  "herdless (no PIE)" "herdless (static-pie)" "herdless (static, no PIE)")
cmds=(true "$target/release/examples/spawn_floor true" "$out/spawn_floor_static true"
  "$target/dist/herdless exec -- true" "$out/no-pie/$host/dist/herdless exec -- true"
  "$out/static-pie/$host/dist/herdless exec -- true"
  "$out/static/$host/dist/herdless exec -- true")
declare -a runs
for _ in $(seq "$rounds"); do
  for i in "${!cmds[@]}"; do
    # shellcheck disable=SC2086 # each command is words
    t=$(perf stat -r "$reps" ${cmds[$i]} 2>&1 >/dev/null | awk '/time elapsed/ {print $1 * 1000}')
    runs[i]="${runs[i]:-} $t"
  done
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $rounds rounds of perf stat -r $reps"
printf '%-30s %10s %10s %8s\n' command "min ms" "median ms" "x true"
base=
for i in "${!cmds[@]}"; do
  read -r min med < <(tr ' ' '\n' <<<"${runs[i]}" | grep . | sort -n |
    awk '{a[NR] = $1} END {print a[1], a[int((NR + 1) / 2)]}')
  base=${base:-$med}
  printf '%-30s %10.3f %10.3f %8.2f\n' "${names[$i]}" "$min" "$med" "$(echo "$med / $base" | bc -l)"
done
