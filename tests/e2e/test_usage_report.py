"""Usage and cost reports (`GET /admin/usage`, `unigate usage`), the request log
(`GET /admin/requests`) and the task list (`GET /admin/tasks`) against the real server, after
known traffic: chat calls, a stream, a failed route (502) and a music task with a webhook."""

from __future__ import annotations

import contextlib
import csv
import io
import re
import shlex
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.support.gateway import ADMIN_KEY
from tests.support.net import http
from tests.support.readme import section
from tests.support.receiver import WebhookReceiver
from tests.support.served import ServedGateway
from tests.support.waits import until

CONFIG = {
    "providers": [
        {
            "name": "dead",  # a closed port: every call to it fails its route
            "protocol": "openai",
            "base_url": "http://127.0.0.1:9/v1",
            "api_key": "sk",  # pragma: allowlist secret
        }
    ],
    "models": [
        {"name": "sandbox-chat", "routes": [{"provider": "sandbox"}], "price_per_call": 0.25},
        {"name": "dead-chat", "routes": [{"provider": "dead"}]},
    ],
    "sandbox": {"enabled": True, "music_seconds": 1.0},
    "tasks": {"poll_interval": 0.3, "max_poll_interval": 1.0},
}
_METRIC_ORDER = ["requests", "prompt_tokens", "completion_tokens", "cost", "errors", "mean_latency_ms"]
METRICS = set(_METRIC_ORDER)


@dataclass
class Traffic:
    gw: ServedGateway
    a: str  # key id: 2 chat calls, 1 stream, 1 music task
    b: str  # key id: 1 chat call, 1 call to a dead route
    task_id: str
    started: float


@pytest.fixture(scope="module")
def traffic(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Traffic]:
    started = time.time()
    env = {"UNIGATE_ALLOW_PRIVATE_WEBHOOKS": "1"}
    with ServedGateway(tmp_path_factory.mktemp("usage"), config=CONFIG, env=env) as gw:
        a, b = gw.create_key_record(name="a"), gw.create_key_record(name="b")
        chat_a = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=a["key"], max_retries=0)
        chat_b = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=b["key"], max_retries=0)
        hello = [{"role": "user", "content": "hello there"}]
        for _ in range(2):
            chat_a.chat.completions.create(model="sandbox-chat", messages=hello)  # type: ignore[arg-type]
        stream = chat_a.chat.completions.create(
            model="sandbox-chat",
            messages=hello,  # type: ignore[arg-type]
            stream=True,
            stream_options={"include_usage": True},
        )
        assert any(chunk.usage for chunk in stream)
        chat_b.chat.completions.create(model="sandbox-chat", messages=hello)  # type: ignore[arg-type]
        with pytest.raises(openai.APIStatusError) as failed:
            chat_b.chat.completions.create(model="dead-chat", messages=hello)  # type: ignore[arg-type]
        assert failed.value.status_code >= 500
        receiver = WebhookReceiver().start()
        try:
            task_id = _music_task(gw, a["key"], receiver.url)
        finally:
            receiver.stop()
        yield Traffic(gw, a["id"], b["id"], task_id, started)


def _music_task(gw: ServedGateway, key: str, hook: str) -> str:
    res = http(
        "POST",
        gw.base_url + "/suno/submit/music",
        {"prompt": "a song about reports", "mv": "chirp-v4", "notify_hook": hook},
        {"Authorization": f"Bearer {key}"},
    )
    assert res.status == 200, res.body
    task_id = str(res.json()["data"]["task_id"])
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        view = gw.admin("GET", f"/admin/tasks/{task_id}").json()
        if view["status"] == "SUCCESS" and all(e["state"] == "delivered" for e in view["events"]):
            return task_id
        time.sleep(0.2)
    raise AssertionError("the music task did not finish with its webhooks delivered")


def _usage(t: Traffic, query: str = "") -> list[dict[str, Any]]:
    res = t.gw.admin("GET", "/admin/usage" + query)
    assert res.status == 200, res.body
    body = res.json()
    assert body["object"] == "list"
    return list(body["data"])


def _of(rows: list[dict[str, Any]], **match: Any) -> list[dict[str, Any]]:
    return [r for r in rows if all(r.get(k) == v for k, v in match.items())]


