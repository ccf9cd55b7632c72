"""Sending corpus cases to a gateway and judging the answers; the tally the test prints."""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from tests.support.corpus_model import Case
from tests.support.error_shapes import shape_problem
from tests.support.gateway import ADMIN_KEY, GatewayProcess
from tests.support.healthz_probe import HealthProbe
from tests.support.raw_http import RawResponse, build_request, send_raw


def send_case(gw: GatewayProcess, key: str, case: Case, timeout: float = 20.0) -> RawResponse:
    target = case.target
    secret = ADMIN_KEY if target.family == "admin" else key
    headers = [("Authorization", f"Bearer {secret}"), *case.headers]
    if case.content_type is not None:
        headers.append(("Content-Type", case.content_type))
    with case.around(gw, key) if case.around else contextlib.nullcontext({}) as filled:
        path = case.path or target.path
        for name, value in filled.items():
            path = path.replace("{" + name + "}", value)
        data = build_request(target.method, path, case.make(), headers)
        return send_raw(gw.port, data, timeout)


def judge(case: Case, res: RawResponse) -> str | None:
    """What is wrong with the answer to a bad request, or None: a 4xx (or the statuses the
    case names) in the family's own error shape."""
    wanted = case.expect
    if 200 <= res.status < 300 and (case.upstream or (wanted is not None and res.status in wanted)):
        return None
    ok = res.status in wanted if wanted is not None else 400 <= res.status < 500
    if not ok:
        return f"status {res.status} (wanted {sorted(wanted) if wanted else '4xx'}): {res.body[:300]!r}"
    try:
        body = res.json()
    except ValueError:
        return f"status {res.status} with a body that is not JSON: {res.body[:200]!r}"
    return shape_problem(case.target.style, body)


@dataclass
class Tally:
    """Figures across the corpus: cases per family, answers by status, the slowest answer."""

    families: Counter[str] = field(default_factory=Counter)
    statuses: Counter[int] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    slowest: tuple[float, str] = (0.0, "")

    def add(self, case: Case, res: RawResponse, problem: str | None) -> None:
        self.families[case.target.family] += 1
        self.statuses[res.status] += 1
        if problem:
            self.failures.append(f"{case.id}: {problem}")
        if res.seconds > self.slowest[0]:
            self.slowest = (res.seconds, case.id)

    def lines(self) -> list[str]:
        return [
            f"cases: {sum(self.families.values())}",
            "per family: " + ", ".join(f"{k} {v}" for k, v in sorted(self.families.items())),
            "by status: " + ", ".join(f"{k} x{v}" for k, v in sorted(self.statuses.items())),
            f"slowest answer: {self.slowest[0] * 1000:.0f} ms ({self.slowest[1]})",
            f"failed cases: {len(self.failures)}",
        ]


class Run:
    """What a corpus module's tests report to its fixture's teardown: the tally, the /healthz
    probes, and what ran when (spans), each with a way to run it again."""

    def __init__(self) -> None:
        self.tally = Tally()
        self.probes: dict[str, HealthProbe] = {}
        self.edges: Counter[str] = Counter()
        self.stored: dict[str, Counter[str]] = {}
        self.spans: list[tuple[float, float, str]] = []  # (monotonic start, end, what ran)
        self.again: dict[str, Callable[[], object]] = {}

    @contextlib.contextmanager
    def span(self, what: str, again: Callable[[], object]) -> Iterator[None]:
        started = time.monotonic()
        try:
            yield
        finally:
            self.spans.append((started, time.monotonic(), what))
            self.again[what] = again

    def during(self, at: float, took: float) -> list[str]:
        return [what for start, end, what in self.spans if start <= at + took and end >= at]

    def suspects(self, probe: HealthProbe, limit: float) -> list[str]:
        """What ran while a /healthz poll took `limit` or longer, in order, once each."""
        found: dict[str, None] = {}
        for at, took, own in probe.slow:
            if own >= limit:
                found.update(dict.fromkeys(self.during(at, took)))
        return list(found)

    def recheck(self, port: int, pid: int | None, suspects: list[str], each: float = 0.3) -> HealthProbe:
        """Run each suspect again, once and for at least `each` seconds, under a fresh probe
        of the gateway at `port`. A stall a request causes comes back when the request does;
        one from other load on the machine (a shared 2-core box) does not, so only the fresh
        probe's figures are held to the limit."""
        probe = HealthProbe(port, pid).start()
        try:
            for what in suspects:
                started, rounds = time.monotonic(), 0
                while rounds < 1 or time.monotonic() - started < each:
                    with self.span(what, self.again[what]):
                        self.again[what]()
                    rounds += 1
        finally:
            probe.stop()
        return probe

    def culprits(self, probe: HealthProbe) -> list[str]:
        """For each slow /healthz poll, what was running meanwhile."""
        return [
            f"{own * 1000:.0f} ms ({took * 1000:.0f} ms wall) during {self.during(at, took)[:3]}"
            for at, took, own in probe.slow
        ]
