"""A standing bad-input corpus against every family's endpoints of the real `unigate serve`.

Every case is named (family/endpoint/case) and must get a 4xx in its family's own error
shape, never a 5xx or a hang; a few fields only the upstream judges may be accepted (see
`Case.upstream`). A separate process polls `/healthz` throughout (support/healthz_probe.py):
its slowest answer, less the time Linux kept the probe or a gateway thread waiting for a CPU
(other load on a shared machine), must stay under 50 ms; what ran during a slower poll is run
again under a fresh probe, and only a stall that comes back fails. The wall-clock figure is
printed too. Odd text where the gateway stores what it is given is checked on SQLite and on
PostgreSQL: refused with a 400, or fetched back exactly. The figures are printed at the end.
"""

from __future__ import annotations

import concurrent.futures
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.corpus import all_cases
from tests.support.corpus_edges import (
    INJECTIONS,
    NEVER_ENDING,
    Injection,
    injected_headers,
    injection_request,
    never_ending,
)
from tests.support.corpus_model import Case
from tests.support.corpus_run import Run, judge, send_case
from tests.support.corpus_storage import ODD_TEXT, STORES, roundtrip
from tests.support.gateway import ADMIN_KEY, GatewayProcess
from tests.support.healthz_probe import HealthProbe
from tests.support.postgres import fresh_database
from tests.support.raw_http import build_request, send_raw
from tests.support.video import sandbox_config

pytestmark = [pytest.mark.fuzz, pytest.mark.process, pytest.mark.services]

CASES = all_cases()
BODY_TIMEOUT = 2.0
HEALTHZ_LIMIT = 0.050
ENV = {"UNIGATE_BODY_TIMEOUT": str(BODY_TIMEOUT), "UNIGATE_HEADER_TIMEOUT": "5"}
STORE_WAIT = 15.0  # seconds a stored task may take to finish
STORE_CLIENTS = 4


@pytest.fixture(scope="module")
def run() -> Iterator[Run]:
    state = Run()
    yield state
    for probe in state.probes.values():
        probe.stop()


def _gateway(workdir: Any, env: dict[str, str]) -> GatewayProcess:
    config = sandbox_config(task_seconds=1.0)
    config["sandbox"]["music_seconds"] = 1.0  # stored tasks finish quickly
    return GatewayProcess(workdir, config=config, env={**ENV, **env})


@pytest.fixture(scope="module")
def gateways(
    tmp_path_factory: pytest.TempPathFactory, run: Run, postgres_url: str
) -> Iterator[dict[str, GatewayProcess]]:
    """A gateway on SQLite and one on a fresh PostgreSQL database, both started before the
    probes are (starting a server is not what they measure)."""
    url = fresh_database(postgres_url, "bad_input_corpus")
    with (
        _gateway(tmp_path_factory.mktemp("corpus"), {}) as gw,
        _gateway(tmp_path_factory.mktemp("corpus_pg"), {"UNIGATE_DATABASE_URL": url}) as pg,
    ):
        found = {"sqlite": gw, "postgres": pg}
        run.probes = {name: HealthProbe(g.port, _pid(g)).start() for name, g in found.items()}
        yield found
        # After whichever of the module's tests ran (all, some, in any order): /healthz stayed
        # fast while they did. Checked here, not in a test that would have to run last.
        _check_figures(found, run)


def _pid(gw: GatewayProcess) -> int | None:
    """The server's pid (`unigate serve` execs into it; one worker runs in that process)."""
    return gw.proc.pid if gw.proc is not None else None


@pytest.fixture(scope="module")
def gw(gateways: dict[str, GatewayProcess]) -> GatewayProcess:
    return gateways["sqlite"]


@pytest.fixture(scope="module")
def pg_gw(gateways: dict[str, GatewayProcess]) -> GatewayProcess:
    return gateways["postgres"]


@pytest.fixture(scope="module")
def keys(gateways: dict[str, GatewayProcess]) -> dict[str, str]:
    return {name: g.create_key(name="corpus") for name, g in gateways.items()}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(gw: GatewayProcess, keys: dict[str, str], run: Run, case: Case) -> None:
    key = keys["sqlite"]
    with run.span(case.id, lambda: send_case(gw, key, case)):
        res = send_case(gw, key, case)
    problem = judge(case, res)
    run.tally.add(case, res, problem)
    assert problem is None, problem


@pytest.mark.parametrize("case", INJECTIONS, ids=[c.name for c in INJECTIONS])
def test_header_injection(gw: GatewayProcess, keys: dict[str, str], run: Run, case: Injection) -> None:
    """Nothing a client puts in a header value, a path, a query or a file name comes back as
    a response header of its own; the HTTP parser's own 400 for a malformed head is fine."""
    request = injection_request(case, keys["sqlite"])
    with run.span(case.name, lambda: send_raw(gw.port, request)):
        res = send_raw(gw.port, request)
    run.edges[f"injection {res.status}"] += 1
    assert res.status and res.status < 500, (res.status, res.body[:300])
    assert not injected_headers(res), res.headers
    if res.status == 200 and case.path == "/suno/upload/audio":
        # The stored upload keeps the name as text; fetching it echoes nothing into headers.
        task = res.json()["data"]["task_id"]
        auth = [("Authorization", f"Bearer {keys['sqlite']}")]
        fetched = send_raw(gw.port, build_request("GET", f"/suno/fetch/{task}", headers=auth))
        assert fetched.status == 200 and not injected_headers(fetched), fetched.headers


