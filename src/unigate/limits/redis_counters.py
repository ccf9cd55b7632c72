"""Limits and budgets shared by every worker of every replica, in Redis (`UNIGATE_REDIS_URL`).

    counters = RedisCounters(redis, LocalCounters(...), metrics, lambda: config.limits.redis_down)

A call whose every counter has a lease (`redis_lease.py`: a slice of the limit this process
took from Redis beforehand) is decided in memory, with no round trip; leases are refilled
ahead of need in the background. Any other admission is one EVALSHA of `redis_script.SCRIPT`
(EVAL when Redis answers NOSCRIPT, e.g. after a restart, which also caches it again): one
round trip, atomic across replicas. The
admissions a process has waiting go in the same call, and so do the settlements it has queued:
a settlement never makes its request wait, and under load costs no round trip of its own (an
idle process sends its queued settlements alone after `SETTLE_DELAY`). `ahead` (for the
`x-ratelimit-*` headers) does no I/O: it reads this process's view of each rate counter,
refreshed by every reply, so a response's headers show the counter right after its own
admission (and a settlement as soon as it is queued).

When Redis cannot be reached (`redis_down.py`), each kind of limit follows its configured
policy: `local` decides on this node's own counters (the same ones a single node uses), or
`closed` refuses with 503. A background probe notices Redis coming back and the next call
uses it again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, RedisError

from unigate.limits.backend import Demand, LocalCounters, Refusal
from unigate.limits.counters import rate_adjust, rate_ahead, rate_take
from unigate.limits.redis_down import Outage, RedisDownPolicy
from unigate.limits.redis_lease import LEASE_SHARE, LEASE_TTL, Leases
from unigate.limits.redis_script import BUDGET_IDLE, PREFIX, SCRIPT, SCRIPT_SHA, ScriptArgs, script_args

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from unigate.observability.metrics import Metrics

log = logging.getLogger("unigate.limits")

MAX_PENDING = 10_000  # settlements waiting for Redis; past this, new ones are dropped
SETTLE_DELAY = 0.02  # seconds a settlement waits for an admission to ride with
_BATCH = 500  # admissions, and settlements, per script call
_VIEW_MAX = 100_000  # rate counters this process remembers for headers
_UNREACHABLE = (RedisError, OSError, asyncio.TimeoutError)

Waiter = tuple[Sequence[Demand], "asyncio.Future[Refusal | None]"]


class _Unreachable(Exception):
    """Redis failed while a call waited for its batch: the call decides locally."""


class RedisCounters:
    def __init__(
        self,
        redis: Redis,
        fallback: LocalCounters,
        metrics: Metrics | None,
        policy: Callable[[], RedisDownPolicy],
        lease_share: float = LEASE_SHARE,
    ) -> None:
        """`lease_share`: the share of a limit one lease holds (`redis_lease.py`); 0: every
        call is decided in Redis."""
        self.redis = redis
        self.fallback = fallback
        self.outage = Outage(redis.ping, policy, metrics, self._recovered)
        self.now: float | None = None  # tests pin the script's clock; None: Redis's TIME
        # Rate counter name -> its arrival time on this process's clock (time.time()):
        # Redis's value shifted by (local now - Redis now) at the reply.
        self._view: dict[str, float] = {}
        self._waiting: list[Waiter] = []  # admissions for the next script call
        self._sender: asyncio.Task[None] | None = None  # the call under way
        self._pending: list[Demand] = []  # settlements for the next script call
        self._dropped = 0
        self._settle_timer: asyncio.TimerHandle | None = None
        self.leases = Leases(lease_share, self._queue)
        self._expiry: asyncio.TimerHandle | None = None

    # -- admission ---------------------------------------------------------------------

    async def take(self, demands: Sequence[Demand]) -> Refusal | None:
        if self.outage.down:
            return self.outage.take_local(self.fallback, demands)
        loop = asyncio.get_running_loop()
        leases = self.leases
        if leases.take(demands):
            # Decided in memory from this process's leases: the headers' view moves as the
            # counter in Redis would have.
            now = time.time()
            view = self._view
            for d in demands:
                if d.kind == "rate":
                    view[d.name] = rate_take(view.get(d.name, 0.0), d.limit, d.amount, now)[0]
            if leases.wanted and self._sender is None:
                self._sender = loop.create_task(self._send())  # a refill, ahead of need
            return None
        waiter: asyncio.Future[Refusal | None] = loop.create_future()
        self._waiting.append((demands, waiter))
        if self._sender is None:
            # Started now, run once this call waits: every call that arrives meanwhile (in
            # this loop iteration, or while a send is out) goes in the same script call.
            self._sender = loop.create_task(self._send())
        try:
            return await waiter
        except _Unreachable:
            return self.outage.take_local(self.fallback, demands)

    async def _send(self) -> None:
        """Send what waits, call after call, until nothing does (one call out at a time)."""
        batch: list[Waiter] = []
        try:
            while (self._waiting or self._pending or self.leases.wanted) and not self.outage.down:
                batch, self._waiting = self._waiting[:_BATCH], self._waiting[_BATCH:]
                changes, self._pending = self._pending[:_BATCH], self._pending[_BATCH:]
                asked = self.leases.asked(_BATCH)
                args = script_args(changes, [demands for demands, _ in batch], self.now, asked)
                try:
                    replies = await self._run(args)
                except _UNREACHABLE as exc:
                    self._requeue(changes)
                    self.leases.forget()
                    self.outage.failed(exc)
                    break
                self._read_changes(changes, replies[0])
                for (demands, waiter), reply in zip(batch, replies[1 : 1 + len(batch)], strict=True):
                    refusal = self._read_take(demands, reply)
                    if not waiter.done():
                        waiter.set_result(refusal)
                    elif refusal is None:
                        # Its caller is gone (cancelled while waiting), so nobody will settle
                        # what was just taken for it: give it all back.
                        self._queue([Demand(d.name, d.kind, d.limit, -d.amount, d.period) for d in demands])
                # After the calls, as in the script: a granted lease's value is the latest.
                for lease, reply in zip(asked, replies[1 + len(batch) :], strict=True):
                    self._read_lease(lease, reply)
                batch = []
            # Redis is down (now, or found so by another call): these decide locally.
            self._release(batch, _Unreachable())
        except BaseException as exc:
            # Cancelled (shutdown): the callers decide locally; a fault in this code: each
            # caller gets it, rather than waiting forever. Leases asked for may never be
            # answered: what they would have held lapses in Redis with the counters.
            self.leases.forget()
            if isinstance(exc, Exception):
                log.exception("limits: the Redis script call failed")
                self._release(batch, exc)
            else:
                self._release(batch, _Unreachable())
                raise
        finally:
            self._sender = None

    def _release(self, batch: list[Waiter], exc: BaseException) -> None:
        for _, waiter in batch + self._waiting:
            if not waiter.done():
                waiter.set_exception(exc)
        self._waiting = []

    def _read_take(self, demands: Sequence[Demand], reply: list[bytes]) -> Refusal | None:
        verdict = reply[0]
        if verdict == b"ok":
            shift = time.time() - float(reply[1])
            for i, d in enumerate(demands):
                if d.kind == "rate":
                    self._remember(d.name, float(reply[i + 2]) + shift, d.limit)
            return None
        if verdict == b"rate":
            i = int(reply[1])
            d = demands[i]
            self._remember(d.name, float(reply[4]) + time.time() - float(reply[3]), d.limit)
            return Refusal(i, float(reply[2]))
        if verdict == b"budget":
            return Refusal(int(reply[1]))
        return Refusal(-1, 0.0, [int(i) for i in reply[2:]])

    def _read_lease(self, lease: Demand, reply: list[bytes]) -> None:
        if not self.leases.granted(lease, reply[0] == b"ok"):
            return
        if lease.kind == "rate":
            self._remember(lease.name, float(reply[2]) + time.time() - float(reply[1]), lease.limit)
        if self._expiry is None:
            self._expiry = asyncio.get_running_loop().call_later(LEASE_TTL, self._expire)

    def _expire(self) -> None:
        """Give back what expired leases hold (queued settlements), and come back at the next
        expiry while leases remain."""
        self._expiry = None
        due = self.leases.expire()
        if due is not None:
            delay = max(due - time.monotonic(), 0.0) + 0.01
            self._expiry = asyncio.get_running_loop().call_later(delay, self._expire)

    def _remember(self, name: str, tat: float, limit: float = 0.0) -> None:
        view = self._view
        if len(view) >= _VIEW_MAX and name not in view:
            view.clear()  # bounded: a forgotten counter reads as full until its next call
        if limit:
            # What this process leased and has not admitted is taken in Redis but not by any
            # call: the headers show the counter without it.
            tat -= self.leases.unspent(name) * (60.0 / limit)
        view[name] = tat

    async def seed(self, name: str, period: int, spent: float) -> None:
        if not self.outage.down:
            key = f"{PREFIX}{name}:{period}"
            try:
                # NX: the first replica to load the spend wins; the others' equal figures (or
                # older ones, read before the winner's calls were recorded) are not written.
                await self.redis.set(key, repr(float(spent)), nx=True, ex=BUDGET_IDLE)
                return
            except _UNREACHABLE as exc:
                self.outage.failed(exc)
        await self.outage.seed_local(self.fallback, name, period, spent)

    # -- settlement ----------------------------------------------------------------------

    async def adjust(self, changes: Sequence[Demand]) -> None:
        """Queue the changes for Redis (the caller does not wait for them); changes to what a
        local fallback admitted go to that fallback."""
        local = [c for c in changes if c.local]
        if local:
            self.fallback.adjust_now(local, time.time())
        remote = [c for c in changes if not c.local] if local else list(changes)
        if self.outage.down:
            # Kept for when Redis is back: budgets only (a rate correction's minute passes).
            remote = [c for c in remote if c.kind == "budget"]
        if not remote:
            return
        now = time.time()
        view = self._view
        for c in remote:
            if c.kind == "rate" and c.name in view:
                # The headers see the correction at once; the reply that carries it confirms.
                view[c.name] = rate_adjust(view[c.name], c.limit, c.amount, now)
        self._queue(remote)

    def _queue(self, changes: list[Demand]) -> None:
        room = MAX_PENDING - len(self._pending)
        if len(changes) > room:
            if not self._dropped:
                log.warning("limits: %d settlements wait for Redis; newer ones are dropped", MAX_PENDING)
            self._dropped += len(changes) - max(room, 0)
            changes = changes[: max(room, 0)]
        self._pending += changes
        if self._sender is None and self._settle_timer is None and not self.outage.down:
            # No call is going out to carry them: send them alone unless one comes soon.
            loop = asyncio.get_running_loop()
            self._settle_timer = loop.call_later(SETTLE_DELAY, self._settle_due)

    def _settle_due(self) -> None:
        self._settle_timer = None
        if self._pending and self._sender is None and not self.outage.down:
            self._sender = asyncio.get_running_loop().create_task(self._send())

    def _requeue(self, changes: list[Demand]) -> None:
        """Keep a failed call's budget changes for when Redis is back (money stays exact if
        Redis kept its data); rate changes are dropped, the minute they corrected passes."""
        kept = [c for c in changes if c.kind == "budget"][: MAX_PENDING - len(self._pending)]
        self._pending[:0] = kept

    def _read_changes(self, changes: list[Demand], reply: list[bytes]) -> None:
        shift = time.time() - float(reply[0])
        for i, c in enumerate(changes):
            if c.kind == "rate":
                self._remember(c.name, float(reply[i + 1]) + shift, c.limit)
        if self._dropped and not self._pending:
            log.warning("limits: %d settlements were dropped while Redis was slow or down", self._dropped)
            self._dropped = 0

    async def flush(self) -> None:
        """Give back every lease and send every queued settlement now (at shutdown; tests)."""
        self.leases.give_back_all()
        while self._sender is not None:
            await asyncio.shield(self._sender)
        if self._pending and not self.outage.down:
            self._sender = asyncio.get_running_loop().create_task(self._send())
            await asyncio.shield(self._sender)

    async def _recovered(self) -> None:
        """Redis answers again: send what waited before any new admission, so a budget
        seeded afresh is not then corrected for calls its seed already counts."""
        self._view.clear()  # Redis may have restarted empty; the next replies refill it
        self.leases.forget()
        # Idle pooled connections predate the outage and are likely dead: drop them rather
        # than let each fail one call (the ones in use by others are theirs to handle).
        await self.redis.connection_pool.disconnect(inuse_connections=False)
        while self._pending:
            changes, self._pending = self._pending[:_BATCH], self._pending[_BATCH:]
            try:
                replies = await self._run(script_args(changes, [], self.now))
            except BaseException:
                self._requeue(changes)
                raise  # not back after all: the probe goes on
            self._read_changes(changes, replies[0])

    # -- headers -------------------------------------------------------------------------

    def ahead(self, name: str) -> float:
        if self.outage.down:
            return self.fallback.ahead(name)
        tat = self._view.get(name)
        return 0.0 if tat is None else rate_ahead(tat, time.time())

    # -- plumbing ------------------------------------------------------------------------

    async def _run(self, args: ScriptArgs) -> Any:
        try:
            return await self._script(args)
        except RedisConnectionError:
            # A pooled connection the server closed (a Redis restart, an idle timeout) fails
            # once and is dropped by redis-py; one retry on a fresh connection tells a dead
            # connection from a dead Redis (refused at once when Redis is down).
            return await self._script(args)

    async def _script(self, args: ScriptArgs) -> Any:
        keys, argv = args
        try:
            return await self.redis.evalsha(SCRIPT_SHA, len(keys), *keys, *argv)
        except NoScriptError:
            # Not in Redis's script cache (a restart, SCRIPT FLUSH): EVAL runs and caches it.
            return await self.redis.eval(SCRIPT, len(keys), *keys, *argv)

    def close(self) -> None:
        self.outage.close()
        if self._settle_timer is not None:
            self._settle_timer.cancel()
        if self._expiry is not None:
            self._expiry.cancel()
        if self._sender is not None:
            self._sender.cancel()
        self.fallback.close()
