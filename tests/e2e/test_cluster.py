"""The scale-out harness, tasks and stored responses across 3 replicas (2 workers each)
behind nginx on one PostgreSQL and one Redis (tests/support/cluster.py), against fake upstreams
on loopback, each test printing its figures (one cluster for the module: starting one costs seconds):

- the harness: nginx spreads requests round-robin over the replicas; `unigate migrate` run by
  several processes at once on a fresh database;
- 300 tasks (music on a Suno relay, video on Kling) submitted through the balancer: each due
  task polled by one poller at a time (the fakes record when each task is polled; two polls of
  one task closer than half the poll interval would be two pollers in one round), all reach
  SUCCESS, fetched through every replica, each webhook event delivered once;
- kill -9 of a whole replica under load: clients see 502s only for requests that were in
  flight on it, no POST is run twice, the tasks it held leases on are polled again by the
  others within the lease time, and every accepted task finishes;
- PostgreSQL stopped and started under load: /readyz goes 503 on every replica and back,
  refused submits are clean 503s, and every accepted task finishes;
- a Responses chain whose turns land on different replicas keeps its whole history, and a
  background response started on one replica is fetched and cancelled through others.
"""

from __future__ import annotations

import asyncio
import collections
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http.client import HTTPException
from typing import Any

import openai
import pytest

from tests.conftest import _fresh_postgres_database
from tests.support.cluster import GatewayCluster, gateway_cluster
from tests.support.fake_kling import FakeKling
from tests.support.fake_openai import FakeOpenAI
from tests.support.fake_suno import FakeSuno
from tests.support.net import http
from tests.support.receiver import WebhookReceiver

pytestmark = pytest.mark.cluster

POLL_INTERVAL = 0.4
# Two polls of one task closer than this were made in one round, by two pollers (a poller
# waits at least POLL_INTERVAL between two polls of a task).
ROUND_GAP = POLL_INTERVAL / 2
# tasks.lease_seconds (its default): the lease on a task being polled; a replica that dies
# holding it leaves the task to the others once it lapses.
POLL_LEASE = 20.0
SLOW_WORDS = "one two three four five six seven eight nine ten"


@dataclass
class Setup:
    cluster: GatewayCluster
    suno: FakeSuno
    kling: FakeKling
    chat: FakeOpenAI
    slow: FakeOpenAI
    receiver: WebhookReceiver
    key: str
    key_id: str

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}


@pytest.fixture(scope="module")
def up() -> Iterator[Setup]:
    with (
        FakeSuno() as suno,
        FakeKling() as kling,
        FakeOpenAI() as chat,
        FakeOpenAI(mode="slow_stream", slow_seconds=0.5, reply_text=SLOW_WORDS) as slow,
        WebhookReceiver() as receiver,
    ):
        config = {
            "providers": [
                {"name": "relay", "protocol": "suno", "base_url": suno.base_url, "api_key": suno.api_key},
                {
                    "name": "kling",
                    "protocol": "kling",
                    "base_url": kling.base_url,
                    "api_key": kling.gateway_key,
                },
                {"name": "chat", "protocol": "openai", "base_url": chat.base_url, "api_key": "sk-chat"},
                {"name": "slow", "protocol": "openai", "base_url": slow.base_url, "api_key": "sk-slow"},
            ],
            "models": [
                {"name": "chirp-v4", "routes": [{"provider": "relay"}]},
                {"name": "kling-v1-6", "routes": [{"provider": "kling"}]},
                {"name": "fake-chat", "routes": [{"provider": "chat", "model": "gpt-fake"}]},
                {"name": "slow-chat", "routes": [{"provider": "slow", "model": "gpt-slow"}]},
            ],
            "sandbox": {"enabled": True},
            "tasks": {
                "poll_interval": POLL_INTERVAL,
                "max_poll_interval": 1.0,
                "deadline_seconds": 300,
                "webhook_retry_schedule": [0, 0.5, 1, 1, 2, 2, 4, 4],
            },
        }
        env = {"UNIGATE_ALLOW_PRIVATE_WEBHOOKS": "1"}
        started = time.monotonic()
        with gateway_cluster(config=config, env=env) as cluster:
            print(f"\ncluster up in {time.monotonic() - started:.1f} s")
            record = cluster.create_key_record(name="tasks")
            receiver.secret = record["webhook_secret"]
            yield Setup(cluster, suno, kling, chat, slow, receiver, record["key"], record["id"])


