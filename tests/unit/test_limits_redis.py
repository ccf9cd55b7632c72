"""The Redis limit backend against a real redis-server: the Lua scripts agree with
counters.py to the last bit, admission is all or nothing, budgets are seeded per period and
not overwritten, settlements apply, keys expire, a flushed script cache is survived, and an
unreachable Redis follows the documented per-kind policy and is used again once it is back."""

from __future__ import annotations

import asyncio
import logging
import os
import random
import signal
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from redis.asyncio import Redis

from tests.support.redis import RedisServer, redis_server
from unigate.config import RedisDownConfig
from unigate.limits import redis_counters, redis_lease
from unigate.limits.backend import Demand, LocalCounters
from unigate.limits.counters import budget_take, rate_adjust, rate_take
from unigate.limits.redis_counters import SETTLE_DELAY, RedisCounters
from unigate.limits.redis_down import LimitsUnavailable
from unigate.limits.redis_lease import LEASE_SHARE
from unigate.limits.redis_script import BUDGET_IDLE, PREFIX
from unigate.observability.metrics import Metrics
from unigate.store.redis import connect

pytestmark = pytest.mark.services

T = TypeVar("T")


@pytest.fixture(scope="module")
def server() -> Iterator[RedisServer]:
    with redis_server() as srv:
        yield srv


def _run(server: RedisServer, tmp: Path, body: Callable[[RedisCounters, Redis], Awaitable[T]],
         policy: RedisDownConfig | None = None, metrics: Metrics | None = None,
         lease_share: float = LEASE_SHARE) -> T:  # fmt: skip
    async def main() -> T:
        redis = connect(server.url)
        await redis.flushdb()
        local = LocalCounters(tmp / "limits.bin")
        counters = RedisCounters(redis, local, metrics, lambda: policy or RedisDownConfig(), lease_share)
        try:
            return await body(counters, redis)
        finally:
            counters.close()
            await redis.aclose()

    return asyncio.run(main())


async def _held(redis: Redis, name: str) -> float:
    value = await redis.get(PREFIX + name)
    assert value is not None
    return float(value)


def test_lua_agrees_with_counters_py_to_the_last_bit(server: RedisServer, tmp_path: Path) -> None:
    rng = random.Random(15)

    async def body(c: RedisCounters, redis: Redis) -> int:
        tat, now, checked = 0.0, 1_700_000_000.123456, 0
        for _ in range(400):
            now += rng.choice([0.0, rng.random() * 0.7, rng.random() * 9])
            limit = rng.choice([7, 1000, 333.3, 90_000])
            amount = rng.choice([1, rng.randint(1, 400), rng.random() * 50])
            c.now = now
            want_tat, want_wait = rate_take(tat, limit, amount, now)
            refusal = await c.take([Demand("key:x:tpm", "rate", limit, amount)])
            if want_wait:
                assert refusal is not None and refusal.wait == want_wait  # exact, inf included
            else:
                assert refusal is None
            if want_tat > now:
                assert await _held(redis, "key:x:tpm") == want_tat  # exact, not approx
            tat = want_tat
            if rng.random() < 0.3:
                delta = rng.uniform(-300, 100)
                await c.adjust([Demand("key:x:tpm", "rate", limit, delta)])
                await c.flush()
                tat = rate_adjust(tat, limit, delta, now)
                if tat > now:
                    assert await _held(redis, "key:x:tpm") == tat
            checked += 1
        # A budget's spend: the same sums.
        spent = 0.0
        await c.seed("key:x:budget", 3, 0.0)
        for _ in range(200):
            amount = rng.random() * 0.013
            want, ok = budget_take(spent, 1.0, amount)
            refusal = await c.take([Demand("key:x:budget", "budget", 1.0, amount, 3)])
            assert (refusal is None) == ok
            assert await _held(redis, "key:x:budget:3") == want
            spent = want
        return checked

    # Every call in Redis (no leases): the script's own arithmetic is what is compared.
    assert _run(server, tmp_path, body, lease_share=0) == 400


