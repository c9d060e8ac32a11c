#!/usr/bin/env bash
# What the server side costs a service (docs/performance.md, "Server side"): the
# server bench (benches/server.rs: axum on 127.0.0.1, a handler spinning WORK_US
# of CPU) alone and behind each limiter, saturated by wrk, in interleaved rounds.
#
#   scripts/server-overhead.sh            # ROUNDS=3 SECS=10 CONNS=64 WORK_US=50 THREADS=1
#   LAYERS="none slots" scripts/server-overhead.sh
#
# Two phases per round, every layer in turn within each:
#  pass  the limiters set far above what the service can do (nothing refused):
#        requests/s, latency p50/p99/p99.9, and the server's CPU per request;
#  over  the service sheds what goes past C a second (its own 503s), every
#        limiter set to C, where C is a third of what the service alone did in
#        the first pass round; wrk offers 3C (its connections pause PAUSE_MS=10
#        before each request: scripts/server-overhead-paced.lua; the table shows
#        what it offered). A probe client (200/s, up to 64 in flight: a hold keeps
#        them tens of ms) measures the latency of the requests served meanwhile,
#        and, before wrk starts, the same probe at C/s alone gives the served
#        latency at capacity.
# The server's CPU time is its utime + stime (/proc/PID/stat); the load average
# is printed beside every line. Raw lines go to $OUT (default target/server-overhead.txt),
# the summary (medians over the rounds) to stdout. PIN=1 pins the server to CPU 0 and
# the load generators (wrk, the probe) to CPU 1 (with THREADS=1): the served latency
# is then the server's, not the load generators' share of the same cores.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-3}; secs=${SECS:-10}; conns=${CONNS:-64}; work=${WORK_US:-50}; threads=${THREADS:-1}
layers=${LAYERS:-none slots adaptive hold concurrency governor}
out=${OUT:-target/server-overhead.txt}
lua=scripts/server-overhead.lua
paced_lua=scripts/server-overhead-paced.lua
pause=${PAUSE_MS:-10}
hz=$(getconf CLK_TCK)
on_server=(); on_load=()
if [ "${PIN:-0}" = 1 ]; then on_server=(taskset -c 0); on_load=(taskset -c 1); fi

# shellcheck source=scripts/server-common.sh
. scripts/server-common.sh
# start LAYER LIMIT CAPACITY: the server in the background; sets pid and port.
start() { start_server "$1" "$2" "$3" "$threads"; }
cpu() { awk -v hz="$hz" '{printf "%.3f", ($14 + $15) / hz}' "/proc/$pid/stat"; }

# The limit that lets everything through, per layer.
open_limit() { case $1 in concurrency) echo 1000 ;; *) echo 1000000000 ;; esac; }
# The limit at capacity C, per layer (tower's concurrency limit queues, it never refuses:
# a few in flight, the service's own capacity refuses the rest).
over_limit() { case $1 in concurrency) echo 4 ;; *) echo "$2" ;; esac; }

: >"$out"
capacity=""
for round in $(seq "$rounds"); do
  for layer in $layers; do
    start "$layer" "$(open_limit "$layer")" 0
    "${on_load[@]}" wrk -t1 -c"$conns" -d2s "http://127.0.0.1:$port/" >/dev/null
    c0=$(cpu)
    line=$("${on_load[@]}" wrk -t1 -c"$conns" -d"${secs}s" -s "$lua" "http://127.0.0.1:$port/" | grep '^requests')
    echo "pass $layer round $round $line cpu_s $(echo "$(cpu) - $c0" | bc) load $(load)" | tee -a "$out" >&2
    stop
  done
  if [ -z "$capacity" ]; then
    capacity=$(awk '$1 == "pass" && $2 == "none" { printf "%d", $6 / $8 / 3 }' "$out")
    # 3C offered: each of $paced connections pauses $pause ms before each request.
    paced=$(( (3 * capacity * (pause + 1) + 999) / 1000 ))
    echo "capacity C = $capacity/s (a third of the service alone); overload: $paced connections pausing $pause ms" | tee -a "$out" >&2
  fi
  for layer in $layers; do
    start "$layer" "$(over_limit "$layer" "$capacity")" "$capacity"
    at=$("${on_load[@]}" "$bin" probe "http://127.0.0.1:$port/" --rate "$capacity" --secs "$secs" --conns 16)
    echo "cap $layer round $round $at load $(load)" | tee -a "$out" >&2
    c0=$(cpu)
    "${on_load[@]}" "$bin" probe "http://127.0.0.1:$port/" --rate 200 --secs "$secs" --conns 64 >"$out.probe" &
    probe=$!
    line=$("${on_load[@]}" wrk -t1 -c"$paced" -d"${secs}s" -s "$paced_lua" "http://127.0.0.1:$port/" -- "$pause" | grep '^requests')
    wait "$probe"
    echo "over $layer round $round $line cpu_s $(echo "$(cpu) - $c0" | bc) load $(load) $(cat "$out.probe")" | tee -a "$out" >&2
    rm -f "$out.probe"
    stop
  done
