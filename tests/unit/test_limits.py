"""The limit arithmetic and the shared counter table: exact at the boundary, honest waits,
all-or-nothing admission, corrections, budgets per period, and two processes sharing one
table without letting more through than the limit."""

from __future__ import annotations

import datetime as dt
import multiprocessing
from pathlib import Path

import pytest

from unigate.limits.backend import Demand, LocalCounters
from unigate.limits.counters import (
    budget_take,
    format_reset,
    rate_adjust,
    rate_ahead,
    rate_remaining,
    rate_take,
)
from unigate.limits.estimate import Prices, TextTokens, count_tokens, output_cap, prompt_tokens
from unigate.limits.service import period_of


def test_rate_allows_exactly_the_limit_then_says_when() -> None:
    tat, now = 0.0, 1000.0
    for i in range(5):
        tat, wait = rate_take(tat, 5, 1, now)
        assert wait == 0.0 and rate_remaining(5, rate_ahead(tat, now)) == 4 - i
    refused_tat, wait = rate_take(tat, 5, 1, now)
    assert refused_tat == tat
    assert wait == pytest.approx(12.0)  # 60 s / 5
    # Waiting exactly the advertised time is enough.
    assert rate_take(tat, 5, 1, now + wait)[1] == 0.0
    assert rate_take(tat, 5, 1, now + wait - 0.01)[1] > 0


def test_rate_tokens_and_corrections() -> None:
    now = 50.0
    tat, wait = rate_take(0.0, 1000, 600, now)
    assert wait == 0.0 and rate_remaining(1000, rate_ahead(tat, now)) == 400
    _, wait = rate_take(tat, 1000, 500, now)
    assert wait == pytest.approx(6.0)
    # The answer used 100 tokens, not the 600 estimated: 500 come back.
    tat = rate_adjust(tat, 1000, -500, now)
    assert rate_take(tat, 1000, 500, now)[1] == 0.0
    # More than the whole allowance can never pass.
    assert rate_take(0.0, 1000, 1001, now)[1] == float("inf")


def test_budget_and_periods() -> None:
    assert budget_take(0.9, 1.0, 0.1) == (pytest.approx(1.0), True)
    assert budget_take(0.95, 1.0, 0.1) == (0.95, False)
    day, start = period_of("daily", 86400 * 3 + 5)
    assert (day, start) == (3, 86400 * 3)
    month, start = period_of("monthly", 1_700_000_000)  # 2023-11-14
    assert month == 2023 * 12 + 10 and start == 1698796800
    assert period_of("total", 123.0) == (0, 0.0)


def test_long_texts_counts_are_remembered_within_their_bound() -> None:
    """An agent resends its conversation: `TextTokens` gives a long text's count as counting
    gives it, from memory the second time, keeps at most `max_chars` characters (the oldest go
    first); `prompt_tokens` counts short texts without it."""
    long_texts = [f"Step {i}: read file_{i}.py, fix the bug, run the tests. " * 8 for i in range(3)]
    texts = TextTokens(max_chars=2 * len(long_texts[0]) + 10)
    body = {"messages": [{"role": "user", "content": t} for t in long_texts] + [{"content": "hi there"}]}
    assert prompt_tokens(body, texts) == prompt_tokens(body) == sum(map(count_tokens, long_texts)) + 2
    kept = texts._counts
    # The oldest went to make room; "hi there" never came.
    assert [t for t in long_texts if kept.get(t) is not None] == long_texts[1:]
    assert kept.held == (2, 2 * len(long_texts[0]))
    remembered = TextTokens()
    remembered._counts.put(long_texts[2], 999, long_texts[2])  # a remembered count is what the next call gets
    assert remembered(long_texts[2]) == 999
    assert prompt_tokens({"a": "hi there", "b": ["hi there"]}, texts) == 4 and kept.get("hi there") is None
    assert TextTokens(max_chars=10)(long_texts[0]) == count_tokens(long_texts[0])  # too long to keep


def test_reset_format() -> None:
    assert format_reset(0.02) == b"20ms"
    assert format_reset(1.5) == b"1.5s"
    assert format_reset(360) == b"6m0s"


def test_estimates() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "Hello there, world!"}], "max_tokens": 7}
    assert prompt_tokens(body) == 5
    assert output_cap(body) == 7
    assert output_cap({"generationConfig": {"maxOutputTokens": 9}}) == 9
    assert output_cap({"max_tokens": True}) is None
    assert Prices(2.0, 8.0, 0.01).cost(1_000_000, 500_000) == pytest.approx(6.01)