def test_all_or_nothing_and_headers_view(server: RedisServer, tmp_path: Path) -> None:
    async def body(c: RedisCounters, redis: Redis) -> None:
        rpm = Demand("key:a:rpm", "rate", 10, 1)
        assert await c.take([rpm, Demand("key:a:tpm", "rate", 100, 80)]) is None
        refused = await c.take([rpm, Demand("key:a:tpm", "rate", 100, 30)])
        assert refused is not None and refused.refused == 1 and refused.wait > 0
        # The refused call took nothing from the request counter: 9 more pass, then none.
        assert [await c.take([rpm]) is None for _ in range(10)] == [True] * 9 + [False]
        # Headers come from the replies, without I/O: 10 requests taken = 60 s ahead.
        assert 59 < c.ahead("key:a:rpm") <= 60
        assert 47 < c.ahead("key:a:tpm") <= 48
        assert c.ahead("key:unknown:rpm") == 0.0
        # A request too large for the whole minute never fits.
        never = await c.take([Demand("key:b:tpm", "rate", 100, 101)])
        assert never is not None and never.wait == float("inf")

    _run(server, tmp_path, body)


def test_concurrent_calls_share_a_round_trip_each_all_or_nothing(server: RedisServer, tmp_path: Path) -> None:
    async def body(c: RedisCounters, redis: Redis) -> tuple[int, int]:
        sends = 0
        run = c._run

        async def counted(*args: Any) -> Any:
            nonlocal sends
            sends += 1
            return await run(*args)

        c._run = counted  # type: ignore[method-assign,assignment]
        calls = [[Demand("key:c:rpm", "rate", 20, 1), Demand("key:c:tpm", "rate", 1000, 40 + i % 3)]
                 for i in range(60)]  # fmt: skip
        results = await asyncio.gather(*(c.take(d) for d in calls))
        admitted = [d for d, r in zip(calls, results, strict=True) if r is None]
        # Every admission took both or neither: the counters hold exactly what was admitted.
        tokens = sum(d[1].amount for d in admitted)
        assert 0 < len(admitted) <= 20 and tokens <= 1000
        c.now = await _clock(redis)
        assert await c.take([Demand("key:c:tpm", "rate", 1000, 1000 - tokens + 0.5)]) is not None
        assert await c.take([Demand("key:c:tpm", "rate", 1000, 1000 - tokens - 0.5)]) is None
        return len(admitted), sends

    admitted, sends = _run(server, tmp_path, body)
    print(f"60 concurrent calls: {admitted} admitted in {sends} script calls")
    assert sends <= 3


def test_settlements_ride_on_the_next_admission(server: RedisServer, tmp_path: Path) -> None:
    async def body(c: RedisCounters, redis: Redis) -> None:
        sends = 0
        run = c._run

        async def counted(*args: Any) -> Any:
            nonlocal sends
            sends += 1
            return await run(*args)

        c._run = counted  # type: ignore[method-assign,assignment]
        rpm = Demand("key:r:rpm", "rate", 100, 1)
        assert await c.take([rpm]) is None
        await c.adjust([Demand("key:r:tpm", "rate", 100, 5)])
        assert await c.take([rpm]) is None
        assert sends == 2 and await redis.exists(PREFIX + "key:r:tpm") == 1, "no call of its own"
        # With no admission to ride on, a settlement goes alone, shortly.
        await c.adjust([Demand("key:r:tpm", "rate", 100, -5)])
        await asyncio.sleep(SETTLE_DELAY * 5)
        assert sends == 3 and await redis.exists(PREFIX + "key:r:tpm") == 0

    _run(server, tmp_path, body)


def test_a_cancelled_caller_gets_nothing_charged(server: RedisServer, tmp_path: Path) -> None:
    async def body(c: RedisCounters, redis: Redis) -> None:
        await c.seed("key:k:budget", 0, 0.0)
        call = asyncio.get_running_loop().create_task(c.take([Demand("key:k:budget", "budget", 1.0, 0.75)]))
        await asyncio.sleep(0)  # queued for the next script call
        call.cancel()
        await c.flush()
        assert await _held(redis, "key:k:budget:0") == 0.0

    _run(server, tmp_path, body)


def _down(c: RedisCounters) -> bool:
    return c.outage.down  # read afresh (an assertion above narrowed the attribute for mypy)


async def _clock(redis: Redis) -> float:
    seconds, micros = await redis.time()
    return seconds + micros / 1e6 + 1e-3


