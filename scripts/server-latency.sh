#!/usr/bin/env bash
# What a limiter adds to the latency of requests it lets through (docs/performance.md,
# "Server side"): the server bench (benches/server.rs: axum on 127.0.0.1, a handler
# spinning WORK_US of CPU, one server thread) pinned to one CPU, a fixed-rate probe
# pinned to another, every limiter set far above the rate (nothing refused), in
# interleaved rounds. At a fixed rate below saturation the latency is the service's
# own, not a queue's: the difference from the service alone is what the layer adds.
#
#   scripts/server-latency.sh            # ROUNDS=5 SECS=10 RATE=5000 WORK_US=50
#   LAYERS="none slots" scripts/server-latency.sh
#
# Raw lines go to $OUT (default target/server-latency.txt); the summary to stdout:
# per layer the medians over the rounds of p50/p99/p99.9, and the median of the
# per-round differences from the service alone (the rounds are interleaved, so a
# round's difference is taken at one moment of the machine's load).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-5}; secs=${SECS:-10}; rate=${RATE:-5000}; work=${WORK_US:-50}
layers=${LAYERS:-none slots adaptive hold concurrency governor}
out=${OUT:-target/server-latency.txt}
server_cpu=${SERVER_CPU:-0}; probe_cpu=${PROBE_CPU:-1}

on_server=(taskset -c "$server_cpu")
# shellcheck source=scripts/server-common.sh
. scripts/server-common.sh
# start LAYER: the server on $server_cpu, its limit far above the rate.
start() {
  local limit=1000000000
  [ "$1" = concurrency ] && limit=1000
  start_server "$1" "$limit" 0 1
}

: >"$out"
for round in $(seq "$rounds"); do
  for layer in $layers; do
    start "$layer"
    taskset -c "$probe_cpu" "$bin" probe "http://127.0.0.1:$port/" --rate "$rate" --secs 2 --conns 16 >/dev/null
    at=$(taskset -c "$probe_cpu" "$bin" probe "http://127.0.0.1:$port/" --rate "$rate" --secs "$secs" --conns 16)
    echo "$layer round $round $at load $(load)" | tee -a "$out" >&2
    stop
  done
done

awk -v layers="$layers" '
  function field(name,   i) { for (i = 1; i <= NF; i++) if ($i == name) return $(i + 1); return "" }
  function median(s,   a, n, i, j, t) {
    n = split(s, a, " "); if (n == 0) return 0
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  { k = $1; r = $3; p50[k] = p50[k] " " field("p50_us"); p99[k] = p99[k] " " field("p99_us")
    p999[k] = p999[k] " " field("p999_us"); v50[k, r] = field("p50_us"); v99[k, r] = field("p99_us"); rs[r] = 1 }
  END {
    printf "%-12s %8s %8s %9s %18s %18s\n", "layer", "p50 us", "p99 us", "p99.9 us", "added p50 (med)", "added p99 (med)"
    n = split(layers, L, " ")
    for (i = 1; i <= n; i++) {
      l = L[i]; d50 = ""; d99 = ""
      for (r in rs) if ((l, r) in v99 && ("none", r) in v99) { d50 = d50 " " v50[l, r] - v50["none", r]; d99 = d99 " " v99[l, r] - v99["none", r] }
      printf "%-12s %8.0f %8.0f %9.0f %18s %18s\n", l, median(p50[l]), median(p99[l]), median(p999[l]),
        (l == "none" ? "-" : sprintf("%+.0f", median(d50))), (l == "none" ? "-" : sprintf("%+.0f", median(d99)))
    }
  }' "$out"
