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
on_server=(); work=50
# shellcheck source=scripts/server-common.sh
. scripts/server-common.sh  # bin, start_server, stop, load

for n in "${@:-2000 20000}"; do
  start_server hold "$capacity" "$capacity" 1 --outage-s "$outage"
  out=$("$bin" hold-h2 "http://127.0.0.1:$port/" --n "$n" --release)
  echo "held $n: $(tr '\n' ' ' <<<"$out")(load $(load))"
  # Only a release of N held if the server held N, and answered none, before the end.
  read -r _ _ _ answered _ held <<<"$(head -1 <<<"$out")"
  if [ "$answered" != 0 ] || [ "$held" != "$n" ]; then
    echo "invalid: want $n held and none answered before the outage's end (OUTAGE_S=$outage too short?)" >&2
    exit 1
  fi
  stop
done
