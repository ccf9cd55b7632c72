"""The Lua script the Redis limit backend runs, and how its arguments and replies are written:
it applies settlements, then admits calls' demands, each call all or nothing. One call is one
round trip, atomic in Redis (a script runs alone), so every worker of every replica sees one
counter. A process sends the admissions it has waiting, and the settlements it has queued,
together in one call, so under load the round trip (and its system calls, the larger part of
its cost) is shared, and a settlement costs no round trip of its own.

The arithmetic is `counters.py`'s, line for line, on the same IEEE doubles: Lua 5.1 numbers
are doubles, arguments are written with `repr` (the shortest string that reads back as the
same double) and values are stored and returned with `%.17g` (which also reads back exactly),
so the two backends agree to the last bit. Replies are strings because Redis truncates a Lua
number to an integer.

Clock: the script reads Redis's own `TIME`, not the caller's. Every replica then measures
every counter against one clock, so replicas whose clocks drift apart cannot see a counter as
further behind than it is (and admit more) or further ahead (and refuse). Redis 5+ replicates
a script by its writes, which is what makes `TIME` allowed in a writing script. A caller may
pass its own `now` instead (the tests do, to compare with `counters.py` at a known instant).
Budget periods stay on the caller's clock: they must match the timestamps of the usage
records the budgets are seeded from, which the callers write.

Storage: a rate counter is one string key holding its arrival time, expiring when the counter
is back to full (a missing key and a full counter are the same thing), so idle keys cost
nothing. A budget counter is one key per (name, period) holding the spend; its existence means
"seeded". It expires after `BUDGET_IDLE` seconds without a call, after which the next call
loads the spend from the durable records again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from unigate.limits.backend import Demand
from unigate.limits.redis_lease import LEASE_CAP

PREFIX = "unigate:limit:"
ScriptArgs = tuple[list[str], list[str]]  # KEYS, ARGV
BUDGET_IDLE = 3600  # seconds: an idle budget counter is reloaded from the database after this

# The clock, and how numbers go back to Python.
_COMMON = """
local now
if ARGV[1] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) + tonumber(t[2]) / 1000000
else
  now = tonumber(ARGV[1])
end
local WINDOW = 60.0
local EPS = 1e-9
local function fmt(x) return string.format('%.17g', x) end
local function keep_rate(key, tat)
  if tat > now then
    redis.call('SET', key, fmt(tat), 'PX', math.ceil((tat - now) * 1000) + 1000)
  else
    redis.call('DEL', key)
  end
end
"""

# One script does both jobs, so the corrections waiting in a process ride on its next
# admission's round trip (an idle process sends them alone, with no admission).
#
# KEYS: the changes' counters, then every admission's demands' counters, in order.
# ARGV: now ('' = Redis TIME); the number of changes, and per change: kind ('r' or 'b'),
# limit, amount; then per admission its number of demands and per demand the same three.
#
# Changes come first. A rate moves by `amount` units, never below now (counters.rate_adjust);
# a budget moves only if it is seeded (a missing one is loaded from the records, which already
# hold the call's real cost), never below 0, keeping its expiry.
#
# Admissions follow (the calls one process has waiting: one round trip for them all), each all
# or nothing, in order, each seeing the writes of those before it.
#
# A lease request (`redis_lease.py`) is an admission of one demand of kind 'R' or 'B': the same
# take, granted only while the counter stays at most LEASE_CAP of its limit used with it.
#
# Reply: {{now, value per change ('' = untouched)}, then one per admission}, an admission's
# being {'ok', now, value per demand ('' = not written)}; {'rate', index, wait, now, held
# arrival time}; {'budget', index, now}; or {'unseeded', now, index, ...} (0-based indexes).
SCRIPT = (
    _COMMON
    + """
local function change(key, kind, limit, amount)
  local held = redis.call('GET', key)
  if kind == 'r' then
    local tat = tonumber(held) or 0.0
    local moved = now
    if tat > now then moved = tat end
    moved = moved + amount * (WINDOW / limit)
    if moved < now then moved = now end
    keep_rate(key, moved)
    return fmt(moved)
  elseif held ~= false then
    local spent = tonumber(held) + amount
    if spent < 0 then spent = 0.0 end
    redis.call('SET', key, fmt(spent), 'KEEPTTL')
    return fmt(spent)
  end
  return ''
