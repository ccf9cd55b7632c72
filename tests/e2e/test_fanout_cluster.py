"""Fan-out of changes and readiness across a real deployment: three `unigate serve` replicas
(two workers each) on one PostgreSQL and one Redis (tests/support/cluster.py). Changes are made
through replica 0 (or the CLI) while clients hammer replicas 1 and 2 directly, and the time
from the change's answer to the last request that still saw the old state is measured.

The figures are printed (`pytest -s` shows them); the requirement is one second."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.cluster import GatewayCluster, gateway_cluster
from tests.support.net import HTTPResult, free_port, http

BOUND = 1.0  # the requirement: every replica applies a change within a second
SAFETY_NET = 5.0  # cluster/fanout.py SUBSCRIBED_CHECK: a lost message is caught by then
CHAT = {"model": "sandbox-chat", "messages": [{"role": "user", "content": "hi"}]}
CONFIG: dict[str, Any] = {
    "providers": [{"name": "sandbox", "protocol": "sandbox"}],
    "models": [{"name": "sandbox-chat", "routes": [{"provider": "sandbox"}]}],
}

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def cluster() -> Iterator[GatewayCluster]:
    with gateway_cluster(replicas=3, workers=2, config=CONFIG) as c:
        yield c


@dataclass(frozen=True, slots=True)
class Shot:
    replica: int
    sent: float  # time.time() when the request was started (the database's clock for revoked_at)
    status: int  # 0: no answer


class Hammer:
    """Clients sending requests with one key, each on a new connection (so every worker of a
    replica gets its share), to some replicas, until stopped."""

    def __init__(self, cluster: GatewayCluster, replicas: list[int], key: str, chat: bool = False) -> None:
        self._targets = [(i, cluster.replica_url(i)) for i in replicas]
        self._headers = {"Authorization": f"Bearer {key}"}
        self._chat = chat
        self._stop = threading.Event()
        self._shots: list[Shot] = []
        self._lock = threading.Lock()
        self._threads = [
            threading.Thread(target=self._run, args=(i, url), daemon=True)
            for i, url in self._targets
            for _ in range(3)
        ]

    def _run(self, replica: int, url: str) -> None:
        while not self._stop.is_set():
            sent = time.time()
            try:
                if self._chat:
                    res = http("POST", url + "/v1/chat/completions", CHAT, self._headers, timeout=10)
                else:
                    res = http("GET", url + "/v1/models", None, self._headers, timeout=10)
                status = res.status
            except OSError:
                status = 0
            with self._lock:
                self._shots.append(Shot(replica, sent, status))

    def __enter__(self) -> Hammer:
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(15)

    def shots(self) -> list[Shot]:
        with self._lock:
            return list(self._shots)

    def wait_until_flowing(self, status: int = 200, timeout: float = 10) -> None:
        """Until every target has answered `status` at least twice."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            shots = self.shots()
            if all(
                sum(1 for s in shots if s.replica == i and s.status == status) >= 2 for i, _ in self._targets
            ):
                return
            time.sleep(0.05)
        raise AssertionError(f"the clients never got {status} from every replica: {_counts(self.shots())}")


def _counts(shots: list[Shot]) -> dict[tuple[int, int], int]:
    out: dict[tuple[int, int], int] = {}
    for s in shots:
        out[(s.replica, s.status)] = out.get((s.replica, s.status), 0) + 1
    return out


def _worst(shots: list[Shot], since: float, old: int = 200) -> float:
    """How long after `since` a request was still answered with the old state: the latest
    start, after `since`, of a request answered `old` (0 when none was)."""
    late = [s.sent - since for s in shots if s.status == old and s.sent > since]
    return max(late, default=0.0)


def _refused_after(shots: list[Shot], since: float, status: int) -> None:
    """Every request started more than BOUND after `since` was answered `status`."""
    after = [s for s in shots if s.sent > since + BOUND]
    assert after, "no requests after the bound: the clients stalled"
    wrong = [s for s in after if s.status != status]
    assert not wrong, f"{len(wrong)} of {len(after)} requests after {BOUND} s not {status}: {wrong[:5]}"


def _hammer_through(
    cluster: GatewayCluster, key: str, change: Any, after: float = BOUND + 0.3
) -> tuple[float, list[Shot]]:
    """Hammer replicas 1 and 2 with `key`, run `change()`, keep going `after` s; returns the
    time the change returned and every request made."""
    with Hammer(cluster, [1, 2], key) as hammer:
        hammer.wait_until_flowing()
        change()
        done = time.time()
        time.sleep(after)
    return done, hammer.shots()