def test_default_answer_keeps_its_shape(traffic: Traffic) -> None:
    rows = _usage(traffic)
    for row in rows:
        assert set(row) == {"key_id", "endpoint", "model"} | METRICS, row
    [chat] = _of(rows, key_id=traffic.a, endpoint="chat", model="sandbox-chat")
    assert chat["requests"] == 3 and chat["errors"] == 0  # two calls and the stream
    assert chat["prompt_tokens"] > 0 and chat["completion_tokens"] > 0
    assert chat["cost"] == pytest.approx(0.75)
    assert chat["mean_latency_ms"] > 0
    [music] = _of(rows, key_id=traffic.a, model="chirp-v4")
    assert music["endpoint"] == "music.MUSIC" and music["requests"] == 1


def test_grouped_by_key_and_by_model_and_provider(traffic: Traffic) -> None:
    by_key = {r["key_id"]: r for r in _usage(traffic, "?group_by=key")}
    assert set(by_key[traffic.a]) == {"key_id"} | METRICS
    assert by_key[traffic.a]["requests"] == 4 and by_key[traffic.a]["errors"] == 0
    assert by_key[traffic.b]["requests"] == 2 and by_key[traffic.b]["errors"] == 1
    assert by_key[traffic.b]["cost"] == pytest.approx(0.25), "a failed call costs nothing"
    rows = _usage(traffic, "?group_by=model,provider")
    [dead] = _of(rows, model="dead-chat")
    # No route answered, so no provider is recorded for it.
    assert dead == {**dead, "provider": "", "requests": 1, "errors": 1, "cost": 0.0}
    assert _of(rows, model="sandbox-chat", provider="sandbox")[0]["requests"] == 4
    [total] = _usage(traffic, "?group_by=")
    assert set(total) == METRICS and total["requests"] == 6 and total["errors"] == 1


@pytest.mark.parametrize(("bucket", "width"), [("minute", 60), ("hour", 3600), ("day", 86400)])
def test_time_buckets_are_aligned_in_utc(traffic: Traffic, bucket: str, width: int) -> None:
    rows = _usage(traffic, f"?group_by=key&bucket={bucket}")
    assert rows
    for row in rows:
        assert row["bucket_start"] % width == 0
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(row["bucket_start"]))
        assert row["bucket"] == stamp
        assert traffic.started - width < row["bucket_start"] <= time.time()
    assert sum(r["requests"] for r in _of(rows, key_id=traffic.a)) == 4
    starts = [r["bucket_start"] for r in rows]
    assert starts == sorted(starts), "oldest bucket first"


def test_since_and_until_take_unix_seconds_and_iso_8601(traffic: Traffic) -> None:
    everything = sum(r["requests"] for r in _usage(traffic, "?group_by="))
    assert everything == 6
    before = int(traffic.started) - 5
    assert sum(r["requests"] for r in _usage(traffic, f"?group_by=&since={before}")) == 6
    assert _usage(traffic, f"?group_by=&until={before}") == []
    iso = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(before))
    assert sum(r["requests"] for r in _usage(traffic, f"?group_by=&since={iso}")) == 6
    assert _usage(traffic, "?group_by=&since=2999-01-01") == []
    offset = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(before)).replace("+", "%2B")
    assert sum(r["requests"] for r in _usage(traffic, f"?group_by=&since={offset}")) == 6


