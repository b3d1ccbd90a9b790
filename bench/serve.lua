-- SPDX-License-Identifier: MIT
-- wrk script for bench/serve.sh: POSTs a trivial program to /v1/execute, checks every answer
-- (status 200 and the program's own output), and with a limit argument stops each thread after
-- that many responses so that a run is an exact number of requests.
wrk.method = "POST"
wrk.path = "/v1/execute"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"code": "print(6*7)", "language": "python"}'

local threads = {}

function setup(thread)
    table.insert(threads, thread)
end

function init(args)
    bad = 0
    responses = 0
    limit = tonumber(args[1]) or 0
end

function response(status, headers, body)
    responses = responses + 1
    if status ~= 200 or not string.find(body, '"stdout":"42\\n"', 1, true) then
        bad = bad + 1
    end
    if limit > 0 and responses >= limit then
        wrk.thread:stop()
    end
end

function done(summary, latency, requests)
    local n, b = 0, 0
    for _, t in ipairs(threads) do
        n = n + t:get("responses")
        b = b + t:get("bad")
    end
    io.write(string.format("BENCH responses=%d bad=%d socket_errors=%d p50_ms=%.2f p99_ms=%.2f\n",
        n, b, summary.errors.connect + summary.errors.read + summary.errors.write +
        summary.errors.timeout, latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