def test_the_token_count_is_the_regexs_count_without_the_regex() -> None:
    """`count_tokens` counts ASCII text by its character classes, one word by `isalnum`, the
    rest by the regex: every string counts as many tokens as the regex finds in it."""
    import random

    from unigate.limits.estimate import _TOKEN, count_tokens

    pairs = [chr(a) + chr(b) for a in range(128) for b in range(128)]
    draw = random.Random(7)
    alphabet = [chr(c) for c in range(128)] + list("é中ß٣_\u00a0\u2028\u200b\U0001f600")
    mixed = ["".join(draw.choice(alphabet) for _ in range(draw.randint(0, 16))) for _ in range(20_000)]
    prose = ["Hello there, world!", "snake_case x2 (42%) it's", "\x1c\x1fa\x0bb", "naïve café", "٣٤ 中文"]
    for text in pairs + mixed + prose:
        assert count_tokens(text) == len(_TOKEN.findall(text)), repr(text)


def _admitted(counters: LocalCounters, demands: list[Demand], now: float = 10.0) -> bool:
    return counters.take_now(demands, now) is None


def test_all_or_nothing(tmp_path: Path) -> None:
    counters = LocalCounters(tmp_path / "limits.bin")
    rpm = Demand("key:a:rpm", "rate", 10, 1)
    tpm = Demand("key:a:tpm", "rate", 100, 80)
    assert _admitted(counters, [rpm, tpm])
    refused = counters.take_now([rpm, Demand("key:a:tpm", "rate", 100, 30)], 10.0)
    assert refused is not None and refused.refused == 1 and refused.wait > 0
    # The refused call took nothing from the request counter either: 9 more pass.
    for _ in range(9):
        assert _admitted(counters, [rpm])
    assert not _admitted(counters, [rpm])
    assert counters.ahead("key:a:rpm") == 0.0  # read at the real time: long since back to full
    assert counters.ahead("key:unknown:rpm") == 0.0


def test_budget_needs_a_seed_then_rolls_over(tmp_path: Path) -> None:
    counters = LocalCounters(tmp_path / "limits.bin")
    today = Demand("key:b:budget", "budget", 1.0, 0.4, period=7)
    first = counters.take_now([today], 0.0)
    assert first is not None and first.unseeded == [0]
    import asyncio

    asyncio.run(counters.seed("key:b:budget", 7, 0.5))
    assert _admitted(counters, [today], 0.0)  # 0.9 spent
    assert not _admitted(counters, [today], 0.0)
    counters.adjust_now([Demand("key:b:budget", "budget", 1.0, -0.4, period=7)], 0.0)
    assert _admitted(counters, [today], 0.0)
    # The next day starts empty without asking the database.
    tomorrow = Demand("key:b:budget", "budget", 1.0, 0.9, period=8)
    assert _admitted(counters, [tomorrow], 0.0)
    # A settlement for yesterday no longer changes today's figure.
    counters.adjust_now([Demand("key:b:budget", "budget", 1.0, -0.9, period=7)], 0.0)
    assert not _admitted(counters, [Demand("key:b:budget", "budget", 1.0, 0.2, period=8)], 0.0)


def _hammer(path: str, n: int, out: multiprocessing.Queue[int]) -> None:
    counters = LocalCounters(Path(path), shared=True)
    demand = [Demand("key:c:rpm", "rate", 50, 1)]
    out.put(sum(_admitted(counters, demand, 100.0) for _ in range(n)))


def test_processes_share_one_limit(tmp_path: Path) -> None:
    path = tmp_path / "limits.bin"
    LocalCounters(path).close()
    ctx = multiprocessing.get_context("spawn")
    out: multiprocessing.Queue[int] = ctx.Queue()
    procs = [ctx.Process(target=_hammer, args=(str(path), 200, out)) for _ in range(3)]
    for p in procs:
        p.start()
    total = sum(out.get(timeout=60) for _ in procs)
    for p in procs:
        p.join(timeout=60)
    assert total == 50


