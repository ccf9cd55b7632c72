"""The three things under load: the fake upstream itself (the baseline), the bare proxy (the
floor unigate is measured against) and unigate as it is operated (auth, a key with rpm, tpm and
a budget, usage accounting, metrics, the request log and access lines all on); how to start
unigate and give it a key, for both benchmarks."""

from __future__ import annotations

import os
import secrets
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import yaml
from fake_upstream import CHAT_PATH, STREAM_PATH
from procs import BenchError, Child, Children, free_port, request, wait_ready
from upstream import start_upstream

BENCH_DIR = Path(__file__).resolve().parent
UNIGATE_BIN = Path(sys.executable).parent / "unigate"

CHAT_MODEL = "bench-chat"
STREAM_MODEL = "bench-stream"
# The same bytes go to every target; the upstream and the bare proxy ignore the model id.
CHAT_BODY = orjson.dumps({"model": CHAT_MODEL, "messages": [{"role": "user", "content": "hello"}]})
STREAM_BODY = orjson.dumps(
    {"model": STREAM_MODEL, "messages": [{"role": "user", "content": "hello"}], "stream": True}
)

# The same streaming call in the two other client formats, for translated-stream TTFB: unigate
# relays the OpenAI upstream's stream untouched for STREAM_BODY and translates it for these.
# name -> (path, body, the final event that must end the answer)
TRANSLATED_STREAMS: dict[str, tuple[str, bytes, bytes]] = {
    "anthropic": (
        "/v1/messages",
        orjson.dumps(
            {
                "model": STREAM_MODEL,
                "max_tokens": 64,
                "stream": True,
                "messages": [{"role": "user", "content": "hello"}],
            }
        ),
        b"event: message_stop",
    ),
    "gemini": (
        f"/v1beta/models/{STREAM_MODEL}:streamGenerateContent?alt=sse",
        orjson.dumps({"contents": [{"role": "user", "parts": [{"text": "hello"}]}]}),
        b'"finishReason"',
    ),
}


@dataclass(frozen=True)
class Target:
    name: str
    port: int
    chat_path: str
    stream_path: str
    key: str = ""
    child: Child | None = None
    admin_key: str = ""

    @property
    def chat_url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.chat_path}"


def direct_target(upstream: Child, port: int) -> Target:
    return Target("direct", port, CHAT_PATH, STREAM_PATH, child=upstream)


def _start_proxy(children: Children, tmp: Path, name: str, script: str, *args: str) -> Target:
    """One of the benchmark's own proxies (`script` in bench/), ready on a free port."""
    port = free_port()
    cmd = [sys.executable, str(BENCH_DIR / script), "--port", str(port), *args]
    child = children.start(f"{name} proxy", cmd, tmp / f"{name}_proxy.out")
    wait_ready(child, port, "/", want=None)
    return Target(name, port, CHAT_PATH, STREAM_PATH, child=child)


def start_bare_proxy(children: Children, tmp: Path, upstream_port: int, workers: int = 1) -> Target:
    upstream = f"http://127.0.0.1:{upstream_port}"
    return _start_proxy(
        children, tmp, "bare", "bare_proxy.py", "--upstream", upstream, "--workers", str(workers)
    )


def start_floor_proxy(children: Children, tmp: Path, upstream_port: int, workers: int = 1) -> Target:
    """bench/floor_proxy.py: uvloop callbacks and framing only, what any Python proxy costs."""
    args = ("--upstream-port", str(upstream_port), "--workers", str(workers))
    return _start_proxy(children, tmp, "floor", "floor_proxy.py", *args)


def unigate_config(upstream_port: int) -> dict[str, Any]:
    origin = f"http://127.0.0.1:{upstream_port}"
    return {
        "providers": [
            {"name": "up", "protocol": "openai", "base_url": f"{origin}/v1", "api_key": "sk-bench"},
            {
                "name": "up-stream",
                "protocol": "openai",
                "base_url": f"{origin}/stream/v1",
                "api_key": "sk-bench",
            },
        ],
        "models": [
            {"name": CHAT_MODEL, "routes": [{"provider": "up"}]},
            {"name": STREAM_MODEL, "routes": [{"provider": "up-stream"}]},
        ],
    }


@dataclass(frozen=True)
class Unigate:
    """A running `unigate serve` on local SQLite in `data_dir`, ready, with its admin key."""

    child: Child
    port: int
    admin_key: str
    data_dir: Path


