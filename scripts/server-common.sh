# Sourced by scripts/server-overhead.sh and scripts/server-latency.sh: the server
# bench's binary (benches/server.rs), and servers in the background.
# The caller sets `work` (the handler's WORK_US) and `on_server` (a command prefix,
# e.g. (taskset -c 0), or empty).

bin=$(cargo bench -p herdless-benches --bench server --no-run --message-format=json 2>/dev/null |
  jq -r 'select(.reason == "compiler-artifact" and .target.name == "server") | .executable' | tail -1)
[ -x "$bin" ] || { echo "the server bench did not build: cargo bench -p herdless-benches --bench server --no-run" >&2; exit 1; }

pid=""; pids=()
# stop: every server started since the last stop.
stop() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  pids=(); pid=""
}
trap stop EXIT

# start_server LAYER LIMIT CAPACITY THREADS [SERVE_FLAG...]: a server in the background
# (beside any already started); sets pid and port.
start_server() {
  local log; log=$(mktemp)
  "${on_server[@]}" "$bin" serve --layer "$1" --limit "$2" --capacity "$3" --work-us "$work" --threads "$4" "${@:5}" >"$log" 2>&1 &
  pid=$!; pids+=("$pid")
  for _ in $(seq 50); do port=$(awk '/^port/{print $2}' "$log"); [ -n "$port" ] && break; sleep 0.1; done
  rm -f "$log"
  [ -n "$port" ] || { echo "the server did not start" >&2; exit 1; }
}
load() { cut -d' ' -f1 /proc/loadavg; }
