#!/usr/bin/env bash
# Real-socket comparison of fleet-level strategies after an outage:
# `herdless fleet` against `herdless stub --outage T --capacity C`, one fresh
# stub per strategy. Prints one Markdown table row per strategy.
#
#   scripts/fleet-strategies.sh BIN WORKERS OUTAGE CAPACITY BASE
#   e.g. scripts/fleet-strategies.sh target/release/herdless 10000 5s 2000 1s
#
# drain = the last request served (status 200) on the stub's clock, which
# starts the outage; the physical limit is OUTAGE + WORKERS / CAPACITY.
# peak after T = the largest 100 ms bucket of arrivals at or after the end of
# the outage, over CAPACITY / 10 (the simulator's peak_over_capacity).
# The breaker's release window and the sized budgets follow the fleet:
# release over WORKERS / CAPACITY seconds; budgets of 4 tokens (gRPC) and 20
# tokens (AWS) per worker, against the defaults of 100 and 500 in all.
# Needs bash, curl, jq and awk.
set -euo pipefail
B=$1 N=$2 T=$3 C=$4 BASE=$5
T_S=$(awk -v t="${T%s}" 'BEGIN { print t + 0 }')
RELEASE=$(awk -v n="$N" -v c="$C" 'BEGIN { printf "%dms", 1000 * n / c }')

run() { # NAME STUB-FLAGS... -- FLEET-FLAGS...
    local name=$1 out pid port
    shift
    local stub_flags=()
    while [ "$1" != "--" ]; do stub_flags+=("$1"); shift; done
    shift
    out=$(mktemp)
    "$B" stub --outage "$T" --capacity "$C" "${stub_flags[@]}" >"$out" 2>&1 &
    pid=$!
    until grep -q listening "$out"; do sleep 0.05; done
    port=$(head -1 "$out" | sed 's/.*://')
    report=$("$B" fleet --workers "$N" --base "$BASE" --seed 7 --json "$@" \
        "http://127.0.0.1:$port/device" 2>/dev/null || true)
    stats=$(curl -s "http://127.0.0.1:$port/stats")
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    rm -f "$out"
    drain=$(jq -r '[.arrivals[] | select(.status == 200) | .t_s] | max // "none"' <<<"$stats")
    peak=$(jq -r --argjson t "$T_S" --argjson c "$C" '
        [.arrivals[] | select(.t_s >= $t) | (.t_s * 10 | floor)] | group_by(.) | map(length)
        | (max // 0) / ($c / 10) * 100 | round / 100' <<<"$stats")
    jq -r --arg name "$name" --arg drain "$drain" --arg peak "$peak" '
        "| \($name) | \(if $drain == "none" then "—" else ($drain | tonumber * 100 | round / 100 | tostring) + " s" end) | \(.calls_per_worker * 100 | round / 100) | \(.max_calls_per_worker) | \(.succeeded) | \([.give_ups | to_entries[] | select(.value > 0) | "\(.key) \(.value)"] | join(", ") | if . == "" then "—" else . end) | \(.give_ups_peak_100ms.share_of_attempts * 100 | round)% | \($peak) |"' <<<"$report"
}

echo "| strategy | drain | calls per client | max calls | succeeded | give-ups | give-ups in busiest 100 ms | peak after T |"
echo "|---|---|---|---|---|---|---|---|"
run 'full jitter (`--pushback off`)' --pushback off --
run 'full jitter + server pushback (adaptive)' --
run 'full jitter + server pushback, `--capacity-estimate 2`' --capacity-estimate 2 --
run 'full jitter + static pushback, `--capacity-estimate 2`' --pushback static --capacity-estimate 2 --
run 'full jitter + `--retry-budget grpc`' --pushback off -- --retry-budget grpc
run 'full jitter + `--retry-budget aws`' --pushback off -- --retry-budget aws
run "full jitter + \`--retry-budget grpc --budget-tokens $((4 * N))\`" --pushback off -- \
    --retry-budget grpc --budget-tokens $((4 * N))
run "full jitter + \`--retry-budget aws --budget-tokens $((20 * N))\`" --pushback off -- \
    --retry-budget aws --budget-tokens $((20 * N))
run 'full jitter + `--breaker 5`' --pushback off -- --breaker 5
run "full jitter + \`--breaker 5 --breaker-release $RELEASE\`" --pushback off -- \
    --breaker 5 --breaker-release "$RELEASE"
run 'full jitter + server pushback + `--retry-budget aws`' -- --retry-budget aws