def launch_unigate(
    children: Children,
    tmp: Path,
    config: dict[str, Any],
    workers: int = 1,
    data_dir: str = "unigate-data",
    server: str = "uvicorn",
    redis_url: str | None = None,
) -> Unigate:
    """`unigate serve` with `config`, a fresh data directory `tmp/data_dir` and its default
    storage (SQLite there), once `/readyz` answers 200."""
    if not UNIGATE_BIN.exists():
        raise BenchError(f"{UNIGATE_BIN} not found: install unigate in this venv (pip install -e .)")
    data = tmp / data_dir
    data.mkdir()
    config_file = tmp / "unigate.yaml"
    config_file.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    admin_key = "adm-" + secrets.token_urlsafe(24)
    env = {
        **os.environ,
        "UNIGATE_DATA_DIR": str(data),
        "UNIGATE_CONFIG": str(config_file),
        "UNIGATE_ADMIN_KEY": admin_key,
    }
    for name in ("UNIGATE_DATABASE_URL", "UNIGATE_REDIS_URL"):  # one machine, local SQLite
        env.pop(name, None)
    if redis_url:
        env["UNIGATE_REDIS_URL"] = redis_url  # limits in Redis, as replicas keep them
    port = free_port()
    cmd = [str(UNIGATE_BIN), "serve", "--port", str(port), "--workers", str(workers), "--server", server]
    child = children.start("unigate", cmd, tmp / "unigate.out", env=env)
    wait_ready(child, port, "/readyz", timeout=60)
    return Unigate(child, port, admin_key, data)


def create_key(gateway: Unigate, **fields: Any) -> str:
    """A new API key named "bench", with `fields` (limits) set."""
    body = orjson.dumps({"name": "bench", **fields})
    headers = {"Authorization": f"Bearer {gateway.admin_key}", "Content-Type": "application/json"}
    status, data, _ = request(gateway.port, "POST", "/admin/keys", body, headers)
    if status not in (200, 201):
        raise BenchError(f"POST /admin/keys gave HTTP {status}: {data[:300]!r}")
    key = orjson.loads(data).get("key")
    if not isinstance(key, str):
        raise BenchError(f"POST /admin/keys answered without a key: {data[:300]!r}")
    return key


def start_unigate(
    children: Children,
    tmp: Path,
    upstream_port: int,
    server: str = "uvicorn",
    redis_url: str | None = None,
    workers: int = 1,
) -> Target:
    """`unigate serve` as operated: its default logging (an access line per request), metrics,
    the request log and usage accounting are always on; the key has every kind of limit."""
    config = unigate_config(upstream_port)
    gateway = launch_unigate(children, tmp, config, workers=workers, server=server, redis_url=redis_url)
    # Requests and tokens per minute and a budget: every limit is on the measured path.
    key = create_key(gateway, rpm=1_000_000, tpm=1_000_000_000, budget=1e9)
    return Target(
        "unigate",
        gateway.port,
        CHAT_PATH,
        CHAT_PATH,
        key=key,
        child=gateway.child,
        admin_key=gateway.admin_key,
    )


def check_reply(target: Target) -> None:
    """One plain request before any load: a 200 with the upstream's usage in it, and for
    unigate the rate-limit headers that show the limiter is on the measured path."""
    headers = {"Content-Type": "application/json"}
    if target.key:
        headers["Authorization"] = f"Bearer {target.key}"
    status, data, reply_headers = request(target.port, "POST", target.chat_path, CHAT_BODY, headers)
    if status != 200 or b'"usage"' not in data:
        raise BenchError(f"{target.name}: POST {target.chat_path} gave HTTP {status}: {data[:300]!r}")
    if target.name == "unigate" and "x-ratelimit-remaining-requests" not in reply_headers:
        raise BenchError("unigate answered without x-ratelimit-* headers: is the key's rpm limit applied?")


def recorded_requests(target: Target) -> int:
    """How many requests unigate's usage accounting recorded. `GET /admin/usage` flushes the
    worker that answers it; the others write their last second's calls within a second (the
    usage flush interval), so the figure is read until it stops growing."""
    headers = {"Authorization": f"Bearer {target.admin_key}"}
    last = -1
    for _ in range(10):
        status, data, _ = request(target.port, "GET", "/admin/usage", headers=headers, timeout=30)
        if status != 200:
            raise BenchError(f"GET /admin/usage gave HTTP {status}: {data[:300]!r}")
        count = sum(int(row.get("requests", 0)) for row in orjson.loads(data).get("data", []))
        if count == last:
            return count
        last = count
        time.sleep(1.2)
    return last


def start_redis(children: Children, tmp: Path) -> str:
    """Debian's redis-server on a free loopback port, no persistence (`--redis`): its URL."""
    port = free_port()
    args = ["--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(tmp)]
    children.start("redis", ["redis-server", *args], tmp / "redis.out")
    for _ in range(500):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                if sock.recv(16).startswith(b"+PONG"):
                    return f"redis://127.0.0.1:{port}/0"
        except OSError:
            pass
        time.sleep(0.02)
    raise BenchError("redis-server did not answer PING within 10 s")


def start_beside(
    children: Children, tmp: Path, proxy: Callable[[Children, Path, int, int], Target], workers: int = 2
) -> list[Target]:
    """The fake upstream itself, `proxy` (start_bare_proxy, start_floor_proxy) and unigate as
    operated, `workers` each, in front of one upstream, all ready."""
    upstream = start_upstream(children, tmp)
    wait_ready(upstream.child, upstream.port, "/", want=None)
    return [
        direct_target(upstream.child, upstream.port),
        proxy(children, tmp, upstream.port, workers),
        start_unigate(children, tmp, upstream.port, workers=workers),
    ]