def _revoked_at(cluster: GatewayCluster, key_id: str) -> float:
    res = cluster.admin("GET", f"/admin/keys/{key_id}", replica=0)
    return float(res.json()["revoked_at"])


def _log_lines(cluster: GatewayCluster, needle: str) -> list[str]:
    return [line for r in cluster.replicas for line in r.log().splitlines() if needle in line]


def _told_by_redis(lines: list[str], workers: int) -> bool:
    """Each of `workers` logged the change, told by Redis. One may have found the row by its
    own 5-second database check in the milliseconds between the commit and the message."""
    by_redis = sum("via redis" in line for line in lines)
    return len(lines) == workers and by_redis >= workers - 1


def _fanout_lines(cluster: GatewayCluster, key_id: str, before: list[str]) -> list[str]:
    """The fan-out lines about `key_id` logged since `before` was read (its creation was one)."""
    return [line for line in _log_lines(cluster, f"fan-out: key {key_id} changed by") if line not in before]


def _unigate(cluster: GatewayCluster, args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    full = {
        **os.environ,
        "UNIGATE_DATABASE_URL": cluster.database_url,
        "UNIGATE_REDIS_URL": cluster.redis_url,
        **env,
    }
    return subprocess.run(
        [sys.executable, "-m", "unigate", *args],
        env=full,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _models(url: str, key: str) -> set[str]:
    res = http("GET", url + "/v1/models", None, {"Authorization": f"Bearer {key}"}, timeout=5)
    assert res.status == 200, res.body
    return {m["id"] for m in res.json()["data"]}


def _readyz(url: str) -> tuple[int, dict[str, Any], float]:
    started = time.monotonic()
    res: HTTPResult = http("GET", url + "/readyz", timeout=5)
    return res.status, res.json(), time.monotonic() - started


def test_a_key_created_on_one_replica_works_on_the_others_at_once(cluster: GatewayCluster) -> None:
    for _ in range(3):
        key = str(cluster.admin("POST", "/admin/keys", {"name": "new"}, replica=0).json()["key"])
        for i in (1, 2):
            res = http("GET", cluster.replica_url(i) + "/v1/models", None, {"Authorization": f"Bearer {key}"})
            assert res.status == 200, res.body


def test_revocation_through_one_replica_is_refused_everywhere_within_a_second(
    cluster: GatewayCluster,
) -> None:
    record = cluster.create_key_record(name="doomed")
    time.sleep(0.3)  # the creation's own fan-out lines are out
    before = _log_lines(cluster, "fan-out: key")

    def revoke() -> None:
        assert cluster.admin("DELETE", f"/admin/keys/{record['id']}", replica=0).status == 200

    done, shots = _hammer_through(cluster, record["key"], revoke)
    worst = _worst(shots, done)
    print(
        f"\nrevocation (admin API on replica 0, {len(shots)} requests on replicas 1-2): "
        f"last accepted request started {worst * 1000:.0f} ms after the revoke's answer"
    )
    assert worst < BOUND
    _refused_after(shots, done, 401)
    # Told by Redis, not found by the 5-second database check: one line per other worker.
    lines = _fanout_lines(cluster, record["id"], before)
    assert _told_by_redis(lines, 5), "\n".join(lines)


def test_a_limit_change_reaches_every_replica_within_a_second(cluster: GatewayCluster) -> None:
    record = cluster.create_key_record(name="limited")
    with Hammer(cluster, [1, 2], record["key"], chat=True) as hammer:
        hammer.wait_until_flowing()
        res = cluster.admin("PATCH", f"/admin/keys/{record['id']}", {"rpm": 1}, replica=0)
        assert res.status == 200, res.body
        done = time.time()
        time.sleep(BOUND + 0.3)
    shots = hammer.shots()
    first_refused = {
        i: min(
            (s.sent - done for s in shots if s.replica == i and s.status == 429 and s.sent > done),
            default=None,
        )
        for i in (1, 2)
    }
    print(
        "\nlimit change (PATCH rpm=1 on replica 0): first 429 started after the answer: "
        + ", ".join(f"replica {i} {1000 * t:.0f} ms" for i, t in first_refused.items() if t is not None)
    )
    assert all(t is not None and t < BOUND for t in first_refused.values()), (first_refused, _counts(shots))
    late = [s for s in shots if s.sent > done + BOUND and s.status == 200]
    assert len(late) <= 1, late  # the one request a minute rpm=1 lets through


def test_a_cli_revocation_fans_out(cluster: GatewayCluster) -> None:
    record = cluster.create_key_record(name="cli-doomed")
    time.sleep(0.3)
    before = _log_lines(cluster, "fan-out: key")

    def revoke() -> None:
        proc = _unigate(cluster, ["keys", "revoke", record["id"]])
        assert proc.returncode == 0, proc.stderr
        assert "note:" not in proc.stderr, proc.stderr

    exited, shots = _hammer_through(cluster, record["key"], revoke)
    committed = _revoked_at(cluster, record["id"])
    worst = _worst(shots, committed)
    print(
        f"\nrevocation (unigate keys revoke): last accepted request started {worst * 1000:.0f} ms "
        f"after revoked_at (stamped as the command's transaction began; it exited "
        f"{(exited - committed) * 1000:.0f} ms after)"
    )
    assert worst < BOUND
    _refused_after(shots, committed, 401)
    lines = _fanout_lines(cluster, record["id"], before)
    assert all("changed by cli:" in line for line in lines), lines
    assert _told_by_redis(lines, 6), "\n".join(lines)


def test_a_config_reload_on_one_replica_reloads_every_replica(cluster: GatewayCluster) -> None:
    key = cluster.create_key(name="models")
    path = Path(cluster.replicas[0].env["UNIGATE_CONFIG"])
    added = {
        "name": "added-chat",
        "family": "text",
        "routes": [{"provider": "sandbox", "model": "sandbox-chat"}],
    }
    path.write_text(yaml.safe_dump({**CONFIG, "models": [*CONFIG["models"], added]}))
    res = cluster.admin("POST", "/admin/reload", replica=0)
    assert res.status == 200 and res.json()["models"]["added"] == ["added-chat"], res.body
    done = time.monotonic()
    # Every worker: each request is a new connection, so a handful reach both workers of each.
    pending = {(i, n) for i in (1, 2) for n in range(6)}
    while pending and time.monotonic() < done + 5:
        pending = {(i, n) for i, n in pending if "added-chat" not in _models(cluster.replica_url(i), key)}
    took = time.monotonic() - done
    print(
        "\nconfig reload (POST /admin/reload on replica 0): replicas 1-2 served the new model "
        f"after {took * 1000:.0f} ms"
    )
    assert not pending
    assert took < BOUND + 0.5  # the last check itself takes a few requests' time
    assert "added-chat" in _models(cluster.replica_url(0), key)
    lines = _log_lines(cluster, "config reloaded (POST /admin/reload")
    assert len(lines) == 6, lines  # each worker once: the one asked, and 5 told through the feed


def test_a_lost_message_is_caught_by_the_database_check(cluster: GatewayCluster) -> None:
    """The CLI's publish goes to a Redis that is not there: the gateways, subscribed to the real
    one, never hear of the change and find it at their next database check."""
    record = cluster.create_key_record(name="unheard")
    dead_redis = f"redis://127.0.0.1:{free_port()}/0"
    time.sleep(0.3)
    before = _log_lines(cluster, "fan-out: key")

    def revoke() -> None:
        proc = _unigate(cluster, ["keys", "revoke", record["id"]], UNIGATE_REDIS_URL=dead_redis)
        assert proc.returncode == 0, proc.stderr
        assert "note: could not tell the running gateways through Redis" in proc.stderr, proc.stderr

    _, shots = _hammer_through(cluster, record["key"], revoke, after=SAFETY_NET + 1.5)
    committed = _revoked_at(cluster, record["id"])
    worst = _worst(shots, committed)
    print(
        f"\nlost message (CLI published nowhere): last accepted request started {worst * 1000:.0f} ms "
        f"after revoked_at (database check every {SAFETY_NET:.0f} s)"
    )
    assert worst < SAFETY_NET + 0.5
    assert all(s.status == 401 for s in shots if s.sent > committed + SAFETY_NET + 0.5)
    lines = _fanout_lines(cluster, record["id"], before)
    assert len(lines) == 6 and all("via database check" in line for line in lines), lines


def test_with_redis_down_changes_still_apply_and_fanout_comes_back(cluster: GatewayCluster) -> None:
    resubscribed = len(_log_lines(cluster, "fan-out: subscribed to Redis"))
    cluster.stop_redis()
    try:
        # Readiness: a Redis outage takes no replica out of the pool (limits fail open).
        for url in cluster.replica_urls:
            status, body, took = _readyz(url)
            assert (status, body) == (200, {"status": "ready", "database": "ok", "redis": "unreachable"}), (
                body
            )
            assert took < 1.5
        record = cluster.create_key_record(name="doomed-while-down")

        def revoke() -> None:
            assert cluster.admin("DELETE", f"/admin/keys/{record['id']}", replica=0).status == 200

        done, shots = _hammer_through(cluster, record["key"], revoke)
        worst = _worst(shots, done)
        print(
            "\nrevocation with Redis down: last accepted request started "
            f"{worst * 1000:.0f} ms after the answer"
        )
        assert worst < BOUND  # the database is read twice a second while the subscription is down
        _refused_after(shots, done, 401)
    finally:
        cluster.start_redis()
    back = time.monotonic()
    while len(_log_lines(cluster, "fan-out: subscribed to Redis")) < resubscribed + 6:
        assert time.monotonic() < back + 10, "the workers did not resubscribe"
        time.sleep(0.05)
    took = time.monotonic() - back
    print(f"fan-out: all 6 workers resubscribed {took * 1000:.0f} ms after Redis answered again")
    assert took < 2.5
    for url in cluster.replica_urls:
        assert _readyz(url)[:2] == (200, {"status": "ready", "database": "ok", "redis": "ok"}), url
    record = cluster.create_key_record(name="doomed-after")
    time.sleep(0.3)
    before = _log_lines(cluster, "fan-out: key")

    def revoke_again() -> None:
        assert cluster.admin("DELETE", f"/admin/keys/{record['id']}", replica=0).status == 200

    done, shots = _hammer_through(cluster, record["key"], revoke_again)
    worst = _worst(shots, done)
    print(f"revocation after Redis returned: {worst * 1000:.0f} ms")
    assert worst < BOUND
    lines = _fanout_lines(cluster, record["id"], before)
    assert _told_by_redis(lines, 5), "\n".join(lines)


def _postgres_pids(cluster: GatewayCluster) -> list[int]:
    """The test cluster's postmaster and every backend below it."""
    postmaster = int((cluster.postgres.data / "postmaster.pid").read_text().split()[0])
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                stat = (entry / "stat").read_text()
                children.setdefault(int(stat[stat.rindex(")") + 2 :].split()[1]), []).append(int(entry.name))
    found, todo = [postmaster], [postmaster]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def test_readyz_answers_within_a_second_while_the_database_hangs(cluster: GatewayCluster) -> None:
    """A frozen PostgreSQL (SIGSTOP: connections accepted by the kernel, never answered) is
    the case a connect timeout alone would leave hanging for a minute."""
    pids = _postgres_pids(cluster)
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        slowest = 0.0
        for i, url in enumerate(cluster.replica_urls):
            for _ in range(3):  # the first probe starts the check; the next ones join it
                status, body, took = _readyz(url)
                slowest = max(slowest, took)
                assert status == 503, (i, body)
                assert body["database"] == "unreachable"
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
    thawed = time.monotonic()
    for i, url in enumerate(cluster.replica_urls):
        while _readyz(url)[0] != 200:
            assert time.monotonic() < thawed + 10, f"replica {i} did not come back"
            time.sleep(0.1)
    print(
        f"\n/readyz with PostgreSQL frozen: 503 on every probe, the slowest in {slowest * 1000:.0f} ms; "
        f"200 again on all 3 replicas {(time.monotonic() - thawed) * 1000:.0f} ms after it resumed"
    )
    assert slowest < 1.5  # 0.8 s of waiting, plus a loaded machine's HTTP round trip


def test_readyz_goes_503_without_the_database_and_recovers_by_itself(cluster: GatewayCluster) -> None:
    for url in cluster.replica_urls:
        assert _readyz(url)[:2] == (200, {"status": "ready", "database": "ok", "redis": "ok"})
    cluster.stop_postgres()
    stopped = time.monotonic()
    try:
        for i, url in enumerate(cluster.replica_urls):
            while True:
                status, body, took = _readyz(url)
                assert took < 1.5, f"a probe took {took:.2f} s"
                if status == 503:
                    break
                assert time.monotonic() < stopped + 5, f"replica {i} still ready: {body}"
                time.sleep(0.1)
            assert body == {"status": "unavailable", "database": "unreachable", "redis": "ok"}
        down = time.monotonic() - stopped
    finally:
        cluster.start_postgres()
    started = time.monotonic()
    for i, url in enumerate(cluster.replica_urls):
        while _readyz(url)[0] != 200:
            assert time.monotonic() < started + 10, f"replica {i} did not come back"
            time.sleep(0.1)
    up = time.monotonic() - started
    print(
        f"\n/readyz: 503 on all 3 replicas {down * 1000:.0f} ms after PostgreSQL stopped, "
        f"200 again {up * 1000:.0f} ms after it started"
    )
    # The fan-out reads the feed again once the database is back.
    key = cluster.create_key(name="after-restart")
    assert (
        http("GET", cluster.replica_url(1) + "/v1/models", None, {"Authorization": f"Bearer {key}"}).status
        == 200
    )
