-- The done() of every benchmark wrk script (post.lua, tasks.lua), which load it with dofile:
-- print one parsable BENCH line that bench/wrk.py reads.

function done(summary, latency, _requests)
  local e = summary.errors
  io.write(string.format(
    "BENCH requests=%d duration_us=%d bytes=%d mean_us=%.1f p50_us=%d p90_us=%d p99_us=%d"
      .. " p999_us=%d max_us=%d err_connect=%d err_read=%d err_write=%d err_status=%d err_timeout=%d\n",
    summary.requests, summary.duration, summary.bytes, latency.mean,
    latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency:percentile(99.9), latency.max,
    e.connect, e.read, e.write, e.status, e.timeout))
end
