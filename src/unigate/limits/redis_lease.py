"""Leases: a slice of a Redis counter that one process admits from on its own, so a call whose
every counter has a lease is decided in memory, with no round trip.

A lease is taken in Redis like any admission (it rides in the same script call as the calls
and settlements a process has waiting), so what every process holds plus what was admitted
never exceeds a limit: leased units count as spent from the moment they are leased, and a
lease's unused units are given back (a negative settlement) when it expires. At worst a limit
briefly admits fewer calls than it could, while another process holds units it has not spent.
To keep that small, and the edge of a limit exact:

- a lease is `LEASE_SHARE` of the limit, and only counters whose lease covers at least
  `LEASE_CALLS` of the call's amount are leased (a 10 RPM key is decided in Redis, call by
  call, as before);
- Redis grants a lease only while the counter stays at most `LEASE_CAP` used with it, so near
  its limit a counter is decided call by call again;
- a lease lives `LEASE_TTL` seconds after its last refill; a process asks for the next slice
  when half of one is left, before it runs out, so a busy process keeps deciding in memory.

A lease's period (budgets) and limit must match the call's: a day's budget, or a key whose
limit was changed, is leased afresh and the old lease given back.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from unigate.limits.backend import Demand, Kind

LEASE_SHARE = 0.02  # of a counter's limit per lease
LEASE_CALLS = 4.0  # a lease must cover at least this many of the call's amount
LEASE_CAP = 0.5  # Redis grants a lease only while the counter stays at most this share used
LEASE_TTL = 1.0  # seconds a lease lives after its last refill; then its rest is given back
_DENIED = 0.25  # seconds before asking again for a lease Redis refused


@dataclass(slots=True)
class Lease:
    kind: Kind
    limit: float
    period: int
    units: float = 0.0  # what is left to admit
    until: float = 0.0  # monotonic: expiry (0: not granted yet)
    asked: bool = False  # a request is queued or in flight
    retry: float = 0.0  # monotonic: no request before this (after a refusal)


class Leases:
    """One process's leases. `give_back` queues a negative settlement for Redis."""

    def __init__(self, share: float, give_back: Callable[[list[Demand]], None]) -> None:
        self.share = share
        self.held: dict[str, Lease] = {}
        self.wanted: dict[str, Demand] = {}  # lease requests for the next script call
        self._give_back = give_back

    def take(self, demands: Sequence[Demand]) -> bool:
        """Admit `demands` from leases (True), or ask for the leases they lack (False: the
        call goes to Redis, and the leases ride along)."""
        if not self.share:
            return False
        held = self.held
        mono = time.monotonic()
        covered = True
        for d in demands:
            lease = held.get(d.name)
            if (
                lease is None
                or lease.units < d.amount
                or lease.until < mono
                or lease.limit != d.limit
                or lease.period != d.period
            ):
                covered = False
                break
        if covered:
            for d in demands:
                lease = held[d.name]
                lease.units -= d.amount
                if not lease.asked and lease.units < self.share * d.limit * 0.5 and lease.retry < mono:
                    self._ask(d, lease)
            return True
        for d in demands:
            self._want(d, mono)
        return False

    def _want(self, d: Demand, mono: float) -> None:
        slice_ = self.share * d.limit
        if d.amount < 0 or slice_ < LEASE_CALLS * d.amount:
            return
        lease = self.held.get(d.name)
        if lease is not None and (lease.limit != d.limit or lease.period != d.period or lease.until < mono):
            self._drop(d.name, lease)
            lease = None
        if lease is None:
            lease = self.held[d.name] = Lease(d.kind, d.limit, d.period)
        elif lease.units >= d.amount and lease.units >= slice_ * 0.5:
            return  # enough here: another counter sent the call to Redis
        if not lease.asked and lease.retry < mono:
            self._ask(d, lease)

    def _ask(self, d: Demand, lease: Lease) -> None:
        lease.asked = True
        self.wanted[d.name] = Demand(d.name, d.kind, d.limit, self.share * d.limit, d.period)

    def asked(self, most: int) -> list[Demand]:
        """The lease requests for the next script call (at most `most`)."""
        if len(self.wanted) <= most:
            out = list(self.wanted.values())
            self.wanted.clear()
            return out
        names = list(self.wanted)[:most]
        return [self.wanted.pop(name) for name in names]

    def granted(self, d: Demand, ok: bool) -> bool:
        """Redis's answer to a lease request; True when this process now holds the slice."""
        lease = self.held.get(d.name)
        if lease is None or lease.limit != d.limit or lease.period != d.period:
            # Dropped or replaced while the request was out: the slice goes straight back.
            if ok:
                self._give_back([Demand(d.name, d.kind, d.limit, -d.amount, d.period)])
            return False
        lease.asked = False
        if not ok:
            lease.retry = time.monotonic() + _DENIED
            return False
        lease.units += d.amount
        lease.until = time.monotonic() + LEASE_TTL
        return True

    def unspent(self, name: str) -> float:
        """Units of `name` this process holds and has not admitted (they are spent in Redis)."""
        lease = self.held.get(name)
        return lease.units if lease is not None else 0.0

    def expire(self) -> float | None:
        """Give back what expired leases hold; the next expiry (monotonic), None if none."""
        mono = time.monotonic()
        due: float | None = None
        for name, lease in list(self.held.items()):
            if lease.until < mono and not lease.asked:
                self._drop(name, lease)
            elif lease.until and (due is None or lease.until < due):
                due = lease.until
        return due

    def give_back_all(self) -> None:
        """Return every lease (at shutdown)."""
        for name, lease in list(self.held.items()):
            self._drop(name, lease)
        self.wanted.clear()

    def forget(self) -> None:
        """Redis failed or restarted: what was leased is lost with it (counted, not admitted:
        at worst fewer calls pass until the counters catch up)."""
        self.held.clear()
        self.wanted.clear()

    def _drop(self, name: str, lease: Lease) -> None:
        del self.held[name]
        self.wanted.pop(name, None)
        if lease.units > 0:
            self._give_back([Demand(name, lease.kind, lease.limit, -lease.units, lease.period)])