done

# Medians over the rounds. CPU per request: the server's CPU seconds over the answers
# (wrk's and the probe's); a served request's cost from the service alone (pass), a
# refusal's from what is left of an overload round once its served requests are paid.
awk '
function field(name,   i) { for (i = 1; i <= NF; i++) if ($i == name) return $(i + 1); return "" }
function median(list,   n, a, i, j, t) {
  n = split(list, a, " ")
  for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
  return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
$1 == "pass" || $1 == "over" || $1 == "cap" {
  key = $1 " " $2; if (!(key in seen)) { seen[key] = 1; order[++keys] = key }
  if ($1 == "cap") { cp99[key] = cp99[key] " " field("p99_us"); next }
  req = field("requests"); s = field("seconds"); served = field("s200") + 0; refused = field("s503") + field("s429")
  probe_n = field("served") + field("refused")
  rps[key] = rps[key] " " req / s; p50[key] = p50[key] " " field("p50_us"); p99[key] = p99[key] " " field("p99_us")
  p999[key] = p999[key] " " field("p999_us"); cpu[key] = cpu[key] " " 1e6 * field("cpu_s") / (req + probe_n)
  srv[key] = srv[key] " " served / s; ref[key] = ref[key] " " refused / s; ld[key] = ld[key] " " field("load")
  sp99[key] = sp99[key] " " field("p99_us"); if ($1 == "over") { sp99[key] = ""; for (i = 1; i <= NF; i++) if ($i == "probe") { pp99[key] = pp99[key] " " $(i + 8) } }
  if ($1 == "over") { nr[key]++; rcpu[key, nr[key]] = field("cpu_s"); rserved[key, nr[key]] = served * 1 + field("served"); rrefused[key, nr[key]] = refused + field("refused") }
}
END {
  base = median(cpu["pass none"])
  printf "%-18s %10s %8s %8s %9s %10s %10s %11s %s\n", "phase layer", "req/s", "p50 us", "p99 us", "p99.9 us", "us CPU/req", "served/s", "refused/s", "load"
  for (k = 1; k <= keys; k++) {
    key = order[k]; if (key ~ /^cap/) continue
    printf "%-18s %10.0f %8.0f %8.0f %9.0f %10.1f %10.0f %11.0f %s\n", key, median(rps[key]), median(p50[key]), median(p99[key]), median(p999[key]), median(cpu[key]), median(srv[key]), median(ref[key]), ld[key]
  }
  print ""
  printf "%-14s %20s %22s %16s %26s\n", "overload", "served p99 at C (us)", "served p99 at 3C (us)", "us CPU/refusal", "refusal / served request"
  for (k = 1; k <= keys; k++) {
    key = order[k]; if (key !~ /^over/) continue
    l = substr(key, 6); costs = ""
    for (r = 1; r <= nr[key]; r++) if (rrefused[key, r] > 0) costs = costs " " (1e6 * rcpu[key, r] - rserved[key, r] * base) / rrefused[key, r]
    c = costs == "" ? 0 : median(costs)
    printf "%-14s %20.0f %22.0f %16.1f %26s\n", l, median(cp99["cap " l]), median(pp99[key]), c, (c > 0 ? sprintf("1/%.1f", base / c) : "-")
  }
  printf "\na served request: %.1f us of CPU (the service alone, pass)\n", base
}' "$out"