def _never_ending_all(port: int, key: str) -> dict[str, tuple[float, int]]:
    with concurrent.futures.ThreadPoolExecutor(len(NEVER_ENDING)) as pool:
        futures = {
            path: pool.submit(never_ending, port, path, ctype, ADMIN_KEY if "admin" in path else key, 15.0)
            for path, ctype in NEVER_ENDING
        }
        return {path: f.result() for path, f in futures.items()}


def test_bodies_that_never_end_are_dropped(gw: GatewayProcess, keys: dict[str, str], run: Run) -> None:
    """A Content-Length the body never meets, then silence: each connection is dropped by
    the body timeout (no 5xx), all of them at once, while /healthz keeps answering."""
    again = lambda: _never_ending_all(gw.port, keys["sqlite"])  # noqa: E731
    with run.span("never-ending bodies", again):
        results = again()
    for path, (seconds, status) in results.items():
        run.edges[f"never-ending body {status or 'dropped'}"] += 1
        # The sweep runs once a second, so a drop lands within about two of the timeout.
        assert seconds < BODY_TIMEOUT + 3, (path, seconds)
        assert status == 0 or 400 <= status < 500, (path, status)
    assert gw.proc is not None and gw.proc.poll() is None


def _store_all(
    gateway: GatewayProcess, key: str, values: dict[str, str]
) -> dict[str, tuple[int, str | None]]:
    with concurrent.futures.ThreadPoolExecutor(STORE_CLIENTS) as pool:
        futures = {
            f"{s.name}-{name}": pool.submit(roundtrip, gateway, key, s, value, STORE_WAIT)
            for s in STORES
            for name, value in values.items()
        }
        return {name: f.result() for name, f in futures.items()}


@pytest.fixture(scope="module")
def stored(
    gateways: dict[str, GatewayProcess], keys: dict[str, str], run: Run
) -> dict[str, dict[str, tuple[int, str | None]]]:
    """Every odd value through every storing endpoint, one database after the other, a few
    submits at a time (as clients would send them; the sandbox renders each task's media in
    the gateway process): backend -> "store-value" -> (status, problem)."""
    results = {}
    for backend, gateway in gateways.items():
        again = lambda g=gateway, k=keys[backend]: _store_all(g, k, ODD_TEXT)  # noqa: E731
        with run.span(f"odd text stored ({backend})", again):
            results[backend] = _store_all(gateway, keys[backend], ODD_TEXT)
        run.stored[backend] = Counter(
            "stored" if st < 300 else str(st) for st, _ in results[backend].values()
        )
    return results


STORAGE_IDS = [f"{s.name}-{v}" for s in STORES for v in ODD_TEXT]


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
@pytest.mark.parametrize("item", STORAGE_IDS)
def test_odd_text_is_refused_or_stored_exactly(
    stored: dict[str, dict[str, tuple[int, str | None]]], backend: str, item: str
) -> None:
    status, problem = stored[backend][item]
    assert problem is None, problem
    if item.endswith("-lone_surrogate"):
        assert status == 400  # not Unicode text: refused wherever it arrives


def test_lookups_by_odd_ids_on_postgres(pg_gw: GatewayProcess, keys: dict[str, str], run: Run) -> None:
    """The lookup cases again on PostgreSQL, which cannot compare text with a NUL."""
    lookups = [c for c in CASES if c.name.startswith("id_")]
    failures = []
    for case in lookups:
        with run.span(f"postgres {case.id}", lambda c=case: send_case(pg_gw, keys["postgres"], c)):
            problem = judge(case, send_case(pg_gw, keys["postgres"], case))
        if problem:
            failures.append(f"{case.id}: {problem}")
    assert not failures, failures


def _figures(probe: HealthProbe, run: Run) -> str:
    slowest = max(probe.slow, key=lambda poll: poll[2], default=None)
    during = f", during {run.during(slowest[0], slowest[1])[:2]}" if slowest else ""
    return (
        f"{probe.polls} polls, {probe.failures} failed, worst {probe.worst_own * 1000:.1f} ms{during} "
        f"({probe.worst * 1000:.1f} ms wall clock, with what the OS kept them off the CPU)"
    )


def _check_figures(gateways: dict[str, GatewayProcess], run: Run) -> None:
    """The healthz probes stop, the figures are printed (shown with -s), and every probe must
    have answered within HEALTHZ_LIMIT (what was slow is run again first, see Run.recheck)."""
    for probe in run.probes.values():
        probe.stop()
    lines = [*run.tally.lines()]
    lines += [f"edges: {', '.join(f'{k} x{v}' for k, v in sorted(run.edges.items()))}"]
    for backend, counts in run.stored.items():
        lines.append(f"odd text on {backend}: " + ", ".join(f"{k} x{v}" for k, v in sorted(counts.items())))
    rechecked: dict[str, HealthProbe] = {}
    for name, probe in run.probes.items():
        lines.append(f"healthz ({name}): {_figures(probe, run)}")
        suspects = run.suspects(probe, HEALTHZ_LIMIT)
        if suspects:
            gateway = gateways[name]
            again = rechecked[name] = run.recheck(gateway.port, _pid(gateway), suspects)
            shown = ", ".join(suspects[:4]) + (", ..." if len(suspects) > 4 else "")
            lines.append(f"  over {HEALTHZ_LIMIT * 1000:.0f} ms during {len(suspects)} things ({shown})")
            lines.append(f"  those run again: {_figures(again, run)}")
    print("\nbad-input corpus\n  " + "\n  ".join(lines))
    for name, probe in run.probes.items():
        assert probe.failures == 0, name
        final = rechecked.get(name, probe)
        assert final.failures == 0 and final.worst_own < HEALTHZ_LIMIT, (name, run.culprits(final))
