"""notify_hook delivery against the real server: signed Standard Webhooks events for every
status change, retries, at-least-once across a kill -9, and SSRF refusals."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.gateway import GatewayProcess
from tests.support.net import http
from tests.support.receiver import WebhookReceiver
from tests.support.served import ServedGateway

FAST = {
    "providers": [{"name": "sandbox", "protocol": "sandbox"}],
    "models": [{"name": "chirp-v4", "routes": [{"provider": "sandbox"}]}],
    "sandbox": {"music_seconds": 2.5},
    "tasks": {
        "poll_interval": 0.3,
        "max_poll_interval": 1.0,
        "webhook_retry_schedule": [0, 0.3, 0.3, 0.5, 0.5, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1],
        # A delivery in flight when a process is killed is leased for 2 x this + 5 s.
        "webhook_timeout": 3,
    },
}
PRIVATE_OK = {"UNIGATE_ALLOW_PRIVATE_WEBHOOKS": "1"}


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    hook = WebhookReceiver().start()
    yield hook
    hook.stop()


def _key(gw: ServedGateway, receiver: WebhookReceiver) -> str:
    record = gw.create_key_record(name="hooks")
    receiver.secret = gw.admin("GET", f"/admin/keys/{record['id']}").json()["webhook_secret"]
    return str(record["key"])


def _submit(gw: ServedGateway, key: str, hook: str, prompt: str = "a song about rivers") -> Any:
    return http(
        "POST",
        gw.base_url + "/suno/submit/music",
        {"prompt": prompt, "title": "Rivers", "tags": "folk", "mv": "chirp-v4", "notify_hook": hook},
        {"Authorization": f"Bearer {key}"},
    )


def _wait(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_every_status_change_is_delivered_signed(
    gateway_factory: Callable[..., ServedGateway], receiver: WebhookReceiver
) -> None:
    gw = gateway_factory(FAST, env=PRIVATE_OK)
    key = _key(gw, receiver)
    res = _submit(gw, key, receiver.url)
    assert res.status == 200
    task_id = res.json()["data"]["task_id"]
    assert res.json()["data"]["notify_hook"] == receiver.url
    _wait(lambda: "SUCCESS" in receiver.statuses(task_id), 20, "the SUCCESS event")
    statuses = receiver.statuses(task_id)
    assert statuses[0] == "SUBMITTED" and statuses[-1] == "SUCCESS"
    order = ["SUBMITTED", "QUEUED", "IN_PROGRESS", "SUCCESS"]
    ranks = [order.index(status) for status in statuses]
    assert ranks == sorted(ranks), statuses  # delivered in the order they happened
    # A state the upstream passed through between two polls is never seen (the sandbox's queue
    # lasts a fraction of a second; a loaded machine polls late): what was seen was delivered.
    assert {"QUEUED", "IN_PROGRESS"} & set(statuses), statuses
    deliveries = [d for d in receiver.snapshot() if d.body["data"]["task_id"] == task_id]
    assert all(d.valid_signature for d in deliveries)
    assert len({d.webhook_id for d in deliveries}) == len(deliveries), "one webhook-id per event"
    assert all(abs(d.timestamp - time.time()) < 60 for d in deliveries)
    final = deliveries[-1].body
    assert final["code"] == "success" and final["data"]["audio_url"].startswith("http://")
    admin_view = gw.admin("GET", f"/admin/tasks/{task_id}")
    assert admin_view.status == 200, admin_view.body
    events = admin_view.json()["events"]
    assert events and all(e["state"] == "delivered" for e in events)
    assert len(events) == len(deliveries), "every event the gateway recorded was delivered, once"


def test_receiver_failing_twice_still_gets_every_event(
    gateway_factory: Callable[..., ServedGateway], receiver: WebhookReceiver
) -> None:
    gw = gateway_factory(FAST, env=PRIVATE_OK)
    key = _key(gw, receiver)
    receiver.fail_next = 2
    task_id = _submit(gw, key, receiver.url).json()["data"]["task_id"]
    _wait(lambda: "SUCCESS" in receiver.statuses(task_id), 25, "the SUCCESS event")

    def all_delivered() -> bool:
        events = gw.admin("GET", f"/admin/tasks/{task_id}").json()["events"]
        return all(e["state"] == "delivered" for e in events)

    _wait(all_delivered, 10, "every event delivered")
    events = gw.admin("GET", f"/admin/tasks/{task_id}").json()["events"]
    received_ids = {d.webhook_id for d in receiver.snapshot()}
    assert {e["id"] for e in events} <= received_ids, "each outbox event reached the receiver"
    assert receiver.attempts >= len(events) + 2
    assert any(e["attempts"] >= 2 for e in events), "the first events were retried"


def test_receiver_answering_410_gets_no_further_event_of_that_task(
    gateway_factory: Callable[..., ServedGateway], receiver: WebhookReceiver
) -> None:
    """410 Gone ends the hook for that task: the event is not retried, later events of the
    task are never sent (recorded as skipped), the admin view says `gone`, a log line says
    why. Another task's hook keeps working."""
    gw = gateway_factory(FAST, env=PRIVATE_OK)
    key = _key(gw, receiver)
    receiver.gone = True
    task_id = _submit(gw, key, receiver.url).json()["data"]["task_id"]
    _wait(lambda: len(receiver.statuses(task_id)) == 1, 10, "the first (410-answered) delivery")
    receiver.gone = False  # a later event would now be accepted: none must come
    headers = {"Authorization": f"Bearer {key}"}

    def finished() -> bool:
        record = http("GET", f"{gw.base_url}/suno/fetch/{task_id}", headers=headers).json()["data"]
        return bool(record["status"] == "SUCCESS")

    _wait(finished, 20, "the task to finish")
    other = _submit(gw, key, receiver.url, "another song").json()["data"]["task_id"]
    _wait(lambda: "SUCCESS" in receiver.statuses(other), 20, "the other task's SUCCESS event")
    assert receiver.statuses(task_id) == ["SUBMITTED"], "one delivery, no retry, no later event"
    view = gw.admin("GET", f"/admin/tasks/{task_id}").json()
    assert view["webhook"] == "gone"
    states = [e["state"] for e in view["events"]]
    assert states[0] == "gone" and len(states) > 1 and set(states[1:]) == {"skipped"}, states
    assert view["events"][0]["attempts"] == 1 and "410" in view["events"][0]["last_error"]
    assert gw.admin("GET", f"/admin/tasks/{other}").json()["webhook"] == "active"
    assert f"for task {task_id}: the endpoint answered 410 Gone" in gw.log()


