-- wrk script for the music task benchmark (bench/tasks.py). BENCH_MODE picks the load:
--   submit  POST /suno/submit/music with the body in BENCH_BODY
--   fetch   GET /suno/fetch/<id>, cycling over the ids in BENCH_IDS_FILE (one per line)
--   batch   POST /suno/fetch with {"ids": [BENCH_BATCH ids]}, cycling over the same ids
-- BENCH_KEY is the API key. done() (done.lua) prints one parsable BENCH line; the first
-- non-2xx answer of each thread is printed as a BENCH_ERR line (status and the start of the body).

local mode = os.getenv("BENCH_MODE") or "submit"
local key = os.getenv("BENCH_KEY") or ""
local requests_list = {}
local counter = 0
local reported = false
local thread_count = 0

local function headers(with_body)
  local h = { ["Authorization"] = "Bearer " .. key }
  if with_body then
    h["Content-Type"] = "application/json"
  end
  return h
end

local function read_ids()
  local ids = {}
  local path = os.getenv("BENCH_IDS_FILE")
  if not path then
    error("BENCH_IDS_FILE is not set")
  end
  for line in io.lines(path) do
    if line ~= "" then
      ids[#ids + 1] = line
    end
  end
  if #ids == 0 then
    error("no ids in " .. path)
  end
  return ids
end

-- Runs in the main Lua state once per thread: give each thread its own starting point.
function setup(thread)
  thread:set("offset", thread_count * 7919)
  thread_count = thread_count + 1
end

function init(args)
  if mode == "submit" then
    local body = os.getenv("BENCH_BODY")
    requests_list[1] = wrk.format("POST", "/suno/submit/music", headers(true), body)
  elseif mode == "fetch" then
    for _, id in ipairs(read_ids()) do
      requests_list[#requests_list + 1] = wrk.format("GET", "/suno/fetch/" .. id, headers(false))
    end
  elseif mode == "batch" then
    local ids = read_ids()
    local size = tonumber(os.getenv("BENCH_BATCH") or "10")
    for first = 1, #ids - size + 1, size do
      local quoted = {}
      for i = first, first + size - 1 do
        quoted[#quoted + 1] = '"' .. ids[i] .. '"'
      end
      local body = '{"ids":[' .. table.concat(quoted, ",") .. "]}"
      requests_list[#requests_list + 1] = wrk.format("POST", "/suno/fetch", headers(true), body)
    end
  else
    error("unknown BENCH_MODE " .. mode)
  end
  counter = tonumber(offset) or 0
end

function request()
  local r = requests_list[(counter % #requests_list) + 1]
  counter = counter + 1
  return r
end

function response(status, _headers, body)
  if status >= 300 and not reported then
    reported = true
    local text = (body or ""):sub(1, 300):gsub("[\r\n]", " ")
    io.write(string.format("BENCH_ERR status=%d body=%s\n", status, text))
  end
end

-- done(): the shared BENCH line, from done.lua next to this script (wrk loads scripts with
-- luaL_loadfile, so the chunk name is "@" .. the path given to -s).
dofile((debug.getinfo(1, "S").source:match("^@(.*)/") or ".") .. "/done.lua")