def test_a_keys_plan_follows_its_budget_period_and_its_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The service keeps each key's counter names, header function and budget period between
    calls: a monthly budget still starts afresh with the next month, and a key whose limits
    changed (a new `Principal`) is counted and shown with its new figures."""
    import asyncio

    from unigate.auth.principal import Principal
    from unigate.errors import BudgetExceeded
    from unigate.limits.service import Limits

    now = [dt.datetime(2026, 1, 31, 23, 59, tzinfo=dt.UTC).timestamp()]
    monkeypatch.setattr("time.time", lambda: now[0])

    async def spent_so_far(key_id: str, start: float) -> float:
        return 0.0

    def key(rpm: int, budget: float) -> Principal:
        return Principal("key_p", "n", "h", (), (), rpm, budget, None, None, 0.0, "whsec_x",
                         tpm=1000, budget_period="monthly")  # fmt: skip

    limits = Limits(LocalCounters(tmp_path / "limits.bin", shared=False), spent_so_far)
    first = key(10, 1.0)

    async def scenario() -> None:
        await limits.admit(first, None, 5, 0.8)
        with pytest.raises(BudgetExceeded):
            await limits.admit(first, None, 5, 0.8)
        plan = limits.plan(first)
        assert plan is limits.plan(first)  # one per key
        shown = dict(plan.headers())
        # The joined lines a `unigate.response` carries say the same.
        assert plan.lines() == (b"".join(b"%s: %s\r\n" % pair for pair in plan.headers()), 6)
        assert shown[b"x-ratelimit-limit-requests"] == b"10"
        assert shown[b"x-ratelimit-remaining-requests"] == b"9"  # the refused call took nothing
        assert shown[b"x-ratelimit-remaining-tokens"] == b"995"
        now[0] += 120  # February: the January spend no longer counts
        await limits.admit(first, None, 5, 0.8)
        changed = key(100, 1.0)
        assert dict(limits.plan(changed).headers())[b"x-ratelimit-limit-requests"] == b"100"

    asyncio.run(scenario())


@pytest.mark.parametrize(("rpm", "tpm"), [(10, None), (None, 1000), (10, 1000), (None, None)])
def test_the_header_lines_carry_each_limits_figures(tmp_path: Path, rpm: int | None, tpm: int | None) -> None:
    """`lines` (the block a `unigate.response` carries) holds each rate limit the key has, with
    its figures as they stand: full before any call, then what two calls took (the reset in
    OpenAI's format); `headers` (the pairs other servers get) says the same."""
    import asyncio

    from unigate.auth.principal import Principal
    from unigate.limits.service import Limits

    async def nothing_spent(key_id: str, start: float) -> float:
        return 0.0

    key = Principal("key_l", "n", "h", (), (), rpm, None, None, None, 0.0, "whsec_x", tpm=tpm)
    limits = Limits(LocalCounters(tmp_path / "limits.bin", shared=False), nothing_spent)
    plan = limits.plan(key)

    def expected(requests: tuple[int, bytes], tokens: tuple[int, bytes]) -> bytes:
        block = b""
        if rpm is not None:
            block += b"x-ratelimit-limit-requests: 10\r\nx-ratelimit-remaining-requests: %d\r\n" % requests[0]
            block += b"x-ratelimit-reset-requests: %s\r\n" % requests[1]
        if tpm is not None:
            block += b"x-ratelimit-limit-tokens: 1000\r\nx-ratelimit-remaining-tokens: %d\r\n" % tokens[0]
            block += b"x-ratelimit-reset-tokens: %s\r\n" % tokens[1]
        return block

    async def scenario() -> None:
        count = 3 * ((rpm is not None) + (tpm is not None))
        assert plan.lines() == (expected((10, b"0ms"), (1000, b"0ms")), count)  # nothing taken yet
        for tokens in (7, 300):
            await limits.admit(key, None, tokens, 0.0)
        # Two requests of ten a minute: 12 s ahead; 307 tokens of 1,000: 18.4 s ahead.
        block, shown = plan.lines()
        assert (block, shown) == (expected((8, b"12s"), (693, b"18s")), count)
        assert b"".join(b"%s: %s\r\n" % pair for pair in plan.headers()) == block

    asyncio.run(scenario())


def test_a_rate_limits_figures_round_as_openai_shows_them() -> None:
    """`fill`: a counter back to full (or within half a millisecond of it) resets in 0ms; one
    ahead by more rounds to the millisecond; one a window or more ahead has nothing left."""
    from unigate.limits.service import _RateHeaders

    rate = _RateHeaders((b"l", b"r", b"s"), 600)
    now = 1_000_000.0
    assert rate.fill(now - 5.0, now) == (600, b"0ms")
    assert rate.fill(now + 0.0004, now) == (599, b"0ms")
    assert rate.fill(now + 0.0006, now) == (599, b"1ms")
    assert rate.fill(now + 1.25, now) == (587, b"1.25s")
    assert rate.fill(now + 61.0, now) == (0, b"1m1s")
    assert rate.template % rate.fill(now + 30.0, now) == b"l: 600\r\nr: 300\r\ns: 30s\r\n"


class _Generic:
    """The node's counters behind the plain `Counters` methods only: `Limits` then decides
    every call demand by demand, the path Redis and model limits take."""

    def __init__(self, counters: LocalCounters) -> None:
        self.table = counters.table
        self._counters = counters

    async def take(self, demands: list[Demand]) -> object:
        return await self._counters.take(demands)

    async def adjust(self, changes: list[Demand]) -> None:
        await self._counters.adjust(changes)

    async def seed(self, name: str, period: int, spent: float) -> None:
        await self._counters.seed(name, period, spent)

    def ahead(self, name: str) -> float:
        return self._counters.ahead(name)


@pytest.mark.parametrize("shared", [False, True])
def test_a_keys_own_limits_decided_in_one_call_count_as_demand_by_demand(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shared: bool
) -> None:
    """A key's rpm, tpm and budget on the node's table are admitted and settled in one call
    each (`admit_now`, `settle_now`, no await); the counters, headers and refusals that leaves
    are those of the demand-by-demand path, through refusals, a budget loaded at its first
    use, settlements up and down and a new budget period."""
    import asyncio

    from unigate.auth.principal import Principal
    from unigate.errors import BudgetExceeded, RateLimited
    from unigate.limits.service import PENDING, Limits

    now = [dt.datetime(2026, 1, 31, 23, 58, tzinfo=dt.UTC).timestamp()]
    monkeypatch.setattr("time.time", lambda: now[0])

    async def spent_so_far(key_id: str, start: float) -> float:
        return 0.25

    key = Principal("key_q", "n", "h", (), (), 5, 1.0, None, None, 0.0, "whsec_x",
                    tpm=100, budget_period="monthly")  # fmt: skip
    fast = Limits(LocalCounters(tmp_path / "fast.bin", shared=shared), spent_so_far)
    generic = Limits(_Generic(LocalCounters(tmp_path / "generic.bin", shared=shared)), spent_so_far)  # type: ignore[arg-type]
    names = ("key:key_q:rpm", "key:key_q:tpm", "key:key_q:budget")

    def state(limits: Limits) -> list[object]:
        table = limits.counters.table  # type: ignore[attr-defined]
        return [table.read(table.offset(name)) for name in names]

    async def both(tokens: float, cost: float, used: tuple[float, float] | None) -> str:
        outcomes = []
        for limits in (fast, generic):
            try:
                ticket = await limits.admit(key, None, tokens, cost)
            except (RateLimited, BudgetExceeded) as exc:
                outcomes.append(f"{type(exc).__name__}: {exc.message} {exc.headers}")
                continue
            if used is not None:
                await limits.settle(ticket, *used)
            outcomes.append("admitted")
        assert outcomes[0] == outcomes[1]
        assert state(fast) == state(generic)
        assert fast.plan(key).headers() == generic.plan(key).headers()
        return outcomes[0]

    async def scenario() -> None:
        assert await both(10, 0.1, (30, 0.2)) == "admitted"  # the budget loaded at its first use
        assert await both(20, 0.1, (5, 0.05)) == "admitted"
        assert (await both(90, 0.1, None)).startswith("RateLimited: Rate limit of 100 tokens")
        assert await both(10, 0.5, (10, 0.3)) == "admitted"  # 0.8 of 1.0 spent
        assert (await both(1, 0.3, (1, 0.3))).startswith("BudgetExceeded")
        assert await both(1, 0.0, (0, 0.0)) == "admitted"
        assert await both(1, 0.0, (0, 0.0)) == "admitted"  # the key's fifth request this minute
        assert (await both(1, 0.0, (0, 0.0))).startswith("RateLimited: Rate limit of 5 requests")
        now[0] += 120  # February: a new budget period, and every rate back to full
        assert await both(10, 0.9, (12, 0.7)) == "admitted"
        # Once the budget is loaded, an admission is decided without awaiting.
        ticket = fast.admit_now(key, None, 1, 0.01)
        assert ticket is not PENDING and ticket is not None and ticket.slots is not None
        assert fast.settle_now(ticket, 2, 0.02)
        await generic.settle(await generic.admit(key, None, 1, 0.01), 2, 0.02)
        assert state(fast) == state(generic)
        assert generic.admit_now(key, None, 1, 0.01) is PENDING  # not the node's own table

    asyncio.run(scenario())


def test_a_burst_of_first_budgeted_calls_loads_the_spend_once(tmp_path: Path) -> None:
    """The calls that find a key's budget not loaded yet wait for one read of its spend, and
    all of them are then judged against it (0.3 spent of 1.0: seven calls of 0.1 pass)."""
    import asyncio

    from unigate.auth.principal import Principal
    from unigate.errors import BudgetExceeded
    from unigate.limits.service import Limits

    reads: list[str] = []
    release = asyncio.Event()

    async def spent_so_far(key_id: str, start: float) -> float:
        reads.append(key_id)
        await release.wait()
        return 0.3

    key = Principal("key_b", "n", "h", (), (), None, 1.0, None, None, 0.0, "whsec_x")
    limits = Limits(LocalCounters(tmp_path / "limits.bin", shared=False), spent_so_far)

    async def scenario() -> list[object]:
        calls = [asyncio.ensure_future(limits.admit(key, None, 0, 0.1)) for _ in range(10)]
        while not reads:
            await asyncio.sleep(0)
        release.set()
        return await asyncio.gather(*calls, return_exceptions=True)

    results = asyncio.run(scenario())
    assert reads == ["key_b"]
    assert sum(isinstance(r, BudgetExceeded) for r in results) == 3