def test_budgets_are_seeded_per_period_and_settled(server: RedisServer, tmp_path: Path) -> None:
    async def body(c: RedisCounters, redis: Redis) -> None:
        today = Demand("key:b:budget", "budget", 1.0, 0.4, period=7)
        first = await c.take([Demand("key:b:rpm", "rate", 100, 1), today])
        assert first is not None and first.unseeded == [1]
        assert await redis.get(PREFIX + "key:b:rpm") is None, "an unseeded budget takes nothing"
        await c.seed("key:b:budget", 7, 0.5)
        await c.seed("key:b:budget", 7, 0.0)  # another replica's later seed does not overwrite
        assert await c.take([today]) is None  # 0.9 spent
        refused = await c.take([today])
        assert refused is not None and refused.refused == 0 and not refused.unseeded
        # The call used 0.1, not 0.4: the correction is queued, then sent without the caller.
        await c.adjust([Demand("key:b:budget", "budget", 1.0, -0.3, period=7)])
        await c.flush()
        assert await _held(redis, "key:b:budget:7") == pytest.approx(0.6)
        # The next period is a new counter, loaded from the records again.
        tomorrow = await c.take([Demand("key:b:budget", "budget", 1.0, 0.9, period=8)])
        assert tomorrow is not None and tomorrow.unseeded == [0]
        # A settlement for an unseeded period does not create (and so seed) its counter.
        await c.adjust([Demand("key:b:budget", "budget", 1.0, 0.2, period=8)])
        await c.flush()
        assert await redis.get(PREFIX + "key:b:budget:8") is None

    _run(server, tmp_path, body)


def test_keys_expire(server: RedisServer, tmp_path: Path) -> None:
    async def body(c: RedisCounters, redis: Redis) -> None:
        assert await c.take([Demand("key:e:rpm", "rate", 60, 3)]) is None  # 3 s ahead
        ttl = await redis.pttl(PREFIX + "key:e:rpm")
        assert 3000 < ttl <= 4000, "a rate counter lives until it is back to full, plus a second"
        await c.seed("key:e:budget", 1, 0.0)
        assert await c.take([Demand("key:e:budget", "budget", 5, 1, 1)]) is None
        assert BUDGET_IDLE - 5 < await redis.ttl(PREFIX + "key:e:budget:1") <= BUDGET_IDLE
        # Given back in full, a rate counter is full again: its key is deleted.
        await c.adjust([Demand("key:e:rpm", "rate", 60, -3)])
        await c.flush()
        assert await redis.exists(PREFIX + "key:e:rpm") == 0

    _run(server, tmp_path, body)


def test_script_cache_flushed(server: RedisServer, tmp_path: Path) -> None:
    async def body(c: RedisCounters, redis: Redis) -> None:
        rpm = Demand("key:s:rpm", "rate", 2, 1)
        assert await c.take([rpm]) is None
        await redis.script_flush()
        assert await c.take([rpm]) is None, "NOSCRIPT: EVAL runs it and caches it again"
        await redis.script_flush()
        await c.adjust([Demand("key:s:tpm", "rate", 100, 5)])
        await c.flush()
        assert await redis.exists(PREFIX + "key:s:tpm") == 1
        refused = await c.take([rpm])
        assert refused is not None and 29 < refused.wait <= 30
        assert not c.outage.down

    _run(server, tmp_path, body)