# --- helpers ---------------------------------------------------------------------------------


def sql(url: str, query: str, *args: Any) -> list[Any]:
    """One query on the cluster's PostgreSQL, from the test."""
    import asyncpg  # type: ignore[import-untyped]

    async def run() -> list[Any]:
        conn = await asyncpg.connect(url)
        try:
            return list(await conn.fetch(query, *args))
        finally:
            await conn.close()

    return asyncio.run(run())


def until(check: Callable[[], bool], what: str, timeout: float, step: float = 0.2) -> float:
    """Wait for `check`; the seconds it took."""
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > timeout:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(step)
    return time.monotonic() - started


def submit_music(s: Setup, hook: bool = True) -> tuple[int, str]:
    body: dict[str, Any] = {"prompt": "la la", "mv": "chirp-v4", "title": "t", "tags": "pop"}
    if hook:
        body["notify_hook"] = s.receiver.url
    res = http("POST", s.cluster.url + "/suno/submit/music", body, s.auth, timeout=15)
    data = res.json().get("data") if res.status == 200 else None
    return res.status, data["task_id"] if isinstance(data, dict) else ""


def submit_video(s: Setup) -> tuple[int, str]:
    body = {"model_name": "kling-v1-6", "prompt": "a lantern", "callback_url": s.receiver.url}
    res = http("POST", s.cluster.url + "/kling/v1/videos/text2video", body, s.auth, timeout=15)
    return res.status, res.json()["data"]["task_id"] if res.status == 200 else ""


def statuses(s: Setup, ids: list[str]) -> collections.Counter[str]:
    rows = sql(s.cluster.database_url, "SELECT status FROM tasks WHERE id = ANY($1::text[])", ids)
    return collections.Counter(r["status"] for r in rows)


def all_succeed(s: Setup, ids: list[str], timeout: float) -> float:
    def done() -> bool:
        return statuses(s, ids)["SUCCESS"] == len(ids)

    try:
        return until(done, f"{len(ids)} tasks to succeed", timeout, step=0.5)
    except AssertionError:
        raise AssertionError(f"{statuses(s, ids)}\n{s.cluster.logs()}") from None


def _timed(work: Callable[[], None]) -> float:
    started = time.monotonic()
    work()
    return time.monotonic() - started


def in_threads(n: int, work: Callable[[int], None]) -> None:
    threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)


def ready(s: Setup) -> list[int]:
    """Each replica's /readyz status (0: no answer)."""
    out = []
    for url in s.cluster.replica_urls:
        try:
            out.append(http("GET", url + "/readyz", timeout=5).status)
        except OSError:
            out.append(0)
    return out


def warm_every_worker(s: Setup) -> None:
    """Chat on every replica directly from 32 threads at once, each on new connections: both
    workers of a replica are kept busy enough to accept some, and cache the key (a worker that
    never met a key asks the database for it). Fewer threads let one worker take them all."""
    chat = {"model": "sandbox-chat", "messages": [{"role": "user", "content": "warm"}]}
    for url in s.cluster.replica_urls:

        def warm(_: int, url: str = url) -> None:
            for _ in range(5):
                assert http("POST", url + "/v1/chat/completions", chat, s.auth).status == 200

        in_threads(32, warm)


# --- tests -----------------------------------------------------------------------------------


def test_every_replica_answers_through_nginx_in_turn(up: Setup) -> None:
    """The harness itself: nginx spreads requests round-robin over healthy replicas, and a key
    created through one replica authenticates on all."""
    for url in up.cluster.replica_urls:
        assert http("GET", url + "/readyz").status == 200
    chat = {"model": "sandbox-chat", "messages": [{"role": "user", "content": "hello"}]}
    served: collections.Counter[int] = collections.Counter()
    for _ in range(30):
        res = http("POST", up.cluster.url + "/v1/chat/completions", chat, up.auth)
        assert res.status == 200, res.body
        served[up.cluster.replica_of(res)] += 1
    # 10 each (the harness's nginx runs one worker process, whose round-robin this is).
    assert sorted(served) == [0, 1, 2] and max(served.values()) - min(served.values()) <= 2, served
    for url in up.cluster.replica_urls:
        assert http("POST", url + "/v1/chat/completions", chat, up.auth).status == 200