def test_csv_by_parameter_or_accept_header(traffic: Traffic) -> None:
    rows = _usage(traffic, "?group_by=key,model&bucket=hour")
    by_param = traffic.gw.admin("GET", "/admin/usage?group_by=key,model&bucket=hour&format=csv")
    by_accept = http(
        "GET",
        traffic.gw.base_url + "/admin/usage?group_by=key,model&bucket=hour",
        headers={"Authorization": f"Bearer {ADMIN_KEY}", "Accept": "text/csv"},
    )
    for res in (by_param, by_accept):
        assert res.status == 200 and res.headers["content-type"].startswith("text/csv"), res.headers
        table = list(csv.DictReader(io.StringIO(res.body.decode())))
        assert list(table[0]) == [*rows[0]]
        assert [{k: "" if v is None else str(v) for k, v in r.items()} for r in rows] == table
    assert _usage(traffic, "?group_by=key,model&bucket=hour&format=json") == rows


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ("group_by=team", "group_by"),
        ("group_by=key,,model", "group_by"),
        ("bucket=week", "bucket"),
        ("bucket=", "bucket"),
        ("since=yesterday", "since"),
        ("since=-5", "since"),
        ("since=1e300", "since"),
        ("since=nan", "since"),
        ("until=10000-01-01", "until"),
        ("since=2026-02-01&until=2026-01-01", "until"),
        ("format=xml", "format"),
        ("limit=5", "limit"),
        ("since=1&since=2", "since"),
    ],
)
def test_usage_refuses_bad_parameters_naming_them(traffic: Traffic, query: str, param: str) -> None:
    res = traffic.gw.admin("GET", "/admin/usage?" + query)
    assert res.status == 400, res.body
    error = res.json()["error"]
    assert error["type"] == "invalid_request_error" and error["param"] == param, error
    assert param in error["message"]


def test_recent_requests_newest_first_with_filters(traffic: Traffic) -> None:
    gw = traffic.gw
    rows = gw.admin("GET", "/admin/requests").json()["data"]
    assert all(not r["path"].startswith("/admin/") for r in rows), "the admin's own calls are not logged"
    times = [r["created_at"] for r in rows]
    assert times == sorted(times, reverse=True)
    mine = gw.admin("GET", f"/admin/requests?key_id={traffic.a}").json()["data"]
    chats = [r for r in mine if r["path"] == "/v1/chat/completions"]
    assert len(chats) == 3 and all(r["status"] == 200 and r["model"] == "sandbox-chat" for r in chats)
    assert all(r["route"] == "sandbox/sandbox-chat" and r["latency_ms"] > 0 for r in chats)
    assert {"request_id", "method", "outcome"} <= set(chats[0])
    [failed] = gw.admin("GET", "/admin/requests?status=5xx").json()["data"]
    assert failed["model"] == "dead-chat" and failed["key_id"] == traffic.b
    assert gw.admin("GET", f"/admin/requests?status=error&key_id={traffic.b}").json()["data"] == [failed]
    assert len(gw.admin("GET", "/admin/requests?limit=1").json()["data"]) == 1
    assert gw.admin("GET", "/admin/requests?status=201").json()["data"] == []
    for query, param in [
        ("limit=0", "limit"),
        ("limit=1001", "limit"),
        ("limit=ten", "limit"),
        ("status=6xx", "status"),
        ("status=ok", "status"),
        ("key_id=" + "k" * 41, "key_id"),
        ("since=1", "since"),
    ]:
        res = gw.admin("GET", "/admin/requests?" + query)
        assert res.status == 400 and res.json()["error"]["param"] == param, (query, res.body)


def test_task_list_shows_status_and_webhook_delivery(traffic: Traffic) -> None:
    gw = traffic.gw
    rows = gw.admin("GET", "/admin/tasks").json()["data"]
    [task] = [r for r in rows if r["id"] == traffic.task_id]
    assert task["status"] == "SUCCESS" and task["key_id"] == traffic.a and task["family"] == "music"
    assert task["webhook"] == "active" and task["webhook_delivery"] == "delivered"
    assert task["webhook_events"].get("delivered", 0) >= 2 and set(task["webhook_events"]) == {"delivered"}
    assert (
        gw.admin("GET", "/admin/tasks?status=SUCCESS&key_id=" + traffic.a).json()["data"][0]["id"]
        == task["id"]
    )
    assert gw.admin("GET", "/admin/tasks?status=FAILURE").json()["data"] == []
    assert gw.admin("GET", "/admin/tasks?key_id=" + traffic.b).json()["data"] == []
    for query, param in [("status=DONE", "status"), ("limit=501", "limit"), ("order=asc", "order")]:
        res = gw.admin("GET", "/admin/tasks?" + query)
        assert res.status == 400 and res.json()["error"]["param"] == param, (query, res.body)


def test_usage_requires_the_admin_key(traffic: Traffic) -> None:
    for path in ("/admin/usage", "/admin/requests", "/admin/tasks"):
        assert http("GET", traffic.gw.base_url + path).status == 401


# --- unigate usage ---------------------------------------------------------------------------


