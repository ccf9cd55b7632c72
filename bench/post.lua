-- wrk script: POST a JSON chat body, print one parsable result line when done (done.lua).
-- The body and the API key come from the environment (BENCH_BODY, BENCH_KEY).

wrk.method = "POST"
wrk.body = os.getenv("BENCH_BODY")
  or '{"model":"bench-chat","messages":[{"role":"user","content":"hello"}]}'
wrk.headers["Content-Type"] = "application/json"
local key = os.getenv("BENCH_KEY")
if key and key ~= "" then
  wrk.headers["Authorization"] = "Bearer " .. key
end

-- BENCH_DELAY_MS (paced.py): each connection waits that long before its next request, so the
-- load stays below what the machine can serve and latency is not queueing.
local pace = tonumber(os.getenv("BENCH_DELAY_MS") or "")
if pace then
  function delay()
    return pace
  end
end

-- done(): the shared BENCH line, from done.lua next to this script (wrk loads scripts with
-- luaL_loadfile, so the chunk name is "@" .. the path given to -s).
dofile((debug.getinfo(1, "S").source:match("^@(.*)/") or ".") .. "/done.lua")
