#!/usr/bin/env bash
# Measures `herdless analyze` throughput on a generated log of N JSON lines
# (default 10 million) in the layout `herdless fleet --log-format json` writes:
# N / 4 tasks of 4 events each (3 retry_scheduled, 1 retry_succeeded), 2,000
# workers retrying over an hour, full jitter.
#
#   scripts/analyze-speed.sh [LINES] [BINARY]
#
# Prints the file size, then `/usr/bin/time -v` of one analyze run (wall
# clock, peak memory) and the lines per second. Build first:
# `cargo build --release -p herdless-cli`.
set -euo pipefail
lines=${1:-10000000}
bin=${2:-target/release/herdless}
log=${TMPDIR:-/tmp}/herdless-analyze-speed-$lines.jsonl
if [ ! -s "$log" ]; then
  python3 - "$lines" "$log" <<'PY'
import random, sys, datetime
n, path = int(sys.argv[1]), sys.argv[2]
rng = random.Random(7)
t0 = datetime.datetime(2026, 12, 1, 0, 0, 0, tzinfo=datetime.timezone.utc).timestamp()
def ts(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
with open(path, "w", buffering=1 << 20) as f:
    out = []
    for task in range(n // 4):
        t = t0 + task * 3600.0 / (n // 4)
        el = 0.0
        for a in range(1, 4):
            sleep = rng.random() * 0.5 * 2 ** (a - 1)
            out.append('{"timestamp":"%s","event":"retry_scheduled","task_id":"worker-%d","attempt":%d,"computed_jitter_s":%.6f,"sleep_s":%.6f,"honored_retry_after":false,"elapsed_s":%.6f,"status":503}\n' % (ts(t + el), task, a, sleep, sleep, el))
            el += sleep
        out.append('{"timestamp":"%s","event":"retry_succeeded","task_id":"worker-%d","attempt":4,"elapsed_s":%.6f}\n' % (ts(t + el), task, el))
        if len(out) >= 40000:
            f.write("".join(out)); out = []
    f.write("".join(out))
PY
fi
ls -l "$log"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
start=$(date +%s.%N)
/usr/bin/time -v "$bin" analyze "$log" > /dev/null 2> /tmp/herdless-analyze-speed.time || true
end=$(date +%s.%N)
grep -E "Elapsed|Maximum resident" /tmp/herdless-analyze-speed.time
python3 -c "import sys; s=float(sys.argv[2])-float(sys.argv[1]); print(f'{int(sys.argv[3])/s:,.0f} lines/s ({s:.2f} s)')" "$start" "$end" "$lines"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