@pytest.mark.process
def test_kill_9_loses_no_task_and_no_event(tmp_path: Path, receiver: WebhookReceiver) -> None:
    gw = GatewayProcess(tmp_path, config=FAST, env=PRIVATE_OK).start()
    key = _key(gw, receiver)
    receiver.down = True  # deliveries pile up in the outbox
    ids = [_submit(gw, key, receiver.url, f"song number {i}").json()["data"]["task_id"] for i in range(5)]
    time.sleep(1.0)  # tasks are running, deliveries failing
    gw.kill()
    receiver.down = False
    restarted = GatewayProcess(tmp_path, config=FAST, env=PRIVATE_OK)
    restarted.port, restarted.base_url = gw.port, gw.base_url
    restarted.log_path = tmp_path / "restarted.log"
    restarted.start()
    try:
        headers = {"Authorization": f"Bearer {key}"}

        def finished() -> bool:
            records = [
                http("GET", f"{restarted.base_url}/suno/fetch/{i}", headers=headers).json()["data"]
                for i in ids
            ]
            return all(r["status"] == "SUCCESS" for r in records)

        _wait(finished, 60, "every task to finish after the restart (leases of the killed process expire)")
        for task_id in ids:
            _wait(lambda t=task_id: "SUCCESS" in receiver.statuses(t), 20, f"SUCCESS event of {task_id}")
            events = restarted.admin("GET", f"/admin/tasks/{task_id}").json()["events"]
            _wait(
                lambda t=task_id: all(
                    e["state"] == "delivered"
                    for e in restarted.admin("GET", f"/admin/tasks/{t}").json()["events"]
                ),
                20,
                "delivery of every event",
            )
            received = {d.webhook_id for d in receiver.snapshot()}
            assert {e["id"] for e in events} <= received
            assert receiver.statuses(task_id)[0] == "SUBMITTED"
    finally:
        restarted.stop()


def _loopback_hostname() -> str:
    name = socket.gethostname()
    addresses = {info[4][0] for info in socket.getaddrinfo(name, 80)}
    assert addresses and all(a.startswith("127.") or a == "::1" for a in addresses), (
        f"precondition: the machine's hostname {name!r} resolves to loopback ({addresses})"
    )
    return name


@pytest.mark.parametrize(
    "hook",
    [
        "http://127.0.0.1:9/x",
        "http://10.0.0.1/x",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/x",
        "http://localhost/x",
        "ftp://example.com/x",
    ],
)
def test_private_hooks_refused_at_submit(sandbox_gateway: ServedGateway, hook: str) -> None:
    key = sandbox_gateway.create_key()
    res = _submit(sandbox_gateway, key, hook)
    assert res.status == 400
    body = res.json()
    assert body["data"] is None and body["code"] == "invalid_request" and "notify_hook" in body["message"]


def test_hostname_resolving_to_loopback_refused_at_delivery(
    gateway_factory: Callable[..., ServedGateway], receiver: WebhookReceiver
) -> None:
    gw = gateway_factory(FAST)
    key = _key(gw, receiver)
    hook = f"http://{_loopback_hostname()}:{receiver.port}/hook"
    res = _submit(gw, key, hook)
    assert res.status == 200, "the name is not private by itself; the dialled address is checked"
    task_id = res.json()["data"]["task_id"]

    def refused() -> bool:
        events = gw.admin("GET", f"/admin/tasks/{task_id}").json()["events"]
        return bool(events) and all(e["state"] == "failed" for e in events)

    _wait(refused, 20, "the events to be refused")
    events = gw.admin("GET", f"/admin/tasks/{task_id}").json()["events"]
    assert all("refused" in e["last_error"] for e in events)
    assert receiver.attempts == 0, "nothing was ever sent to the loopback address"