def _cli(gw: ServedGateway, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "unigate", "usage", *args],
        env=gw.env,
        cwd=gw.workdir,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.process  # runs the `unigate` CLI
def test_cli_prints_the_same_report(traffic: Traffic) -> None:
    proc = _cli(traffic.gw, "--group-by", "key,model", "--bucket", "hour", "--csv")
    assert proc.returncode == 0, proc.stderr
    api = traffic.gw.admin("GET", "/admin/usage?group_by=key,model&bucket=hour&format=csv")
    assert proc.stdout.replace("\r\n", "\n") == api.body.decode().replace("\r\n", "\n")
    table = _cli(traffic.gw, "--group-by", "key", "--since", "2000-01-01")
    assert table.returncode == 0, table.stderr
    assert traffic.a in table.stdout and "requests" in table.stdout and "mean_latency_ms" in table.stdout
    print(table.stdout)
    default = _cli(traffic.gw)
    assert default.returncode == 0 and "music.MUSIC" in default.stdout
    empty = _cli(traffic.gw, "--since", "2999-01-01")
    assert empty.returncode == 0 and "no usage in this range" in empty.stdout


@pytest.mark.process  # runs the `unigate` CLI
@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--bucket", "week"], "--bucket"),
        (["--group-by", "team"], "--group-by"),
        (["--since", "yesterday"], "--since"),
        (["--since", "2026-02-01", "--until", "2026-01-01"], "--until"),
    ],
)
def test_cli_refuses_bad_options_in_one_line(traffic: Traffic, args: list[str], named: str) -> None:
    proc = _cli(traffic.gw, *args)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {named}"), proc.stderr


# --- the documented examples (docs/limits.md, docs/operations.md), run as written -----------


def _run_python(block: str, gw: ServedGateway) -> list[str]:
    code = block.replace("http://127.0.0.1:8000", gw.base_url).replace('"uga_..."', repr(ADMIN_KEY))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs", "exec"), {})
    return out.getvalue().splitlines()


@pytest.mark.process  # runs the `unigate` CLI
def test_readme_usage_and_cost_examples(traffic: Traffic) -> None:
    text = section("Usage and cost")
    [python] = re.findall(r"```python\n(.*?)```", text, re.S)
    lines = _run_python(python, traffic.gw)
    assert any(line.split()[1:4] == [traffic.a, "sandbox-chat", "3"] for line in lines), lines
    assert lines[-1] == str(["model", *_METRIC_ORDER])
    [shell] = re.findall(r"```sh\n(.*?)```", text, re.S)
    for command in shell.strip().splitlines():
        args = shlex.split(command)
        assert args[:2] == ["unigate", "usage"]
        proc = _cli(traffic.gw, *args[2:])
        assert proc.returncode == 0, (command, proc.stderr)
        assert "sandbox-chat" in proc.stdout


def test_readme_dashboard_example(traffic: Traffic) -> None:
    [python] = re.findall(r"```python\n(.*?)```", section("Dashboard"), re.S)
    lines = _run_python(python, traffic.gw)
    assert lines[0].split()[0] == "502" and "dead-chat" in lines[0], lines
    assert lines[-1] == f"{traffic.task_id} SUCCESS active delivered", lines


def test_usage_is_written_every_flush_seconds(tmp_path: Path) -> None:
    """`usage.flush_seconds`: three calls, each waited for until its row is in the database
    (what other workers and replicas read), take three flushes; at 0.1 s they are all in well
    within a second (at the default 1 s, two)."""
    config = {"sandbox": {"enabled": True}, "usage": {"flush_seconds": 0.1}}
    with ServedGateway(tmp_path, config=config) as gw:
        chat = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=gw.create_key(), max_retries=0)
        started = time.monotonic()
        for calls in (1, 2, 3):
            chat.chat.completions.create(model="sandbox-chat", messages=[{"role": "user", "content": "hi"}])

            def stored(n: int = calls) -> bool:
                with contextlib.closing(sqlite3.connect(tmp_path / "data" / "unigate.db")) as db:
                    return db.execute("SELECT SUM(requests) FROM usage_records").fetchone()[0] == n

            until(stored, f"call {calls} in the usage table", timeout=5, step=0.02)
        assert time.monotonic() - started < 1.0
