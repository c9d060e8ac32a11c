-- wrk script for scripts/server-overhead.sh: counts the answers by status and
-- prints one line of figures: requests, seconds, latency p50/p99/p99.9 (us),
-- and the count of each status.
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  statuses = {}
end

function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
end

function done(summary, latency, requests)
  local total = {}
  for _, thread in ipairs(threads) do
    for status, n in pairs(thread:get("statuses")) do
      total[status] = (total[status] or 0) + n
    end
  end
  local line = string.format("requests %d seconds %.3f errors %d p50_us %d p99_us %d p999_us %d",
    summary.requests, summary.duration / 1e6,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    latency:percentile(50), latency:percentile(99), latency:percentile(99.9))
  for status, n in pairs(total) do
    line = line .. string.format(" s%d %d", status, n)
  end
  io.write(line .. "\n")
end
