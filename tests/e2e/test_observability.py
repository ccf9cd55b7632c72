"""Operating the gateway, against a real `unigate serve --workers 2`: GET /metrics counts
exactly what was sent (whichever worker a scrape lands on, and after a worker is killed), its
auth; OTLP spans with the GenAI attributes for a chat, a stream and a task submit; JSON log
lines; a client's x-request-id on the response, in the log, in spans and error bodies."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.fake_openai import FakeOpenAI
from tests.support.gateway import ADMIN_KEY, GatewayProcess
from tests.support.net import HTTPResult, http
from tests.support.otlp_collector import OTLPCollector
from tests.support.readme import section
from tests.support.receiver import WebhookReceiver

pytestmark = pytest.mark.process

METRICS_TOKEN = "mt_" + secrets.token_hex(12)
IN, OUT = 1000.0, 2000.0  # fallback-chat's prices per million tokens
CHAT = "/v1/chat/completions"
UPSTREAM = ("sk-first", "sk-second")  # the fake upstreams' credentials, never in a span

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def _config(first: str, second: str) -> dict[str, Any]:
    routes = [{"provider": "first", "priority": 0}, {"provider": "second", "priority": 1}]
    return {
        "providers": [
            {"name": "first", "protocol": "openai", "base_url": first, "api_key": UPSTREAM[0]},
            {"name": "second", "protocol": "openai", "base_url": second, "api_key": UPSTREAM[1]},
        ],
        "models": [
            {"name": "fallback-chat", "routes": routes, "input_per_million": IN, "output_per_million": OUT},
            {"name": "broken-chat", "routes": [{"provider": "first"}]},  # always 502
        ],
        # One failure cools the failing route down: the single fallback call shows all three.
        "routing": {"cooldown_after_failures": 1, "cooldown_seconds": 600},
        "sandbox": {"enabled": True, "music_seconds": 1},
        "tasks": {"poll_interval": 0.2, "max_poll_interval": 0.5, "webhook_retry_schedule": [0, 0.3, 0.5, 1]},
    }


@pytest.fixture(scope="module")
def collector() -> Iterator[OTLPCollector]:
    with OTLPCollector() as c:
        yield c


@pytest.fixture(scope="module")
def receiver() -> Iterator[WebhookReceiver]:
    with WebhookReceiver() as r:
        yield r


@pytest.fixture(scope="module")
def upstreams() -> Iterator[tuple[FakeOpenAI, FakeOpenAI]]:
    with FakeOpenAI(mode="fail500") as first, FakeOpenAI(reply_text="from second") as second:
        yield first, second


@pytest.fixture(scope="module")
def gw(
    tmp_path_factory: pytest.TempPathFactory,
    collector: OTLPCollector,
    upstreams: tuple[FakeOpenAI, FakeOpenAI],
) -> Iterator[GatewayProcess]:
    env = {
        "UNIGATE_METRICS_TOKEN": METRICS_TOKEN,
        "UNIGATE_LOG_FORMAT": "json",
        "UNIGATE_ALLOW_PRIVATE_WEBHOOKS": "1",
        "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint,
        "OTEL_BSP_SCHEDULE_DELAY": "100",  # ms: spans reach the collector within the test
    }
    config = _config(upstreams[0].base_url, upstreams[1].base_url)
    with GatewayProcess(Path(tmp_path_factory.mktemp("obs")), config=config, env=env, workers=2) as g:
        yield g


def _auth(key: str, **extra: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}", **extra}


def _scrape(gw: GatewayProcess, token: str = METRICS_TOKEN) -> Samples:
    res = http("GET", gw.base_url + "/metrics", headers=_auth(token))
    assert res.status == 200, res.body
    assert res.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(res.body.decode())
        for sample in family.samples
    }


def _value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def _counted(samples: Samples) -> Samples:
    """The series the test's own traffic moves: scrapes, readiness probes and the tasks read
    from the database left out."""
    moving = {("family", "metrics"), ("family", "public")}
    return {k: v for k, v in samples.items() if k[0] != "unigate_tasks" and not moving & k[1]}


def _wait(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def _chat(gw: GatewayProcess, key: str, model: str = "sandbox-chat", **headers: str) -> HTTPResult:
    body = {"model": model, "messages": [{"role": "user", "content": "hello there"}]}
    return http("POST", gw.base_url + CHAT, body, _auth(key, **headers))


def test_metrics_count_what_was_sent_across_two_workers(
    gw: GatewayProcess, receiver: WebhookReceiver
) -> None:
    before = _scrape(gw)
    key = gw.create_key(name="metrics")
    # 20 chats from 8 threads: both workers serve some.
    with ThreadPoolExecutor(8) as pool:
        chats = list(pool.map(lambda _: _chat(gw, key), range(20)))
    assert all(r.status == 200 for r in chats)
    chat_in = sum(r.json()["usage"]["prompt_tokens"] for r in chats)
    chat_out = sum(r.json()["usage"]["completion_tokens"] for r in chats)

    client = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=key, max_retries=0)
    stream = client.chat.completions.create(
        model="sandbox-chat",
        messages=[{"role": "user", "content": "stream please"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    usage = [c.usage for c in stream if c.usage][-1]
    chat_in, chat_out = chat_in + usage.prompt_tokens, chat_out + usage.completion_tokens

    embeddings = [client.embeddings.create(model="sandbox-embedding", input=f"text {i}") for i in range(2)]
    embed_in = sum(e.usage.prompt_tokens for e in embeddings)

    fell_back = _chat(gw, key, "fallback-chat")
    assert fell_back.status == 200 and "from second" in fell_back.body.decode()
    fb_usage = fell_back.json()["usage"]
    fb_cost = (fb_usage["prompt_tokens"] * IN + fb_usage["completion_tokens"] * OUT) / 1e6

    limited = gw.create_key(name="limited", rpm=1)
    admitted = _chat(gw, limited)
    assert admitted.status == 200
    chat_in += admitted.json()["usage"]["prompt_tokens"]
    chat_out += admitted.json()["usage"]["completion_tokens"]
    refused = _chat(gw, limited)
    assert refused.status == 429 and refused.json()["error"]["code"] == "rate_limit_exceeded"
    broke = gw.create_key(name="broke", budget=0)
    assert _chat(gw, broke, "fallback-chat").status == 429

    hooks = gw.create_key_record(name="hooks")
    receiver.secret = gw.admin("GET", f"/admin/keys/{hooks['id']}").json()["webhook_secret"]
    receiver.fail_next = 1  # the first attempt fails, its retry delivers
    body = {"prompt": "a song", "title": "t", "tags": "calm", "mv": "chirp-v4", "notify_hook": receiver.url}
    submitted = http("POST", gw.base_url + "/suno/submit/music", body, _auth(str(hooks["key"])))
    assert submitted.status == 200, submitted.body
    task_id = submitted.json()["data"]["task_id"]
    _wait(lambda: "SUCCESS" in receiver.statuses(task_id), 30, "the music task's SUCCESS webhook")
    delivered = len(receiver.statuses(task_id))

    def delta(name: str, **labels: str) -> float:
        return _value(after, name, **labels) - _value(before, name, **labels)

    after = _scrape(gw)
    _wait(
        lambda: (
            _value(_scrape(gw), "unigate_webhook_deliveries_total", outcome="delivered")
            - _value(before, "unigate_webhook_deliveries_total", outcome="delivered")
            >= delivered
        ),
        10,
        "the deliveries in the metrics",
    )
    after = _scrape(gw)
    text_ok = {"family": "text", "provider": "sandbox", "status": "200"}
    assert delta("unigate_requests_total", model="sandbox-chat", **text_ok) == 20 + 1 + 1
    assert delta("unigate_request_duration_seconds_count", model="sandbox-chat", **text_ok) == 22
    assert delta("unigate_requests_total", model="sandbox-embedding", **text_ok) == 2
    fb = {"family": "text", "model": "fallback-chat"}
    assert delta("unigate_requests_total", provider="second", status="200", **fb) == 1
    assert delta("unigate_requests_total", provider="", status="429", **fb) == 1  # the spent budget
    assert (
        delta("unigate_requests_total", family="text", model="sandbox-chat", provider="", status="429") == 1
    )
    assert delta("unigate_upstream_errors_total", route="first/fallback-chat", kind="error") == 1
    assert delta("unigate_fallbacks_total", route="first/fallback-chat") == 1
    assert delta("unigate_route_cooldowns_total", route="first/fallback-chat") == 1
    assert delta("unigate_tokens_total", model="sandbox-chat", provider="sandbox", type="input") == chat_in
    assert delta("unigate_tokens_total", model="sandbox-chat", provider="sandbox", type="output") == chat_out
    assert (
        delta("unigate_tokens_total", model="sandbox-embedding", provider="sandbox", type="input") == embed_in
    )
    assert delta("unigate_cost_total", model="fallback-chat", provider="second") == pytest.approx(fb_cost)
    assert delta("unigate_rate_limited_total", family="text", code="rate_limit_exceeded") == 1
    assert delta("unigate_budget_exceeded_total", family="text") == 1
    assert (
        delta(
            "unigate_task_submits_total", family="music", model="chirp-v4", provider="sandbox", status="200"
        )
        == 1
    )
    assert delta("unigate_webhook_deliveries_total", outcome="delivered") == delivered
    assert delta("unigate_webhook_deliveries_total", outcome="failed") == 1
    assert _value(after, "unigate_tasks", family="music", status="SUCCESS") >= 1
    assert _value(after, "unigate_active_streams") == 0
    print(
        f"\n22 chats (one streamed, {chat_in}/{chat_out} tokens), 2 embeddings, 1 fallback, 1 rate-limited, "
        f"1 over budget, 1 music task with {delivered} webhooks (+1 failed attempt): all counted exactly"
    )

    # Every worker wrote its own file, and a scrape on any of them reports the same totals.
    pids = {
        p.name.split("_")[1].split("-")[0] for p in (gw.workdir / "data" / "metrics").glob("counter_*.db")
    }
    assert len(pids) >= 2, pids
    scrapes = [_counted(_scrape(gw)) for _ in range(6)]
    assert all(s == scrapes[0] for s in scrapes), "scrapes on different workers disagree"


def test_metrics_need_the_admin_key_or_the_metrics_token(gw: GatewayProcess) -> None:
    url = gw.base_url + "/metrics"
    assert http("GET", url).status == 401
    assert http("GET", url, headers=_auth("not-the-token")).status == 401
    assert http("GET", url, headers=_auth(gw.create_key(name="api"))).status == 401, (
        "an API key is not enough"
    )
    assert http("GET", url, headers={"Authorization": METRICS_TOKEN}).status == 401, "Bearer only"
    for token in (ADMIN_KEY, METRICS_TOKEN):
        res = http("GET", url, headers=_auth(token))
        assert res.status == 200 and b"unigate_requests_total" in res.body
        assert METRICS_TOKEN.encode() not in res.body and ADMIN_KEY.encode() not in res.body


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs the curl command")
def test_the_readme_scrape_example(gw: GatewayProcess) -> None:
    text = section("Metrics and tracing")
    lines = [line for line in text.splitlines() if line.startswith("curl -s http://127.0.0.1:8000/metrics")]
    assert len(lines) == 1
    # The token is exported before the server starts (a serve started earlier answers 401), as
    # this module's gateway is started with it.
    order = [
        i
        for i, line in enumerate(text.splitlines())
        if line.startswith(("export UNIGATE_METRICS_TOKEN", "unigate serve", lines[0]))
    ]
    assert len(order) == 3 and text.splitlines()[order[1]].startswith("unigate serve"), order
    assert _chat(gw, gw.create_key(name="readme")).status == 200
    env = {**os.environ, "UNIGATE_METRICS_TOKEN": METRICS_TOKEN}
    command = lines[0].replace("http://127.0.0.1:8000", gw.base_url)
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=env, timeout=30)
    assert done.returncode == 0, done.stderr
    shown = done.stdout.splitlines()
    assert shown and all(line.startswith("unigate_requests_total{") for line in shown)
    assert any('model="sandbox-chat",provider="sandbox",status="200"' in line for line in shown), shown


def test_spans_carry_the_genai_attributes(gw: GatewayProcess, collector: OTLPCollector) -> None:
    key = gw.create_key(name="traced")
    run = secrets.token_hex(4)
    chat = _chat(gw, key, **{"x-request-id": f"span-chat-{run}"})
    assert chat.status == 200
    client = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=key, max_retries=0)
    stream = client.chat.completions.create(
        model="sandbox-chat",
        messages=[{"role": "user", "content": "hello there"}],
        stream=True,
        stream_options={"include_usage": True},
        extra_headers={"x-request-id": f"span-stream-{run}"},
    )
    usage = [c.usage for c in stream if c.usage][-1]
    parent_trace, parent_span = secrets.token_hex(16), secrets.token_hex(8)
    traceparent = f"00-{parent_trace}-{parent_span}-01"
    fell_back = _chat(
        gw, key, "fallback-chat", **{"x-request-id": f"span-fb-{run}", "traceparent": traceparent}
    )
    assert fell_back.status == 200
    assert _chat(gw, key, "broken-chat", **{"x-request-id": f"span-502-{run}"}).status == 502
    music = {"prompt": "a song", "title": "t", "tags": "calm", "mv": "chirp-v4"}
    assert http("POST", gw.base_url + "/suno/submit/music", music, _auth(key)).status == 200

    span = collector.wait_for("unigate.request_id", f"span-chat-{run}")
    attrs = span.attributes
    assert span.name == "chat sandbox-chat" and span.kind == 3  # SPAN_KIND_CLIENT
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.request.model"] == "sandbox-chat"
    assert attrs["gen_ai.response.model"] == "sandbox-chat"
    assert attrs["gen_ai.provider.name"] == attrs["gen_ai.system"] == "sandbox"
    assert attrs["gen_ai.usage.input_tokens"] == chat.json()["usage"]["prompt_tokens"]
    assert attrs["gen_ai.usage.output_tokens"] == chat.json()["usage"]["completion_tokens"]
    assert attrs["http.response.status_code"] == 200 and "error.type" not in attrs
    assert span.resource["service.name"] == "unigate"
    assert span.end_ns > span.start_ns

    streamed = collector.wait_for("unigate.request_id", f"span-stream-{run}").attributes
    assert streamed["gen_ai.request.stream"] is True
    assert 0 < streamed["gen_ai.response.time_to_first_chunk"] < 5
    assert streamed["gen_ai.usage.input_tokens"] == usage.prompt_tokens
    assert streamed["gen_ai.usage.output_tokens"] == usage.completion_tokens

    routed = collector.wait_for("unigate.request_id", f"span-fb-{run}")
    assert routed.attributes["gen_ai.provider.name"] == "openai"
    assert routed.attributes["unigate.route"] == "second/fallback-chat"
    assert (routed.trace_id, routed.parent_span_id) == (parent_trace, parent_span), "the client's trace"

    failed = collector.wait_for("unigate.request_id", f"span-502-{run}")
    assert failed.attributes["error.type"] == "upstream_unavailable"
    assert failed.attributes["http.response.status_code"] == 502
    assert failed.status_code == 2  # STATUS_CODE_ERROR

    submit = collector.wait_for("gen_ai.operation.name", "task.submit")
    assert submit.attributes["unigate.task.family"] == "music"
    assert submit.attributes["gen_ai.request.model"] == "chirp-v4"
    assert collector.content_types == {"application/x-protobuf"}
    keys_seen = [a for s in collector.snapshot() for a in s.attributes.values() if isinstance(a, str)]
    assert not any(k.startswith(("ugk_", "sk-")) for k in keys_seen), "no key in any span"


def test_json_log_lines_and_request_ids(gw: GatewayProcess) -> None:
    record = gw.create_key_record(name="json-logs")
    key, key_id = str(record["key"]), str(record["id"])
    assert _chat(gw, key, "broken-chat").status == 502  # a warning line from routing
    rid = f"client-{secrets.token_hex(6)}"
    ok = _chat(gw, key, **{"x-request-id": rid})
    assert ok.status == 200 and ok.headers["x-request-id"] == rid

    # Unusable ids (a space, a control character, non-ASCII, too long) are replaced.
    for bad in ("has space", "tab\there", "é-id", "x" * 129, ""):
        res = http("POST", gw.base_url + CHAT, b"{}", {"Authorization": f"Bearer {key}", "x-request-id": bad})
        assert res.status == 400 and res.headers["x-request-id"] not in (bad, ""), bad
    assert _chat(gw, key, **{"x-request-id": "y" * 128}).headers["x-request-id"] == "y" * 128

    # Error bodies carry it (the Anthropic shape has a request_id).
    refused = http(
        "POST", gw.base_url + "/v1/messages", {}, {"x-api-key": "nope", "x-request-id": rid + "-e"}
    )
    assert refused.status == 401 and refused.json()["request_id"] == rid + "-e"

    def access() -> dict[str, Any] | None:
        for line in gw.log().splitlines():
            # Parsed, not matched as text: the refused call's id (rid + "-e") contains rid,
            # and the buffered access lines of two workers come in either order.
            if rid in line and '"unigate.access"' in line:
                parsed = dict(json.loads(line))
                if parsed.get("request_id") == rid:
                    return parsed
        return None

    _wait(lambda: access() is not None, 10, "the access line")
    line = access()
    assert line is not None
    assert {"ts", "level", "logger", "message"} <= set(line)
    assert line["request_id"] == rid and line["key_id"] == key_id
    assert (line["method"], line["path"], line["status"]) == ("POST", CHAT, 200)
    assert (line["model"], line["route"], line["outcome"]) == ("sandbox-chat", "sandbox/sandbox-chat", None)
    assert isinstance(line["latency_ms"], float) and line["level"] == "info"

    # Every line the server wrote is one JSON object (the "listening" announcement on stdout
    # aside), warnings included; no key anywhere.
    lines = [ln for ln in gw.log().splitlines() if ln and not ln.startswith("unigate listening on")]
    parsed = [json.loads(ln) for ln in lines]
    assert all({"ts", "level", "logger", "message"} <= set(p) for p in parsed)
    assert any(p["level"] == "warning" and p["logger"] == "unigate.routing" for p in parsed)
    assert key not in gw.log() and METRICS_TOKEN not in gw.log()


def test_a_killed_workers_counts_stay(gw: GatewayProcess) -> None:
    key = gw.create_key(name="before-kill")
    with ThreadPoolExecutor(4) as pool:
        assert all(r.status == 200 for r in pool.map(lambda _: _chat(gw, key), range(8)))
    before = _counted(_scrape(gw))
    files = sorted((gw.workdir / "data" / "metrics").glob("counter_*.db"))
    counts = {f: _requests_in(f) for f in files}
    victim_file = max(counts, key=lambda f: counts[f])
    assert counts[victim_file] > 0
    victim = int(victim_file.name.split("_")[1].split("-")[0])
    os.kill(victim, signal.SIGKILL)
    time.sleep(1)
    _wait(lambda: http("GET", gw.base_url + "/readyz", timeout=2).status == 200, 30, "a ready worker")
    after = _counted(_scrape(gw))
    assert after == before, "a killed worker's counts went missing"
    print(f"\nworker {victim} killed with {counts[victim_file]:.0f} requests counted: totals unchanged")


def _requests_in(path: Path) -> float:
    """The requests one worker's own file counts."""
    from prometheus_client.mmap_dict import MmapedDict

    return sum(
        value
        for key, value, _, _ in MmapedDict.read_all_values_from_file(str(path))
        if json.loads(key)[1] == "unigate_requests_total"
    )
