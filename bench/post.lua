-- wrk script: POST a JSON chat body, print one parsable result line when done.
-- The body and the API key come from the environment (BENCH_BODY, BENCH_KEY).

wrk.method = "POST"
wrk.body = os.getenv("BENCH_BODY")
  or '{"model":"bench-chat","messages":[{"role":"user","content":"hello"}]}'
wrk.headers["Content-Type"] = "application/json"
local key = os.getenv("BENCH_KEY")
if key and key ~= "" then
  wrk.headers["Authorization"] = "Bearer " .. key
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "BENCH requests=%d duration_us=%d bytes=%d mean_us=%.1f p50_us=%d p90_us=%d p99_us=%d"
      .. " p999_us=%d max_us=%d err_connect=%d err_read=%d err_write=%d err_status=%d err_timeout=%d\n",
    summary.requests, summary.duration, summary.bytes, latency.mean,
    latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency:percentile(99.9), latency.max,
    e.connect, e.read, e.write, e.status, e.timeout))
end
