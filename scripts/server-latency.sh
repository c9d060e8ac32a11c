#!/usr/bin/env bash
# What a limiter adds to the latency of requests it lets through (docs/performance.md,
# "Server side"): one server of the server bench (benches/server.rs: axum on 127.0.0.1,
# one server thread pinned to one CPU, a handler spinning WORK_US of CPU) serving the
# service behind the limiter at / and the same service alone at /alone; a fixed-rate
# probe pinned to another CPU sends RATE requests a second to the two in turn, evenly
# spaced, the limiter set far above the rate (nothing refused). At a fixed rate below
# saturation the latency is the service's own, not a queue's; and because the two are
# measured request by request on the same thread and queue, whatever stalls the machine
# (this is a virtual machine: its CPUs stop for milliseconds now and then,
# scripts/cpu-stalls.py) delays both alike: the difference of their p50s is what the
# layer adds to a request. At the p99 the requests are those in a stall's backlog, which
# the two paths share, so a layered request's extra CPU also delays the /alone request
# behind it: the p99 difference reads low (the control says how low). `none` serves the service alone at both: that difference is the
# method's own noise, what "adds nothing" looks like; `control` is a layer that adds a
# known CONTROL_US (20) of CPU to each request: what the method must find. The summary
# ends with what the control says of the run: whether the method found the known cost at
# p50 and at p99 (read at least 3/4 of it), and whether the cost leaked into /alone (a
# queue the two paths share: then the differences understate every layer).
#
#   scripts/server-latency.sh            # ROUNDS=5 SECS=10 RATE=5000 WORK_US=50
#   LAYERS="none slots" scripts/server-latency.sh
#   LAYERS="none control" CONTROL_US=20 scripts/server-latency.sh     # the positive control
#
# Each round measures every layer in turn, starting one layer further along the list
# than the last round (no layer always first), and swaps which path gets the first
# request. Raw lines go to $OUT (default target/server-latency.txt); the summary to
# stdout: per layer the medians over the rounds of its p50/p99/p99.9, and the median
# and range of the per-round differences from the service alone beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-5}; secs=${SECS:-10}; rate=${RATE:-5000}; work=${WORK_US:-50}
layers=${LAYERS:-none control slots adaptive hold concurrency governor}
control_us=${CONTROL_US:-20}
out=${OUT:-target/server-latency.txt}
server_cpu=${SERVER_CPU:-0}; probe_cpu=${PROBE_CPU:-1}

on_server=(taskset -c "$server_cpu")
# shellcheck source=scripts/server-common.sh
. scripts/server-common.sh
# start LAYER: the server on $server_cpu, its limit far above the rate; sets port.
start() {
  local limit=1000000000
  [ "$1" = concurrency ] && limit=1000
  [ "$1" = control ] && limit=$control_us
  start_server "$1" "$limit" 0 1
}
probe() { taskset -c "$probe_cpu" "$bin" probe "$@" --conns 16; }
field() { awk -v k="$1" '{ for (i = 1; i < NF; i++) if ($i == k) print $(i + 1) }'; }

: >"$out"
read -ra list <<<"$layers"
for round in $(seq "$rounds"); do
  n=${#list[@]}
  for k in $(seq 0 $((n - 1))); do
    layer=${list[$(( (k + round - 1) % n ))]}
    start "$layer"; with="http://127.0.0.1:$port/"; base="http://127.0.0.1:$port/alone"
    if [ $((round % 2)) = 1 ]; then urls=("$base" "$with"); else urls=("$with" "$base"); fi
    probe "${urls[@]}" --rate "$rate" --secs 2 >/dev/null
    lines=$(probe "${urls[@]}" --rate "$rate" --secs "$secs")
    b=$(grep " url $base\$" <<<"$lines"); w=$(grep " url $with\$" <<<"$lines")
    echo "$layer round $round ${w% url *} base_p50_us $(field p50_us <<<"$b") base_p99_us $(field p99_us <<<"$b") base_p999_us $(field p999_us <<<"$b") load $(load)" |
      tee -a "$out" >&2
    stop
  done
done

awk -v layers="$layers" -v control_us="$control_us" '
  function field(name,   i) { for (i = 1; i <= NF; i++) if ($i == name) return $(i + 1); return "" }
  function median(s,   a, n, i, j, t) {
    n = split(s, a, " "); if (n == 0) return 0
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  function range(s,   a, n, i, lo, hi) {
    n = split(s, a, " "); lo = a[1] + 0; hi = a[1] + 0
    for (i = 2; i <= n; i++) { if (a[i] + 0 < lo) lo = a[i] + 0; if (a[i] + 0 > hi) hi = a[i] + 0 }
    return sprintf("%+d..%+d", lo, hi)
  }
  { k = $1; b50[k] = b50[k] " " field("base_p50_us"); p50[k] = p50[k] " " field("p50_us"); p99[k] = p99[k] " " field("p99_us"); p999[k] = p999[k] " " field("p999_us")
    d50[k] = d50[k] " " field("p50_us") - field("base_p50_us"); d99[k] = d99[k] " " field("p99_us") - field("base_p99_us")
    d999[k] = d999[k] " " field("p999_us") - field("base_p999_us") }
  END {
    printf "%-12s %7s %7s %8s   %-22s %-22s %-22s\n", "layer", "p50 us", "p99 us", "p99.9 us", "added p50: med (range)", "added p99: med (range)", "added p99.9: med"
    n = split(layers, L, " ")
    for (i = 1; i <= n; i++) {
      l = L[i]; if (!(l in p99)) continue
      printf "%-12s %7.0f %7.0f %8.0f   %+6.0f (%-12s) %+6.0f (%-12s) %+6.0f\n", l, median(p50[l]), median(p99[l]), median(p999[l]),
        median(d50[l]), range(d50[l]), median(d99[l]), range(d99[l]), median(d999[l])
    }
    if ("control" in d50) {
      c50 = median(d50["control"]); c99 = median(d99["control"])
      printf "\ncontrol (%d us added): p50 reads %+.0f, p99 reads %+.0f\n", control_us, c50, c99
      printf "  p50: %s\n", ((c50 >= 0.75 * control_us) ? "the method finds the known cost" : "INCONCLUSIVE: the method misses the known cost")
      printf "  p99: %s\n", ((c99 >= 0.75 * control_us) ? "the method finds the known cost" : "the method reads the known cost low: a p99 difference below the control bounds nothing")
      if ("none" in b50) {
        leak = median(b50["control"]) - median(b50["none"])
        printf "  /alone beside the control: p50 %+.0f us against beside none: %s\n", leak,
          ((leak > control_us / 4) ? "the cost leaks into /alone (a shared queue): INCONCLUSIVE" : "no leak")
      }
    }
  }' "$out"
