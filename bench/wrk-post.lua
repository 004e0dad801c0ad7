-- wrk script for `npm run bench`: POST a unique JSON body per request, print one JSON summary line at the end.
-- wrk -s bench/wrk-post.lua URL -- <kind: wake|agent|bare> [token]
local kind, token = "wake", nil
local counter = 0

function init(args)
  kind = args[1] or "wake"
  token = args[2]
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  if token and token ~= "" then wrk.headers["Authorization"] = "Bearer " .. token end
end

function request()
  counter = counter + 1
  local body
  if kind == "agent" then
    body = '{"message":"bench message ' .. counter .. '","name":"Bench","wakeMode":"next-heartbeat"}'
  else
    body = '{"text":"bench event ' .. counter .. '","mode":"next-heartbeat"}'
  end
  return wrk.format(nil, nil, nil, body)
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"wrk":1,"requests":%d,"seconds":%.6f,"non2xx":%d,"errors":%d,"p50":%.3f,"p90":%.3f,"p99":%.3f,"max":%.3f,"mean":%.3f}\n',
    summary.requests, summary.duration / 1e6, e.status, e.connect + e.read + e.write + e.timeout,
    latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000, latency.max / 1000, latency.mean / 1000))
end
