"""The 3-replica harness itself (tests/support/cluster.py): every replica answers through nginx,
round-robin spreads the requests, a killed replica is skipped and comes back, and `unigate
migrate` run by several replicas at once on a fresh database leaves one schema."""

from __future__ import annotations

import collections
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.conftest import _fresh_postgres_database
from tests.support.cluster import GatewayCluster, gateway_cluster
from tests.support.net import http

CHAT = {"model": "sandbox-chat", "messages": [{"role": "user", "content": "hello"}]}


@pytest.fixture(scope="module")
def cluster() -> Iterator[GatewayCluster]:
    started = time.monotonic()
    with gateway_cluster() as c:
        print(f"\ncluster of {len(c.replicas)} replicas up in {time.monotonic() - started:.1f} s")
        yield c


def test_every_replica_answers_through_nginx_in_turn(cluster: GatewayCluster) -> None:
    key = cluster.create_key(name="harness")
    auth = {"Authorization": f"Bearer {key}"}
    for url in cluster.replica_urls:
        assert http("GET", url + "/readyz").status == 200
    served: collections.Counter[int] = collections.Counter()
    for _ in range(30):
        res = http("POST", cluster.url + "/v1/chat/completions", CHAT, auth)
        assert res.status == 200, res.body
        served[cluster.replica_of(res)] += 1
    # Round-robin over 3 healthy replicas: 10 each (nginx counts per worker process; the
    # harness runs one).
    assert sorted(served) == list(range(len(cluster.replicas))), served
    assert max(served.values()) - min(served.values()) <= 2, served
    # A key created through one replica authenticates on every one of them.
    for url in cluster.replica_urls:
        assert http("POST", url + "/v1/chat/completions", CHAT, auth).status == 200


def test_a_killed_replica_is_skipped_and_restarts(cluster: GatewayCluster) -> None:
    key = cluster.create_key(name="harness-kill")
    auth = {"Authorization": f"Bearer {key}"}
    cluster.kill(1)
    with pytest.raises(OSError):
        http("GET", cluster.replica_url(1) + "/healthz", timeout=2)
    # nginx tries the next replica when the connection is refused (nothing was sent), so
    # clients see no error, POSTs included.
    statuses = collections.Counter(
        http("POST", cluster.url + "/v1/chat/completions", CHAT, auth).status for _ in range(12)
    )
    assert statuses == {200: 12}, statuses
    started = time.monotonic()
    cluster.restart(1)
    print(f"\nreplica restarted in {time.monotonic() - started:.1f} s")
    assert http("GET", cluster.replica_url(1) + "/readyz").status == 200


def test_unigate_migrate_run_by_many_at_once_on_a_fresh_database(cluster: GatewayCluster) -> None:
    """Before the advisory lock in store/db.py:migrate, replicas started together on an empty
    PostgreSQL database died on a duplicate CREATE TABLE alembic_version."""
    url = _fresh_postgres_database(cluster.database_url, "migrate_race")
    env = {**os.environ, "UNIGATE_DATABASE_URL": url}

    def migrate() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "unigate", "migrate"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    with ThreadPoolExecutor(3) as pool:
        runs = list(pool.map(lambda _: migrate(), range(3)))
    for run in runs:
        assert run.returncode == 0, run.stderr
        assert run.stdout.startswith("database schema at revision "), run.stdout
    assert len({run.stdout for run in runs}) == 1