@pytest.mark.timeout(180)
def test_300_tasks_polled_once_per_round_and_notified_once(up: Setup) -> None:
    up.suno.reset(fetches_per_stage=2)  # 4 stages: 8 polls, half of them with nothing new
    up.kling.reset(polls_per_stage=2)
    accepted: list[tuple[str, str]] = []  # (family, task id)
    lock = threading.Lock()
    started = time.monotonic()

    def client(i: int) -> None:
        for n in range(50):
            family = "video" if (i * 50 + n) % 3 == 0 else "music"
            status, task_id = submit_video(up) if family == "video" else submit_music(up)
            assert status == 200, (status, task_id)
            with lock:
                accepted.append((family, task_id))

    in_threads(6, client)
    submitted = time.monotonic() - started
    ids = [t for _, t in accepted]
    assert len(set(ids)) == 300
    took = all_succeed(up, ids, timeout=90)

    # Fetched through the balancer: each replica serves some of these reads.
    served: collections.Counter[int] = collections.Counter()
    for family, task_id in accepted:
        if family == "music":
            res = http("GET", f"{up.cluster.url}/suno/fetch/{task_id}", headers=up.auth)
            assert res.status == 200 and res.json()["data"]["status"] == "SUCCESS", res.body
        else:
            res = http("GET", f"{up.cluster.url}/kling/v1/videos/text2video/{task_id}", headers=up.auth)
            assert res.status == 200 and res.json()["data"]["task_status"] == "succeed", res.body
        served[up.cluster.replica_of(res)] += 1
    assert sorted(served) == [0, 1, 2], served

    # One poller per task per round, for every task of both upstreams.
    rounds = {**up.suno.polls_per_round(ROUND_GAP), **up.kling.polls_per_round(ROUND_GAP)}
    assert len(rounds) == 300  # this module's first tasks: the fakes saw these alone so far
    polls = sum(len(ids) for ids in up.suno.fetch_calls()) + len(up.kling.polls())
    doubled = {task: n for task, n in rounds.items() if n > 1}
    assert not doubled, f"{len(doubled)} tasks polled twice in one round: {list(doubled.items())[:5]}"

    # Every event the gateway wrote for these tasks was delivered, each exactly once.
    def outbox_drained() -> bool:
        rows = sql(
            up.cluster.database_url,
            "SELECT count(*) AS n FROM webhook_outbox WHERE task_id = ANY($1::text[]) AND state = 'pending'",
            ids,
        )
        return int(rows[0]["n"]) == 0

    until(outbox_drained, "the webhook outbox to drain", timeout=30)
    rows = sql(
        up.cluster.database_url, "SELECT id, state FROM webhook_outbox WHERE task_id = ANY($1::text[])", ids
    )
    assert {r["state"] for r in rows} == {"delivered"}, collections.Counter(r["state"] for r in rows)
    events = {r["id"] for r in rows}
    got = [d.webhook_id for d in up.receiver.snapshot() if d.webhook_id in events]
    twice = [w for w, n in collections.Counter(got).items() if n > 1]
    assert set(got) == events and not twice, f"{len(events - set(got))} missing, {len(twice)} delivered twice"
    assert all(d.valid_signature for d in up.receiver.snapshot())
    print(
        f"\n300 tasks ({sum(f == 'music' for f, _ in accepted)} music, "
        f"{sum(f == 'video' for f, _ in accepted)} video) submitted through nginx in {submitted:.1f} s, "
        f"all SUCCESS {took:.1f} s later; {polls} upstream polls, most polls of one task in one round: "
        f"{max(rounds.values())} (tasks polled twice in a round: {len(doubled)}); fetches served by "
        f"replicas {dict(sorted(served.items()))}; {len(events)} webhook events, {len(set(got))} "
        f"delivered, {len(twice)} twice"
    )


