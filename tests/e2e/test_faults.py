"""Fault injection on loopback, each test printing its figures: a fault proxy between the
gateway and one of two fake upstreams (resets, half-open connections, truncated bodies, header
floods, latency, trickling bodies) with the success rate through fallback and the time the
route takes to recover; and PostgreSQL stopped and restarted under load, with no accepted task
or webhook lost."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.support.fake_openai import FakeOpenAI
from tests.support.fault_proxy import FaultProxy
from tests.support.gateway import GatewayProcess
from tests.support.net import http
from tests.support.postgres import postgres_cluster
from tests.support.receiver import WebhookReceiver

pytestmark = [pytest.mark.process, pytest.mark.services]

# mode -> the route that must answer while the fault is on
FAULTS = {
    "reset": "secondary",
    "half_open": "secondary",
    "truncate": "secondary",
    "header_flood": "secondary",
    "latency": "primary",
    "slow_body": "primary",
}


def test_upstream_faults_fall_back_and_recover(tmp_path: Path) -> None:
    with (
        FakeOpenAI(reply_text="primary") as first,
        FakeOpenAI(reply_text="secondary") as second,
        FaultProxy(first.port, delay=0.02, chunk=64) as proxy,
    ):
        config = {
            "providers": [
                {"name": "p", "protocol": "openai", "base_url": proxy.base_url, "read_timeout": 1.0},
                {"name": "s", "protocol": "openai", "base_url": second.base_url},
            ],
            "models": [
                {
                    "name": "m",
                    "routes": [{"provider": "p", "priority": 0}, {"provider": "s", "priority": 1}],
                }
            ],
            "routing": {"cooldown_after_failures": 3, "cooldown_seconds": 2},
        }
        with GatewayProcess(tmp_path, config=config) as gw:
            client = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=gw.create_key(), max_retries=0)
            rows = []
            for mode, expected in FAULTS.items():
                proxy.delay = 0.2 if mode == "latency" else 0.02  # slow_body: 64 bytes per 20 ms
                proxy.set_mode(mode)
                answers, took = [], []
                for _ in range(8):
                    started = time.monotonic()
                    reply = client.chat.completions.create(
                        model="m", messages=[{"role": "user", "content": "hi"}]
                    )
                    took.append(time.monotonic() - started)
                    answers.append(reply.choices[0].message.content)
                assert answers.count(expected) == 8, (mode, answers)
                proxy.set_mode("pass")
                started = time.monotonic()
                while _ask(client) != "primary":  # the cooled-down route comes back
                    assert time.monotonic() - started < 10, f"{mode}: the route never recovered"
                    time.sleep(0.1)
                recovery = time.monotonic() - started
                took.sort()
                rows.append((mode, expected, took[len(took) // 2], took[-1], recovery))
            failures = gw.log().count("unigate.routing")
    print("\nfault         success  served by   p50 s   max s   recovery s")
    for mode, expected, p50, worst, recovery in rows:
        print(f"{mode:13} {'8/8':8} {expected:10} {p50:6.3f}  {worst:6.3f}   {recovery:6.2f}")
    print(f"routing log lines (failures, fallbacks, cooldowns): {failures}")


def _ask(client: openai.OpenAI) -> str:
    reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    return reply.choices[0].message.content or ""


@pytest.mark.timeout(240)
def test_postgres_restart_under_load(tmp_path: Path) -> None:
    with postgres_cluster() as cluster, WebhookReceiver() as receiver:
        config = {
            "sandbox": {"enabled": True, "music_seconds": 1.0},
            "tasks": {
                "poll_interval": 0.3,
                "max_poll_interval": 1.0,
                "webhook_retry_schedule": [0, 0.5, 1, 1, 2, 2, 4],
            },
        }
        env = {"UNIGATE_DATABASE_URL": cluster.url, "UNIGATE_ALLOW_PRIVATE_WEBHOOKS": "1"}
        with GatewayProcess(tmp_path, config=config, env=env) as gw:
            key = gw.create_key()
            headers = {"Authorization": f"Bearer {key}"}
            stop = threading.Event()
            chats: list[int] = []
            submits: list[tuple[float, int, str]] = []  # (time, status, task id)

            def chat_load() -> None:
                while not stop.is_set():
                    body = {"model": "sandbox-chat", "messages": [{"role": "user", "content": "hi"}]}
                    try:
                        chats.append(
                            http(
                                "POST", gw.base_url + "/v1/chat/completions", body, headers, timeout=10
                            ).status
                        )
                    except OSError:
                        chats.append(0)

            def submit_load() -> None:
                while not stop.is_set():
                    body: dict[str, Any] = {
                        "prompt": "la",
                        "mv": "chirp-v4",
                        "title": "t",
                        "tags": "pop",
                        "notify_hook": receiver.url,
                    }
                    try:
                        res = http("POST", gw.base_url + "/suno/submit/music", body, headers, timeout=15)
                        task = res.json().get("data") if res.status == 200 else None
                        submits.append(
                            (time.monotonic(), res.status, task["task_id"] if isinstance(task, dict) else "")
                        )
                    except OSError:
                        submits.append((time.monotonic(), 0, ""))
                    time.sleep(0.05)

            threads = [threading.Thread(target=chat_load), threading.Thread(target=submit_load)]
            for t in threads:
                t.start()
            time.sleep(2)
            cluster.stop()
            down_at = time.monotonic()
            time.sleep(3)
            cluster.start()
            up_at = time.monotonic()
            time.sleep(6)
            stop.set()
            for t in threads:
                t.join(30)

            accepted = [task for _, status, task in submits if status == 200]
            refused = [status for _, status, _ in submits if status != 200]
            during = [s for when, s, _ in submits if down_at <= when <= up_at]
            first_ok_after = next((when - up_at for when, s, _ in submits if when > up_at and s == 200), None)
            assert set(refused) <= {503}, f"a refused submit must be a clean 503, got {sorted(set(refused))}"
            assert chats and chats.count(200) == len(chats), f"chat needs no database: {sorted(set(chats))}"
            # Every accepted task finishes and its final webhook arrives: nothing accepted is lost.
            deadline = time.monotonic() + 60
            pending = set(accepted)
            while pending and time.monotonic() < deadline:
                for task_id in list(pending):
                    if "SUCCESS" in receiver.statuses(task_id):
                        pending.discard(task_id)
                time.sleep(0.5)
            assert not pending, f"{len(pending)} accepted tasks never finished with a webhook"
    print(
        f"\npostgres restart: chat {len(chats)} calls, {chats.count(200)} ok; submits {len(submits)}: "
        f"{len(accepted)} accepted (all finished, all final webhooks delivered), {len(refused)} refused "
        f"with 503 ({len(during)} while the database was down); first accepted submit "
        f"{first_ok_after:.2f} s after the restart"
        if first_ok_after is not None
        else "no submit after restart"
    )