def test_redis_down_rates_local_budgets_closed_then_back(
    server: RedisServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    metrics = Metrics(tmp_path / "metrics")

    async def body(c: RedisCounters, redis: Redis) -> float:
        rpm = Demand("key:d:rpm", "rate", 5, 1)
        budget = Demand("key:d:budget", "budget", 1.0, 0.1, 0)
        await c.seed("key:d:budget", 0, 0.0)
        assert await c.take([Demand("key:d:rpm", "rate", 5, 1), budget]) is None
        server.stop()
        try:
            # Rates: decided on this node's counters, exactly (5 per minute, fresh there).
            results = [await c.take([Demand("key:d:rpm", "rate", 5, 1)]) is None for _ in range(7)]
            assert results == [True] * 5 + [False] * 2
            assert c.outage.down
            # Budgets: refused with 503, nothing charged.
            with pytest.raises(LimitsUnavailable) as refused:
                await c.take([rpm, budget])
            assert refused.value.status == 503 and refused.value.headers["retry-after"] == "2"
            assert c.ahead("key:d:rpm") > 0, "headers from the local counters while down"
        finally:
            server.start()
        started = time.monotonic()
        while _down(c):
            await asyncio.sleep(0.05)
            assert time.monotonic() - started < 10, "never came back"
        back = time.monotonic() - started
        # Redis restarted empty: its counters start full again and the budget reloads.
        again = await c.take([Demand("key:d:rpm", "rate", 5, 1), budget])
        assert again is not None and again.unseeded == [1]
        return back

    with caplog.at_level(logging.INFO, logger="unigate.limits"):
        back = _run(server, tmp_path, body, metrics=metrics)
    print(f"limits back on Redis {back:.2f} s after it answered again")
    assert back < 4
    lines = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "unigate.limits"]
    assert [level for level, _ in lines] == ["WARNING", "INFO"], lines
    assert "rate limits: decided per node, budgets: refused (503)" in lines[0][1]
    metrics.close()


def test_a_hung_redis_costs_a_call_at_most_the_command_timeout(server: RedisServer, tmp_path: Path) -> None:
    async def body(c: RedisCounters, redis: Redis) -> tuple[float, float]:
        assert await c.take([Demand("key:h:rpm", "rate", 5, 1)]) is None
        assert server.proc is not None
        os.kill(server.proc.pid, signal.SIGSTOP)  # accepts connections, answers nothing
        try:
            started = time.monotonic()
            calls = [c.take([Demand("key:h:rpm", "rate", 5, 1)]) for _ in range(20)]
            results = await asyncio.gather(*calls)
            hung = time.monotonic() - started
            assert c.outage.down and results.count(None) == 5  # the node's own 5 per minute
            started = time.monotonic()
            await c.take([Demand("key:h:rpm", "rate", 5, 1)])
            after = time.monotonic() - started
        finally:
            os.kill(server.proc.pid, signal.SIGCONT)
        return hung, after

    hung, after = _run(server, tmp_path, body)
    print(f"Redis hung: 20 concurrent calls decided in {hung:.2f} s, the next in {after * 1000:.2f} ms")
    assert hung < 0.5 + 1.0 and after < 0.05  # COMMAND_TIMEOUT, once, then no waiting at all


def test_redis_down_budgets_local_reload_and_settle_locally(server: RedisServer, tmp_path: Path) -> None:
    policy = RedisDownConfig(rates="closed", budgets="local")

    async def body(c: RedisCounters, redis: Redis) -> None:
        await c.seed("key:l:budget", 0, 0.0)
        server.stop()
        try:
            with pytest.raises(LimitsUnavailable):
                await c.take([Demand("key:l:rpm", "rate", 5, 1)])
            budget = Demand("key:l:budget", "budget", 1.0, 0.5, 0)
            # The local figure is reloaded from the records once per outage, even if seeded.
            first = await c.take([budget])
            assert first is not None and first.unseeded == [0]
            await c.seed("key:l:budget", 0, 0.2)
            assert await c.take([budget]) is None and budget.local
            assert await c.take([Demand("key:l:budget", "budget", 1.0, 0.5, 0)]) is not None
            # Its settlement goes to the counters that admitted it, not to Redis.
            await c.adjust([Demand("key:l:budget", "budget", 1.0, -0.4, 0, local=True)])
            assert await c.take([Demand("key:l:budget", "budget", 1.0, 0.5, 0)]) is None
        finally:
            server.start()

    _run(server, tmp_path, body, policy=policy)


def _count_sends(c: RedisCounters) -> list[int]:
    sends = [0]
    run = c._run

    async def counted(*args: Any) -> Any:
        sends[0] += 1
        return await run(*args)

    c._run = counted  # type: ignore[method-assign,assignment]
    return sends