@pytest.mark.timeout(180)
def test_kill_9_of_a_replica_loses_no_task(up: Setup) -> None:
    # Slow polls keep leases held long enough for the victim to die holding some.
    up.suno.reset(fetches_per_stage=2, fetch_delay=0.3)
    victim = 2
    owners = [str(pid) for pid in up.cluster.pids(victim)]
    stop = threading.Event()
    lock = threading.Lock()
    posts: list[tuple[str, int, str]] = []  # (title, status, task id)
    gets: list[int] = []

    def submitter(i: int) -> None:
        n = 0
        while not stop.is_set():
            n += 1
            title = f"kill-{i}-{n}"  # unique: the upstream sees each submit's title
            body = {"prompt": "la", "mv": "chirp-v4", "title": title, "tags": "pop"}
            try:
                res = http("POST", up.cluster.url + "/suno/submit/music", body, up.auth, timeout=15)
                data = res.json().get("data") if res.status == 200 else None
                entry = (title, res.status, data["task_id"] if isinstance(data, dict) else "")
            except (OSError, HTTPException):  # a replica killed mid-answer: cut short
                entry = (title, 0, "")
            with lock:
                posts.append(entry)

    def reader(_: int) -> None:
        while not stop.is_set():
            with lock:
                known = [t for _, status, t in posts if status == 200]
            if not known:
                time.sleep(0.05)
                continue
            try:
                status = http(
                    "GET", f"{up.cluster.url}/suno/fetch/{known[-1]}", headers=up.auth, timeout=15
                ).status
            except (OSError, HTTPException):  # a replica killed mid-answer: cut short
                status = 0
            with lock:
                gets.append(status)

    held_query = (
        "SELECT id, lease_owner FROM tasks WHERE split_part(lease_owner, '-', 1) = ANY($1::text[]) "
        "AND lease_until > extract(epoch from now())"
    )
    threads = [threading.Thread(target=submitter, args=(i,)) for i in range(4)]
    threads += [threading.Thread(target=reader, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    try:
        # Kill the replica while it holds poll leases (the moment its tasks are at risk).
        until(
            lambda: bool(sql(up.cluster.database_url, held_query, owners)),
            "the victim to hold a lease",
            30,
            0.05,
        )
        up.cluster.kill(victim)
        killed = time.monotonic()
        held = {r["id"]: r["lease_owner"] for r in sql(up.cluster.database_url, held_query, owners)}
        time.sleep(3)  # load goes on against the 2 survivors
    finally:
        stop.set()
        for t in threads:
            t.join(30)

    # The victim starts again meanwhile (as its supervisor would restart it): seconds saved.
    up.suno.reset(fetches_per_stage=2)
    restart = ThreadPoolExecutor(1)
    restarted = restart.submit(lambda: _timed(lambda: up.cluster.restart(victim)))

    # The leases it held lapse and other pollers poll those tasks: within the lease time.
    def taken_over() -> bool:
        rows = sql(
            up.cluster.database_url,
            "SELECT id, lease_owner FROM tasks WHERE id = ANY($1::text[])",
            list(held),
        )
        return all(r["lease_owner"] != held[r["id"]] for r in rows)

    until(taken_over, "the dead replica's leases to be taken over", POLL_LEASE + 10, 0.1)
    takeover = time.monotonic() - killed
    assert takeover <= POLL_LEASE + 5, takeover
    back = restarted.result(90)
    restart.shutdown()

    accepted = [t for _, status, t in posts if status == 200]
    refused = collections.Counter(status for _, status, _ in posts if status != 200)
    # Only requests in flight on the dying replica fail, as nginx's 502; new ones go elsewhere.
    assert set(refused) <= {502} and sum(refused.values()) <= 4, refused
    # GETs in flight there are retried by nginx on another replica (idempotent, nothing sent yet).
    assert gets and set(gets) == {200}, collections.Counter(gets)
    # No POST reached the upstream twice (nginx never passes a sent POST on to another replica).
    titles = collections.Counter(s.body.get("title") for s in up.suno.submits())
    twice = [t for t, _, _ in posts if titles[t] > 1]
    assert not twice, twice

    took = all_succeed(up, accepted, timeout=60)
    for task_id in accepted[-20:]:  # and each client sees it finished, through any replica
        res = http("GET", f"{up.cluster.url}/suno/fetch/{task_id}", headers=up.auth)
        assert res.json()["data"]["status"] == "SUCCESS", res.body
    print(
        f"\nkill -9 of replica {victim} under load: {len(posts)} submits ({len(accepted)} accepted, "
        f"all SUCCESS {took:.1f} s after that; refused {dict(refused)}), {len(gets)} fetches "
        f"all 200, no submit sent upstream twice; {len(held)} poll leases held at the kill, taken "
        f"over {takeover:.1f} s after it (lease {POLL_LEASE:.0f} s); replica back in {back:.1f} s"
    )


@pytest.mark.timeout(180)
def test_postgres_restart_loses_no_task(up: Setup) -> None:
    up.suno.reset(fetches_per_stage=1)
    stop = threading.Event()
    lock = threading.Lock()
    posts: list[tuple[int, str]] = []
    chats: list[int] = []

    def submitter(_: int) -> None:
        while not stop.is_set():
            try:
                entry = submit_music(up)
            except (OSError, HTTPException):  # a replica killed mid-answer: cut short
                entry = (0, "")
            with lock:
                posts.append(entry)
            time.sleep(0.05)

    def chatter(_: int) -> None:
        body = {"model": "sandbox-chat", "messages": [{"role": "user", "content": "hi"}]}
        while not stop.is_set():
            try:
                status = http(
                    "POST", up.cluster.url + "/v1/chat/completions", body, up.auth, timeout=15
                ).status
            except (OSError, HTTPException):  # a replica killed mid-answer: cut short
                status = 0
            with lock:
                chats.append(status)

    # Every worker of every replica learns the key first (it caches keys as it meets them; a
    # worker that never met a key has to ask the database, and answers 503 while it is down).
    # Direct and concurrent: new connections, spread over each replica's workers.
    warm_every_worker(up)
    threads = [threading.Thread(target=submitter, args=(i,)) for i in range(2)]
    threads.append(threading.Thread(target=chatter, args=(0,)))
    for t in threads:
        t.start()
    try:
        time.sleep(2)
        up.cluster.stop_postgres()
        to_503 = until(lambda: ready(up) == [503, 503, 503], "every replica's /readyz to say 503", 15, 0.1)
        time.sleep(1)
        up.cluster.start_postgres()
        started = time.monotonic()
        to_200 = until(
            lambda: ready(up) == [200, 200, 200], "every replica's /readyz to be 200 again", 20, 0.1
        )
        time.sleep(2)
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    accepted = [t for status, t in posts if status == 200]
    refused = collections.Counter(status for status, _ in posts if status != 200)
    assert set(refused) <= {503}, refused  # a clean "database unavailable", nothing half-done
    assert chats and set(chats) == {200}, collections.Counter(chats)  # chat needs no database
    all_succeed(up, accepted, timeout=60)
    # Tasks a poller held when the database went away are released by it once the database
    # answers (tasks/poller.py), not left until their 20 s leases lapse: all done soon after.
    took = time.monotonic() - started
    assert took < POLL_LEASE / 2, took

    def notified() -> set[str]:
        return {
            d.body["data"]["task_id"]
            for d in up.receiver.snapshot()
            if d.body.get("data", {}).get("status") == "SUCCESS"
        }

    # Deliveries the database outage interrupted are marked once it is back (tasks/outbox.py),
    # not left to their 45 s leases: no task's later events wait behind them, none is sent twice.
    try:
        until(lambda: notified() >= set(accepted), "the final webhook of every accepted task", 20)
    except AssertionError:
        missing = list(set(accepted) - notified())
        rows = sql(
            up.cluster.database_url,
            "SELECT task_id, state, attempts, last_error, lease_until - extract(epoch from now()) "
            "AS lease_in, next_attempt_at - extract(epoch from now()) AS due_in FROM webhook_outbox "
            "WHERE task_id = ANY($1::text[]) AND state <> 'delivered' ORDER BY created_at",
            missing,
        )
        raise AssertionError(
            f"{len(missing)} tasks without their final webhook: {[dict(r) for r in rows]}"
        ) from None
    notified_after = time.monotonic() - started
    sent = collections.Counter(
        d.webhook_id for d in up.receiver.snapshot() if d.body.get("data", {}).get("task_id") in set(accepted)
    )
    twice = [w for w, n in sent.items() if n > 1]
    assert not twice, f"{len(twice)} webhook events delivered twice"
    print(
        f"\nPostgreSQL restart under load: /readyz 503 on all replicas {to_503:.1f} s after the stop, 200 "
        f"{to_200:.1f} s after the start; {len(posts)} submits: {len(accepted)} accepted (all SUCCESS "
        f"{took:.1f} s after the start, final webhooks {notified_after:.1f} s after it, "
        f"{len(sent)} events, none twice), refused {dict(refused)}; "
        f"{len(chats)} chats all 200"
    )


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [])


def test_a_responses_chain_across_replicas_keeps_its_history(up: Setup) -> None:
    client = openai.OpenAI(base_url=up.cluster.url + "/v1", api_key=up.key, max_retries=0)
    previous: str | None = None
    served = []
    for turn in range(4):
        kwargs: dict[str, Any] = {"previous_response_id": previous} if previous else {}
        raw = client.responses.with_raw_response.create(model="fake-chat", input=f"turn {turn}", **kwargs)
        served.append(up.cluster.replica_of(raw))
        previous = raw.parse().id
    assert len(set(served)) == 3, served  # round-robin: consecutive turns on different replicas
    # The last turn's upstream call carried the whole conversation, in order.
    messages = up.chat.received[-1].body["messages"]
    assert [(m["role"], _text(m["content"])) for m in messages] == [
        pair
        for turn in range(4)
        for pair in [("user", f"turn {turn}"), ("assistant", up.chat.reply_text)][: 2 if turn < 3 else 1]
    ]
    for url in up.cluster.replica_urls:  # stored once, readable everywhere
        there = openai.OpenAI(base_url=url + "/v1", api_key=up.key, max_retries=0)
        assert previous is not None and there.responses.retrieve(previous).previous_response_id is not None
    print(f"\nResponses chain of 4 turns served by replicas {served}")


def test_a_background_response_is_fetched_and_cancelled_through_other_replicas(up: Setup) -> None:
    clients = [
        openai.OpenAI(base_url=url + "/v1", api_key=up.key, max_retries=0) for url in up.cluster.replica_urls
    ]
    before = up.slow.cancelled
    accepted = clients[0].responses.create(model="slow-chat", input="A long story", background=True)
    assert accepted.status == "queued"
    until(
        lambda: clients[1].responses.retrieve(accepted.id).status == "in_progress",
        "the run to start",
        15,
        0.05,
    )
    cancelled = clients[2].responses.cancel(accepted.id)
    assert cancelled.status == "cancelled" and cancelled.id == accepted.id
    # The replica running it notices (its lease renewal) and drops the upstream call.
    noticed = until(lambda: up.slow.cancelled > before, "the upstream call to be dropped", 15, 0.05)
    time.sleep(1)
    assert {c.responses.retrieve(accepted.id).status for c in clients} == {"cancelled"}
    print(
        f"\nbackground response started on replica 0, cancelled through replica 2: "
        f"run stopped {noticed:.1f} s later"
    )


def test_unigate_migrate_run_by_many_at_once_on_a_fresh_database(up: Setup) -> None:
    """Before the advisory lock in store/db.py:migrate, replicas started together on an empty
    PostgreSQL database died on a duplicate CREATE TABLE alembic_version."""
    url = _fresh_postgres_database(up.cluster.database_url, "migrate_race")
    env = {**os.environ, "UNIGATE_DATABASE_URL": url}

    def migrate(_: int) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "unigate", "migrate"]
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=False)

    with ThreadPoolExecutor(3) as pool:
        runs = list(pool.map(migrate, range(3)))
    for run in runs:
        assert run.returncode == 0, run.stderr
        assert run.stdout.startswith("database schema at revision "), run.stdout
    assert len({run.stdout for run in runs}) == 1
