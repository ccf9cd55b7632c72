"""Time to first byte of a Responses API stream: straight at an upstream that serves it, through
unigate relaying it natively (`responses: native`), and through unigate translating it to the
upstream's chat completions; with the chat stream both ways for reference.

    bash bench/python.sh responses_ttfb.py [--count 200] [--warmup 20]

The upstream is the benchmark's fixed-bytes one (nginx, or the Python fallback: `fake_upstream.py`
serves a Responses stream at RESPONSES_PATH); unigate runs one worker on local SQLite with a key
that has rpm, tpm and a budget, so every limit is on the measured path, as in `run.py`. Each
figure is `count` sequential streams on one keep-alive connection (ttfb.py), each checked for
its final event. Exit status: 0, or 2 when it could not run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import orjson
from cli import log, run_main
from fake_upstream import RESPONSES_PATH, STREAM_PATH
from procs import BenchError, Children, request
from report import ttfb_stats
from targets import create_key, launch_unigate
from ttfb import measure_ttfb
from upstream import start_upstream

NATIVE_MODEL = "bench-responses"  # routed to the native provider
CHAT_MODEL = "bench-stream"  # routed to the chat-only provider: Responses calls translated
_DONE = b'"type":"response.completed"'


def _responses_body(model: str) -> bytes:
    # `store: false`: the fixed upstream answers every call with the same response id, which the
    # gateway would refuse to store twice; storing happens after the first byte anyway.
    return orjson.dumps({"model": model, "input": "hello", "stream": True, "store": False})


def _chat_body(model: str) -> bytes:
    return orjson.dumps({"model": model, "messages": [{"role": "user", "content": "hello"}], "stream": True})


def _config(upstream_port: int) -> dict[str, Any]:
    origin = f"http://127.0.0.1:{upstream_port}"
    return {
        "providers": [
            {"name": "up-stream", "protocol": "openai", "base_url": f"{origin}/stream/v1", "api_key": "sk-b"},
            {
                "name": "up-responses",
                "protocol": "openai",
                "base_url": origin + RESPONSES_PATH.removesuffix("/responses"),
                "api_key": "sk-b",
                "responses": "native",
            },
        ],
        "models": [
            {"name": CHAT_MODEL, "routes": [{"provider": "up-stream"}]},
            {"name": NATIVE_MODEL, "routes": [{"provider": "up-responses"}]},
        ],
    }


def bench(args: argparse.Namespace, children: Children, tmp: Path) -> int:
    upstream = start_upstream(children, tmp)
    gateway = launch_unigate(children, tmp, _config(upstream.port))
    key = create_key(gateway, rpm=1_000_000, tpm=1_000_000_000, budget=1e9)
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    probe, _, _ = request(gateway.port, "POST", "/v1/responses", b"{}", headers)
    if probe == 404:
        raise BenchError("this unigate has no POST /v1/responses endpoint")
    log(f"  upstream {upstream.kind} on :{upstream.port}, unigate on :{gateway.port}")
    # name -> (port, path, body, key, final event)
    runs: dict[str, tuple[int, str, bytes, str, bytes]] = {
        "responses direct": (upstream.port, RESPONSES_PATH, _responses_body(NATIVE_MODEL), "", _DONE),
        "responses native": (gateway.port, "/v1/responses", _responses_body(NATIVE_MODEL), key, _DONE),
        "responses translated": (gateway.port, "/v1/responses", _responses_body(CHAT_MODEL), key, _DONE),
        "chat direct": (upstream.port, STREAM_PATH, _chat_body(CHAT_MODEL), "", b"[DONE]"),
        "chat relayed": (gateway.port, "/v1/chat/completions", _chat_body(CHAT_MODEL), key, b"[DONE]"),
    }
    log(f"Streaming TTFB ({args.count} sequential requests each after {args.warmup} warm-up) ...")
    stats = {}
    for name, (port, path, body, auth, last) in runs.items():
        # A Responses stream ends with the whole response object: its type comes well before the end.
        samples = measure_ttfb(port, path, body, auth, args.count, args.warmup, last, window=4096)
        stats[name] = ttfb_stats(samples)
    log(f"\n{'':22} {'TTFB p50':>10} {'TTFB p99':>10} {'total p50':>10}")
    for name, s in stats.items():
        log(f"{name:22} {s['p50_us']:8.0f}us {s['p99_us']:8.0f}us {s['total_p50_us']:8.0f}us")
    base = stats["responses direct"]["p50_us"]
    for name in ("responses native", "responses translated"):
        log(f"{name}: +{stats[name]['p50_us'] - base:.0f} us over the upstream at p50")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=200, help="measured streams per figure (default 200)")
    parser.add_argument("--warmup", type=int, default=20, help="unrecorded streams first (default 20)")
    args = parser.parse_args()
    if args.count < 1 or args.warmup < 0:
        parser.error("--count must be >= 1 and --warmup >= 0")
    return run_main("Responses API stream TTFB", "unigate-responses-ttfb-", args, bench)


if __name__ == "__main__":
    sys.exit(main())
