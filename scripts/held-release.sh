#!/usr/bin/env bash
# How fast held requests are released, by how many are held (docs/http.md, "Memory per
# held request"): the server bench (benches/server.rs: axum on 127.0.0.1 behind
# PushbackLayer with the adaptive allocator's hold, the service refusing what passes
# CAPACITY a second with its own 503s) in an outage whose end it knows (OUTAGE_S after
# its start); N requests sent as HTTP/2 streams (h2c, 190 to a connection, so that N is
# not bounded by the open-file limit) before the end, all held (the run is refused
# unless the server's /held says N and none was answered); the rate at which the
# served ones came back, from the first to the last.
#   scripts/held-release.sh 2000 20000       # CAPACITY=1000 OUTAGE_S=5
set -euo pipefail
cd "$(dirname "$0")/.."
capacity=${CAPACITY:-1000}; outage=${OUTAGE_S:-5}
bin=$(cargo bench -p herdless-benches --bench server --no-run --message-format=json 2>/dev/null |
  jq -r 'select(.reason == "compiler-artifact" and .target.name == "server") | .executable' | tail -1)
[ -x "$bin" ] || { echo "the server bench did not build: cargo bench -p herdless-benches --bench server --no-run" >&2; exit 1; }

server=""
trap '[ -z "$server" ] || { kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; } || true' EXIT
for n in "${@:-2000 20000}"; do
  log=$(mktemp)
  "$bin" serve --layer hold --limit "$capacity" --capacity "$capacity" --outage-s "$outage" >"$log" 2>&1 &
  server=$!
  port=""
  for _ in $(seq 50); do port=$(awk '/^port/{print $2}' "$log"); [ -n "$port" ] && break; sleep 0.1; done
  [ -n "$port" ] || { echo "the server did not start" >&2; exit 1; }
  out=$("$bin" hold-h2 "http://127.0.0.1:$port/" --n "$n" --release)
  echo "held $n: $(tr '\n' ' ' <<<"$out")(load $(cut -d' ' -f1 /proc/loadavg))"
  # Only a release of N held if the server held N, and answered none, before the end.
  read -r _ _ _ answered _ held <<<"$(head -1 <<<"$out")"
  if [ "$answered" != 0 ] || [ "$held" != "$n" ]; then
    echo "invalid: want $n held and none answered before the outage's end (OUTAGE_S=$outage too short?)" >&2
    exit 1
  fi
  kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; server=""
  rm -f "$log"
done