end

local function take(k0, a0, n)
  local values = {}
  local unseeded = {}
  for i = 1, n do
    local a = a0 + 3 * (i - 1)
    local kind, limit, amount = ARGV[a + 1], tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
    local held = redis.call('GET', KEYS[k0 + i])
    local cap = 1.0
    if kind == 'R' or kind == 'B' then cap = LEASE_CAP end
    if kind == 'r' or kind == 'R' then
      local tat = tonumber(held) or 0.0
      local interval = WINDOW / limit
      local base = now
      if tat > now then base = tat end
      local new_tat = base + amount * interval
      if new_tat - now <= WINDOW * cap + EPS then
        values[i] = new_tat
      elseif amount * interval > WINDOW + EPS then
        return {'rate', tostring(i - 1), 'inf', fmt(now), fmt(tat)}
      else
        return {'rate', tostring(i - 1), fmt(new_tat - WINDOW - now), fmt(now), fmt(tat)}
      end
    elseif held == false then
      unseeded[#unseeded + 1] = tostring(i - 1)
    else
      local spent = tonumber(held)
      if spent + amount <= limit * cap + 1e-12 then
        values[i] = spent + amount
      else
        return {'budget', tostring(i - 1), fmt(now)}
      end
    end
  end
  if #unseeded > 0 then
    return {'unseeded', fmt(now), unpack(unseeded)}
  end
  local out = {'ok', fmt(now)}
  for i = 1, n do
    local v = values[i]
    if v == nil then
      out[i + 2] = ''
    elseif ARGV[a0 + 3 * (i - 1) + 1] == 'r' or ARGV[a0 + 3 * (i - 1) + 1] == 'R' then
      keep_rate(KEYS[k0 + i], v)
      out[i + 2] = fmt(v)
    else
      redis.call('SET', KEYS[k0 + i], fmt(v), 'PX', BUDGET_IDLE_MS)
      out[i + 2] = fmt(v)
    end
  end
  return out
end

local changes = tonumber(ARGV[2])
local changed = {fmt(now)}
for i = 1, changes do
  local a = 2 + 3 * (i - 1)
  changed[i + 1] = change(KEYS[i], ARGV[a + 1], tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]))
end
local replies = {changed}
local k, a = changes, 3 + 3 * changes
while a <= #ARGV do
  local n = tonumber(ARGV[a])
  replies[#replies + 1] = take(k, a, n)
  k = k + n
  a = a + 1 + 3 * n
end
return replies
""".replace("BUDGET_IDLE_MS", str(BUDGET_IDLE * 1000)).replace("LEASE_CAP", repr(LEASE_CAP))
)

SCRIPT_SHA = hashlib.sha1(SCRIPT.encode()).hexdigest()


def redis_key(demand: Demand) -> str:
    """The Redis key of a demand's counter: a budget has one per period."""
    if demand.kind == "rate":
        return PREFIX + demand.name
    return f"{PREFIX}{demand.name}:{demand.period}"


def script_args(
    changes: Sequence[Demand],
    admissions: Sequence[Sequence[Demand]],
    now: float | None = None,
    leases: Sequence[Demand] = (),
) -> ScriptArgs:
    """KEYS and ARGV for `SCRIPT`: the lease requests are admissions after the calls'."""
    keys = [redis_key(d) for d in changes]
    keys += [redis_key(d) for demands in admissions for d in demands]
    keys += [redis_key(d) for d in leases]
    args = ["" if now is None else repr(now), str(len(changes))]
    for d in changes:
        args += ("r" if d.kind == "rate" else "b", repr(float(d.limit)), repr(float(d.amount)))
    for demands in admissions:
        args.append(str(len(demands)))
        for d in demands:
            args += ("r" if d.kind == "rate" else "b", repr(float(d.limit)), repr(float(d.amount)))
    for d in leases:
        args += ("1", "R" if d.kind == "rate" else "B", repr(float(d.limit)), repr(float(d.amount)))
    return keys, args
