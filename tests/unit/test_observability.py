"""The pieces of observability on their own: value files read back by prometheus_client's
multiprocess collector (several writers, growth past the first map, the series cap, live
gauges of dead processes), request ids, JSON log records, access lines written once per loop
turn, the OTLP settings, and tracing left unimported when off."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from unigate.observability.logs import FORMAT, InfoLines, JsonFormatter
from unigate.observability.metrics import MAX_SERIES, Metrics
from unigate.observability.request_ids import RequestIds
from unigate.observability.scrape import render
from unigate.settings import Settings


def _samples(directory: Path) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    body, _ = render(directory, [("music", "SUCCESS", 2)])
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(body.decode())
        for s in family.samples
    }


def test_values_of_several_writers_merge(tmp_path: Path) -> None:
    one, two = Metrics(tmp_path), Metrics(tmp_path)
    one.request("text", "m", "p", 200, 0.02)
    two.request("text", "m", "p", 200, 3.0)
    two.request("text", "m", "", 429, 0.001)
    one.usage("m", "p", 10, 5, 0.25)
    two.usage("m", "p", 1, 2, 0.5)
    one.upstream_failed("p/m", 502, fell_back=True)
    two.upstream_failed("p/m", 504, fell_back=False)
    one.stream_opened()
    two.stream_opened()
    got = _samples(tmp_path)
    labels = frozenset({"family": "text", "model": "m", "provider": "p", "status": "200"}.items())
    assert got[("unigate_requests_total", labels)] == 2
    assert got[("unigate_request_duration_seconds_count", labels)] == 2
    assert got[("unigate_request_duration_seconds_sum", labels)] == 3.02
    bucket = {"family": "text", "model": "m", "provider": "p", "status": "200"}
    assert got[("unigate_request_duration_seconds_bucket", frozenset({**bucket, "le": "0.025"}.items()))] == 1
    assert got[("unigate_request_duration_seconds_bucket", frozenset({**bucket, "le": "5.0"}.items()))] == 2
    assert (
        got[("unigate_tokens_total", frozenset({"model": "m", "provider": "p", "type": "input"}.items()))]
        == 11
    )
    assert got[("unigate_cost_total", frozenset({"model": "m", "provider": "p"}.items()))] == 0.75
    assert got[("unigate_upstream_errors_total", frozenset({"route": "p/m", "kind": "timeout"}.items()))] == 1
    assert got[("unigate_fallbacks_total", frozenset({"route": "p/m"}.items()))] == 1
    assert got[("unigate_active_streams", frozenset())] == 2
    assert got[("unigate_tasks", frozenset({"family": "music", "status": "SUCCESS"}.items()))] == 2
    # A stopped writer's counts stay; its live gauge goes.
    two.close()
    got = _samples(tmp_path)
    assert got[("unigate_requests_total", labels)] == 2
    assert got[("unigate_active_streams", frozenset())] == 1
    one.close()


def test_files_grow_and_series_are_capped(tmp_path: Path) -> None:
    metrics = Metrics(tmp_path)
    for i in range(MAX_SERIES + 500):  # ~2,500 entries: the 64 KiB map is outgrown
        metrics.fallbacks.inc((f"provider-{i}/model",))
    metrics.fallbacks.inc(("provider-7/model",))
    got = _samples(tmp_path)
    assert got[("unigate_fallbacks_total", frozenset({("route", "provider-7/model")}))] == 2
    assert got[("unigate_fallbacks_total", frozenset({("route", "other")}))] == 500
    assert sum(1 for name, _ in got if name == "unigate_fallbacks_total") == MAX_SERIES + 1
    metrics.close()
    metrics.fallbacks.inc(("late",))  # after close: lands nowhere, raises nothing


def test_a_dead_process_live_gauge_is_dropped(tmp_path: Path) -> None:
    metrics = Metrics(tmp_path)
    metrics.stream_opened()
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    mine = next(tmp_path.glob("gauge_livesum_*.db"))
    mine_copy = tmp_path / f"gauge_livesum_{dead.stdout.strip()}-deadbeef.db"
    mine_copy.write_bytes(mine.read_bytes())
    assert _samples(tmp_path)[("unigate_active_streams", frozenset())] == 1
    assert not mine_copy.exists()
    metrics.close()


def test_request_ids() -> None:
    ids = RequestIds()

    def rid(value: bytes | None) -> str:
        headers = [(b"x-request-id", value)] if value is not None else []
        return ids.for_request({"headers": [(b"host", b"x"), *headers]})

    assert rid(b"abc-123_XYZ.:/") == "abc-123_XYZ.:/"
    assert rid(b"y" * 128) == "y" * 128
    fresh = {rid(v) for v in (None, b"", b"a b", b"tab\there", b"\xc3\xa9", b"x" * 129, b"new\nline")}
    assert len(fresh) == 7 and all(len(v) < 20 and " " not in v for v in fresh)


def test_json_records() -> None:
    formatter = JsonFormatter()
    record = logging.LogRecord("unigate.routing", logging.WARNING, "", 0, "two\nlines %s", ("x",), None)
    record.fields = {"request_id": "r1"}
    out = formatter.format(record)
    assert "\n" not in out
    data = json.loads(out)
    assert data["message"] == "two\nlines x" and data["level"] == "warning" and data["request_id"] == "r1"
    assert data["ts"].endswith("Z") and data["logger"] == "unigate.routing"
    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.LogRecord("unigate", logging.ERROR, "", 0, "failed", (), sys.exc_info())
    assert "ValueError: boom" in json.loads(formatter.format(record))["exception"]


def test_otel_settings() -> None:
    assert Settings.from_env({}).otel_traces_endpoint is None
    base = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/"}
    assert Settings.from_env(base).otel_traces_endpoint == "http://collector:4318/v1/traces"
    assert Settings.from_env(base).otel_service_name == "unigate"
    traces = {**base, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:1/x", "OTEL_SERVICE_NAME": "gw"}
    assert (Settings.from_env(traces).otel_traces_endpoint, Settings.from_env(traces).otel_service_name) == (
        "http://t:1/x",
        "gw",
    )
    assert Settings.from_env({**base, "OTEL_SDK_DISABLED": "true"}).otel_traces_endpoint is None


def test_tracing_off_imports_nothing_of_opentelemetry(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from unigate.app import create_app\n"
        "from unigate.settings import Settings\n"
        f"app = create_app(Settings.from_env({{'UNIGATE_DATA_DIR': {str(tmp_path)!r}}}))\n"
        "assert app.gateway.tracing is None\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n"
    )
    off = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert off.stdout.strip() == "[]"


def test_access_lines_wait_for_each_other_and_go_out_in_one_write() -> None:
    """Lines going to unigate's own stream wait `InfoLines.HOLD` for the next ones (beyond their
    loop turn) and go out together, in order; with no running loop, at once."""

    class Stream(io.StringIO):
        writes = 0

        def write(self, text: str) -> int:
            self.writes += 1
            return super().write(text)

    stream = Stream()
    handler = logging.StreamHandler(stream)
    handler._unigate = "text"  # type: ignore[attr-defined]  # as configure_logging marks its own
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    lines = InfoLines("unigate.test.access")

    async def turn() -> tuple[int, int, int]:
        for i in range(3):
            lines(f"GET /x 200 request=r{i}")
        await asyncio.sleep(0)  # the end of this loop turn: still held
        held = stream.writes
        for i in range(3, 5):
            lines(f"GET /x 200 request=r{i}")
        await asyncio.sleep(InfoLines.HOLD / 2)
        still = stream.writes
        await asyncio.sleep(InfoLines.HOLD)
        return held, still, stream.writes

    try:
        held, still, after = asyncio.run(turn())
        lines("GET /y 200 request=outside")  # no running loop: written at once
    finally:
        root.handlers[:], level = saved
        root.setLevel(level)
    written = stream.getvalue().splitlines()
    assert (held, still, after) == (0, 0, 1)
    assert [line.rsplit("=", 1)[1] for line in written] == ["r0", "r1", "r2", "r3", "r4", "outside"]
    assert all(" INFO unigate.test.access: GET /" in line for line in written)


def test_access_lines_are_built_together_with_what_each_request_ended_with() -> None:
    """The edge hands each finished request to `AccessLog`, which builds and writes the lines
    of `InfoLines.HOLD` together: in order, with the latency measured when each request ended
    and the model the handler left in the scope; with no running loop, at once; through another
    handler, at the end of their loop turn."""
    from unigate.edge.access_log import MODEL, AccessLog, Finished, finished
    from unigate.edge.asgi import Request

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter(FORMAT))
    handler._unigate = "text"  # type: ignore[attr-defined]  # as configure_logging marks its own
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    access = AccessLog(InfoLines("unigate.test.batched"), json=False)

    def request(i: int, status: int, started: float, ended: float, key_id: str | None) -> Finished:
        scope = {"method": "GET", "path": f"/v1/x{i}", "headers": [], MODEL: f"m{i}"}
        return finished(Request(scope, _never, _never, f"r{i}"), status, started, ended, key_id)

    async def turn() -> str:
        for i in range(3):
            access.add(request(i, 200, 10.0, 10.0 + (i + 1) / 1000, "key_1"))
        await asyncio.sleep(0)
        held = stream.getvalue()
        await asyncio.sleep(InfoLines.HOLD * 2)
        return held

    records: list[str] = []

    def keep(record: logging.LogRecord) -> bool:
        records.append(record.getMessage())
        return True

    try:
        held = asyncio.run(turn())
        access.add(request(3, 0, 1.0, 1.5, None))  # no running loop: written at once
        handler.addFilter(keep)  # a filter in the way: each line a record it sees

        async def filtered() -> list[str]:
            access.add(request(4, 200, 1.0, 1.25, None))
            await asyncio.sleep(0)  # handed over at the end of the loop turn
            return records[:]

        seen = asyncio.run(filtered())
    finally:
        root.handlers[:], level = saved
        root.setLevel(level)
    assert held == ""
    assert seen == records == ["GET /v1/x4 200 250.00ms model=m4 route=- key=- request=r4"]
    lines = [line.split(": ", 1)[1] for line in stream.getvalue().splitlines()]
    assert lines == [
        "GET /v1/x0 200 1.00ms model=m0 route=- key=key_1 request=r0",
        "GET /v1/x1 200 2.00ms model=m1 route=- key=key_1 request=r1",
        "GET /v1/x2 200 3.00ms model=m2 route=- key=key_1 request=r2",
        "GET /v1/x3 499 500.00ms model=m3 route=- key=- request=r3",
        "GET /v1/x4 200 250.00ms model=m4 route=- key=- request=r4",
    ]


def test_an_access_line_keeps_plain_paths_and_models_and_escapes_or_cuts_the_rest() -> None:
    """The access line takes a plain path and model as they are and gives anything else to
    the escaping and cutting rules: spaces and newlines (forged lines), overlong text, media
    names (capabilities)."""
    from unigate.edge.access_log import MAX_LOGGED, MODEL, ROUTE, access_line, finished
    from unigate.edge.asgi import Request

    def line(path: str, model: str | None) -> str:
        scope = {"method": "POST", "path": path, "headers": [], MODEL: model, ROUTE: "up/m"}
        return access_line(finished(Request(scope, _never, _never, "req1"), 200, 0.0, 0.001, "key_1"))

    plain = line("/v1/chat/completions", "gpt-4o:ft")
    assert plain.startswith("POST /v1/chat/completions 200 ")
    assert plain.endswith(" model=gpt-4o:ft route=up/m key=key_1 request=req1")
    forged = line("/v1/x y\nGET /admin 200", "a b\nc")
    assert "\n" not in forged and " /v1/x%20y%0AGET%20/admin%20200 " in forged
    assert " model=a%20b%0Ac " in forged
    media = line("/media/0123456789abcdef.png", "m" * (MAX_LOGGED + 5))
    assert " /media/01234567….png " in media
    assert f" model={'m' * MAX_LOGGED}…(+5) " in media
    assert " model=- " in line("/v1/models", None)


@pytest.mark.parametrize(
    "seconds", [0.0, 0.00001, 0.000004, 0.0000051, 0.00341, 0.0101, 0.09999, 0.25, 1.0, 3.14159, 3600.5]
)
def test_an_access_line_shows_the_latency_in_ms_to_two_decimals(seconds: float) -> None:
    """Hundredths of a millisecond, rounded, as `:.2f` shows them (the line builds them from
    integers: a format spec is slow in the compiled module)."""
    from unigate.edge.access_log import access_line

    started = 1000.0
    done = ("r", "GET", "/v1/models", 200, started, started + seconds, None, None, None, None, None)
    shown = access_line(done).split()[3]
    assert shown.endswith("ms")
    assert abs(float(shown[:-2]) - seconds * 1000.0) <= 0.005 + 1e-9
    assert len(shown[:-2].partition(".")[2]) == 2


async def _never(*args: object) -> dict[str, object]:
    raise AssertionError("an access line reads nothing from the client")


def test_a_worker_imports_no_client_library_it_was_not_configured_for(tmp_path: Path) -> None:
    """Webhooks and URL fetches use the project's own HTTP client, and Redis, PostgreSQL, S3
    and OpenTelemetry are imported only when configured: a gateway on the defaults (SQLite, the
    node's limits, a file store, no tracing) after its start-up has none of them in memory."""
    code = (
        "import asyncio, sys\n"
        "from unigate.app import create_app\n"
        "from unigate.settings import Settings\n"
        f"app = create_app(Settings.from_env({{'UNIGATE_DATA_DIR': {str(tmp_path)!r}}}))\n"
        "async def started():\n"
        "    await app.gateway.start()\n"
        "    await app.gateway.webhook_sender.start()\n"
        "    await app.gateway.stop()\n"
        "asyncio.run(started())\n"
        "names = ('aiohttp', 'yarl', 'redis', 'asyncpg', 'obstore', 'opentelemetry')\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & set(names)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_a_request_worker_imports_no_migrations_orm_or_other_databases_dialect(tmp_path: Path) -> None:
    """`unigate serve` migrates once before its workers start, so a worker loads no Alembic (with
    Mako); on SQLite, no PostgreSQL dialect (~20 modules, 2 MB); and, the store being Core on its
    own asyncio layer (store/aio.py), no SQLAlchemy ORM (~40 modules, 6 MB)."""
    env = {"UNIGATE_DATA_DIR": str(tmp_path)}
    migrate = (
        "import asyncio\n"
        "from unigate.settings import Settings\n"
        "from unigate.store import db\n"
        f"engine = db.create_engine(Settings.from_env({env!r}).database_url)\n"
        "asyncio.run(db.migrate(engine))\n"
    )
    subprocess.run([sys.executable, "-c", migrate], capture_output=True, text=True, check=True)
    code = (
        "import asyncio, sys\n"
        "from unigate.app import create_app\n"
        "from unigate.settings import Settings\n"
        f"app = create_app(Settings.from_env({{**{env!r}, 'UNIGATE_MIGRATE': '0'}}))\n"
        "async def started():\n"
        "    await app.gateway.start()\n"
        "    await app.gateway.stop()\n"
        "asyncio.run(started())\n"
        "names = ('alembic', 'mako', 'sqlalchemy.dialects.postgresql', 'sqlalchemy.orm', 'sqlalchemy.ext')\n"
        "print(sorted(n for n in names if any(m == n or m.startswith(n + '.') for m in sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


# What a worker serving only OpenAI-compatible chat (one `openai` provider, as bench/targets.py
# operates it) must not have in memory once started and after a call: modules only a feature it
# was not configured for, or an endpoint it was not sent, needs. Each is imported on first use.
NOT_LOADED_FOR_CHAT = (
    "urllib.request",  # proxy variables are read by transport/dial.py itself
    "http.client",
    "python_multipart",  # the first form a worker is sent imports it
    "difflib",  # the unknown-model refusal's "did you mean"
    "mimetypes",  # a finished media task's content type
    # Provider adapters of protocols the configuration does not name (providers/registry.py),
    # and the batch protocols of providers not configured `batches: native`.
    "unigate.providers.anthropic",
    "unigate.providers.google",
    "unigate.providers.media",
    "unigate.providers.tasks",
    "unigate.providers.openai.azure",
    "unigate.providers.openai.batches",
    "unigate.providers.batch_http",
)

_CHAT_WORKER = """
import asyncio, json, sys
from unigate.app import create_app
from unigate.settings import Settings

app = create_app(Settings.from_env(ENV))

async def call(method, path, bearer, body):
    sent = Sent()
    async def receive():
        return {"type": "http.request", "body": body, "more_body": False}
    headers = [(b"authorization", b"Bearer " + bearer.encode()), (b"content-type", b"application/json")]
    scope = {"type": "http", "method": method, "path": path, "raw_path": path.encode(), "query_string": b"",
             "headers": headers, "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 2),
             "scheme": "http", "http_version": "1.1", "root_path": ""}
    await app(scope, receive, sent.append_async)
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])

class Sent(list):
    async def append_async(self, message):
        self.append(message)

async def main():
    inbox, out = asyncio.Queue(), asyncio.Queue()
    lifespan = asyncio.ensure_future(app({"type": "lifespan"}, inbox.get, out.put))
    await inbox.put({"type": "lifespan.startup"})
    assert (await out.get())["type"] == "lifespan.startup.complete"
    status, body = await call("POST", "/admin/keys", ADMIN, b'{"name": "chat"}')
    assert status == 201, body
    key = json.loads(body)["key"]
    chat = b'{"model": "chat", "messages": [{"role": "user", "content": "hi"}]}'
    status, _ = await call("POST", "/v1/chat/completions", key, chat)
    await inbox.put({"type": "lifespan.shutdown"})
    await lifespan
    return status

print(asyncio.run(main()))
print(sorted(n for n in NAMES if any(m == n or m.startswith(n + ".") for m in sys.modules)))
"""


def test_a_chat_worker_imports_no_module_of_an_unused_feature(tmp_path: Path) -> None:
    """Started with one OpenAI-compatible provider and sent a chat call (answered 502: its
    upstream port is closed), a worker has none of NOT_LOADED_FOR_CHAT in memory: each costs
    every worker its share of resident memory for nothing."""
    config = tmp_path / "unigate.yaml"
    config.write_text(
        "providers:\n"
        "  - {name: up, protocol: openai, base_url: 'http://127.0.0.1:9/v1', api_key: sk-test}\n"
        "models:\n"
        "  - {name: chat, routes: [{provider: up}]}\n"
    )
    env = {
        "UNIGATE_DATA_DIR": str(tmp_path / "data"),
        "UNIGATE_CONFIG": str(config),
        "UNIGATE_ADMIN_KEY": "x",
    }
    code = f"ENV = {env!r}\nADMIN = 'x'\nNAMES = {NOT_LOADED_FOR_CHAT!r}\n" + _CHAT_WORKER
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    status, loaded = out.stdout.strip().splitlines()[-2:]
    assert status == "502", "the chat call reached its (closed) upstream"
    assert loaded == "[]"


def test_the_supervisor_preloads_the_adapters_of_the_configured_protocols(tmp_path: Path) -> None:
    """Workers fork from the supervisor after `preload_app`: the configured protocols' adapters
    imported there are shared by every worker instead of imported by each; the others stay out."""
    config = tmp_path / "unigate.yaml"
    config.write_text(
        "providers:\n"
        "  - {name: up, protocol: anthropic, base_url: 'http://127.0.0.1:9', api_key: sk-ant-test}\n"
        "models:\n"
        "  - {name: chat, routes: [{provider: up}]}\n"
    )
    env = {**os.environ, "UNIGATE_CONFIG": str(config), "UNIGATE_DATA_DIR": str(tmp_path / "data")}
    code = (
        "import sys\n"
        "from unigate.cli.launch import preload_app\n"
        "preload_app()\n"
        "print('unigate.providers.anthropic.messages' in sys.modules,"
        " 'unigate.providers.openai.azure' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "False"]


def test_a_latency_lands_in_the_bucket_bisect_gives_it() -> None:
    """The histogram's bucket loop (`metrics._bucket`) against `bisect_left` on the same bounds,
    at each bound, between bounds and past the last finite one; NaN goes to +Inf."""
    import math
    from bisect import bisect_left

    from unigate.observability.metrics import DURATION_BUCKETS, _bucket

    finite = [b for b in DURATION_BUCKETS if b != math.inf]
    probes = [0.0, 1e-9, *finite, *(b * 1.0001 for b in finite), *(b * 0.9999 for b in finite), 1e9]
    for seconds in probes:
        assert _bucket(seconds) == bisect_left(DURATION_BUCKETS, seconds), seconds
    assert _bucket(math.nan) == len(DURATION_BUCKETS) - 1