def test_a_lease_decides_calls_in_memory_and_is_given_back(server: RedisServer, tmp_path: Path) -> None:
    async def body(c: RedisCounters, redis: Redis) -> None:
        sends = _count_sends(c)
        rpm = Demand("key:l:rpm", "rate", 1000, 1)  # a lease: 20 requests (0.06 s each)
        tpm = Demand("key:l:tpm", "rate", 100_000, 50)  # 2,000 tokens
        for _ in range(30):
            assert await c.take([rpm, tpm]) is None
        # The first call went to Redis with the lease requests; the refills went ahead of need.
        assert sends[0] <= 4, sends
        # Redis counts what was leased; the headers count only the calls this process admitted.
        assert await _held(redis, "key:l:rpm") - await _clock(redis) > 30 * 0.06
        assert 30 * 0.06 - 0.1 < c.ahead("key:l:rpm") <= 30 * 0.06
        assert 30 * 50 * 0.0006 - 0.1 < c.ahead("key:l:tpm") <= 30 * 50 * 0.0006
        # Given back (shutdown, or expiry): Redis holds exactly the admitted calls.
        await c.flush()
        assert 30 * 0.06 - 0.1 < await _held(redis, "key:l:rpm") - await _clock(redis) <= 30 * 0.06

    _run(server, tmp_path, body)


def test_an_idle_lease_expires_back_to_redis(
    server: RedisServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ttl = 0.2
    monkeypatch.setattr(redis_lease, "LEASE_TTL", ttl)
    monkeypatch.setattr(redis_counters, "LEASE_TTL", ttl)

    async def body(c: RedisCounters, redis: Redis) -> None:
        assert await c.take([Demand("key:i:rpm", "rate", 600, 1)]) is None  # 0.1 s a request
        assert await _held(redis, "key:i:rpm") - await _clock(redis) > 1.0, "12 more leased"
        await asyncio.sleep(ttl + 0.5)
        # Its 12 unspent requests went back: the counter holds the one call, now past.
        assert c.leases.held == {} and await redis.exists(PREFIX + "key:i:rpm") == 0

    _run(server, tmp_path, body)


def test_leases_across_processes_never_exceed_a_limit(server: RedisServer, tmp_path: Path) -> None:
    """Two processes on one key: leases make them admit in memory, yet the two together admit
    exactly the limit (the clock pinned: no refill), rates and budgets alike."""

    async def body(a: RedisCounters, redis: Redis) -> None:
        b = RedisCounters(redis, LocalCounters(tmp_path / "b.bin"), None, RedisDownConfig)
        try:
            a.now = b.now = await _clock(redis)
            await a.seed("key:x:budget", 0, 0.0)
            sends = _count_sends(a)
            rpm = Demand("key:x:rpm", "rate", 1000, 1)
            budget = Demand("key:x:budget", "budget", 5.0, 0.01, 0)  # 500 calls
            tpm = Demand("key:x:tpm", "rate", 400_000, 1000)  # 400 calls

            async def admitted(c: RedisCounters, demands: list[Demand], n: int = 300) -> int:
                got = 0
                for _ in range(n):
                    got += await c.take(demands) is None
                return got

            # Well under the limit, calls are decided in memory: a script call per lease.
            assert await admitted(a, [rpm, budget], 100) == 100
            assert sends[0] <= 100 / 10 + 2, f"{sends[0]} script calls for 100 calls"
            # Both at once, then what each holds unspent is given back and they go on.
            first = sum(await asyncio.gather(admitted(a, [rpm, budget]), admitted(b, [rpm, budget])))
            assert first <= 400
            await a.flush()
            await b.flush()
            total = 100 + first + await admitted(a, [rpm, budget]) + await admitted(b, [rpm, budget])
            assert total == 500, "the budget, exactly"
            tokens = await admitted(a, [rpm, tpm]) + await admitted(b, [rpm, tpm])
            await a.flush()
            await b.flush()
            tokens += await admitted(b, [rpm, tpm]) + await admitted(a, [rpm, tpm])
            # A rate counter is a time in epoch seconds (steps of 2.4e-7 s): a slice leased and
            # partly given back may round the last unit's fit away, never one unit more in.
            assert 399 <= tokens <= 400, "the token rate"
            got = await admitted(a, [rpm]) + await admitted(b, [rpm])
            await a.flush()
            await b.flush()
            got += await admitted(b, [rpm]) + await admitted(a, [rpm])
            assert 500 + tokens + got == 1000, "the request rate, exactly"
        finally:
            b.close()

    _run(server, tmp_path, body)
