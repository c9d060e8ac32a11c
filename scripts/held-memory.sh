#!/usr/bin/env bash
# Memory per held request (docs/http.md, "Memory per held request"): the server
# bench (benches/server.rs: axum on 127.0.0.1 behind PushbackLayer with the adaptive
# allocator's hold, in an outage whose end it knows, so every request is held);
# N connections each send one request and wait; the server's resident memory
# (VmRSS) with them held, less its memory idle, over N; the run is refused unless the
# server's /held says N and none was answered. With H2=1 the N requests are
# HTTP/2 streams instead (h2c), 190 to a connection (hyper's server takes 200 at once
# on one connection by default): what a held request costs when it shares its
# connection.
#   scripts/held-memory.sh 1000 10000
#   H2=1 scripts/held-memory.sh 1000 10000 20000
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(cargo bench -p herdless-benches --bench server --no-run --message-format=json 2>/dev/null |
  jq -r 'select(.reason == "compiler-artifact" and .target.name == "server") | .executable' | tail -1)
[ -x "$bin" ] || { echo "the server bench did not build: cargo bench -p herdless-benches --bench server --no-run" >&2; exit 1; }
ulimit -n "$(ulimit -Hn)"  # each process holds N sockets: N below the hard limit

for n in "${@:-1000 10000}"; do
  log=$(mktemp); sent=$(mktemp)
  "$bin" serve --layer hold --limit 10000 --outage-s 300 --threads "${THREADS:-1}" >"$log" 2>&1 &
  server=$!
  for _ in $(seq 50); do port=$(awk '/^port/{print $2}' "$log"); [ -n "$port" ] && break; sleep 0.1; done
  rss() { awk '/^VmRSS/ {print $2}' "/proc/$server/status"; }
  sleep 0.5
  idle=$(rss)
  if [ "${H2:-0}" = 1 ]; then
    "$bin" hold-h2 "http://127.0.0.1:$port/" --n "$n" >"$sent" &
  else
  python3 - "$port" "$n" >"$sent" <<'EOF' &
import select, socket, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
socks = []
for k in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET / HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
    socks.append(s)
time.sleep(2)
poller = select.poll()
for s in socks:
    poller.register(s, select.POLLIN)
readable = len(poller.poll(0))
import http.client
ask = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
ask.request("GET", "/held")
held = ask.getresponse().read().decode()
print("sent %d answered %d held %s" % (n, readable, held), flush=True)
time.sleep(600)
EOF
  fi
  clients=$!
  for _ in $(seq 1200); do grep -q '^sent' "$sent" && break; sleep 0.1; done
  full=$(rss)
  # Only a measurement of N held if the server holds N and answered none.
  read -r _ _ _ answered _ held <"$sent"
  if [ "$answered" != 0 ] || [ "$held" != "$n" ]; then
    echo "invalid: $(cat "$sent") (want $n held, none answered)" >&2
    kill "$clients" "$server" 2>/dev/null || true
    exit 1
  fi
  echo "$(cat "$sent"): RSS idle ${idle} KB, held ${full} KB, $(( (full - idle) * 1024 / n )) bytes per held request (load $(cut -d' ' -f1 /proc/loadavg))"
  kill "$clients" "$server" 2>/dev/null || true
  wait "$clients" "$server" 2>/dev/null || true
  rm -f "$log" "$sent"
done
