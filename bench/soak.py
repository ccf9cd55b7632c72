"""Soak: mixed traffic at a fixed rate against a real `unigate serve` on loopback, watching
for leaks and drift. Everything runs on 127.0.0.1 and stops by itself.

    .venv/bin/python bench/soak.py [--duration 600] [--rate 60] [--rss-limit 5]

The gateway serves the offline sandbox (SQLite, one worker). Each second `rate` calls go out,
mixed: chat (60%), streamed chat (15%), embeddings (10%), speech (5%), images (5%) and music
submits with a `notify_hook` (5%) to a webhook receiver here. After a warm-up (the first fifth,
at least 45 s) it samples the worker's resident memory and open file descriptors every
5 s and reports latency per 10 s window. It fails (exit 1) when RSS grew more than
`--rss-limit` (5%, the target for a 10-minute run) after the warm-up (as `rss_growth` judges
it), the descriptor count grew by more than 20, any call got a 5xx or failed, or a submitted
task's final webhook did not arrive.

Resident memory is the allocators' view: between two samples 5 s apart it moves by up to ~10%
of a worker's ~115 MB with no trend at all (arenas filled and kept, the buffers of the image,
speech and music calls in flight), so a short run judges only a gross leak; what each call
leaves behind is counted exactly, in process, by `tests/e2e/test_no_leak.py`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parent))

from procs import BenchError, Children, free_port, rss_kb
from targets import create_key, launch_unigate

MIX = [("chat", 60), ("stream", 15), ("embed", 10), ("speech", 5), ("image", 5), ("music", 5)]
WINDOW = 10.0  # seconds per latency window
SAMPLE_EVERY = 5.0
MAX_RSS_GROWTH_PCT = 5.0  # over a 10-minute run (the performance target)


@dataclass
class Results:
    latencies: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))
    by_kind: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    errors: list[str] = field(default_factory=list)
    samples: list[tuple[float, int, int]] = field(default_factory=list)  # (t, rss KiB, fds)
    tasks: set[str] = field(default_factory=set)
    finished_hooks: set[str] = field(default_factory=set)


def _fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def call_for(kind: str, hook: str) -> tuple[str, dict[str, Any]]:
    """The path and JSON body of one call of `kind` (a `MIX` name), with a few random words:
    the soak's traffic, and `tests/e2e/test_no_leak.py`'s."""
    words = " ".join(random.choice(["rain", "city", "blue", "night", "song", "light"]) for _ in range(6))
    chat = {"model": "sandbox-chat", "messages": [{"role": "user", "content": words}]}
    calls: dict[str, tuple[str, dict[str, Any]]] = {
        "chat": ("/v1/chat/completions", chat),
        "stream": ("/v1/chat/completions", {**chat, "stream": True}),
        "embed": ("/v1/embeddings", {"model": "sandbox-embedding", "input": [words, words[::-1]]}),
        "speech": (
            "/v1/audio/speech",
            {"model": "sandbox-tts", "voice": "alloy", "input": words[:40], "response_format": "wav"},
        ),
        "image": ("/v1/images/generations", {"model": "sandbox-image", "prompt": words, "size": "256x256"}),
        "music": (
            "/suno/submit/music",
            {"prompt": words, "mv": "chirp-v4", "title": "soak", "tags": "pop", "notify_hook": hook},
        ),
    }
    return calls[kind]


async def _call(
    session: aiohttp.ClientSession, base: str, key: str, kind: str, hook: str, res: Results, start: float
) -> None:
    headers = {"Authorization": f"Bearer {key}"}
    path, body = call_for(kind, hook)
    began = time.monotonic()
    try:
        async with session.post(base + path, json=body, headers=headers) as resp:
            data = await resp.read()
            if resp.status >= 400:
                res.errors.append(f"{kind}: HTTP {resp.status} {data[:200]!r}")
                return
            if kind == "music":
                task = _json(data).get("data")  # the whole task record
                if isinstance(task, dict) and isinstance(task.get("task_id"), str):
                    res.tasks.add(task["task_id"])
    except (aiohttp.ClientError, TimeoutError) as exc:
        res.errors.append(f"{kind}: {type(exc).__name__} {exc}")
        return
    res.latencies[int((began - start) // WINDOW)].append(time.monotonic() - began)
    res.by_kind[kind] += 1


def _json(data: bytes) -> dict[str, Any]:
    parsed = orjson.loads(data)
    return parsed if isinstance(parsed, dict) else {}


async def _receiver(res: Results) -> tuple[web.AppRunner, str]:
    async def hook(request: web.Request) -> web.Response:
        event = await request.json()
        data = event.get("data") if isinstance(event, dict) else None
        record = data if isinstance(data, dict) else event
        task_id = record.get("task_id") or record.get("id")
        if record.get("status") in ("SUCCESS", "FAILURE") and isinstance(task_id, str):
            res.finished_hooks.add(task_id)
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_post("/hook", hook)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner, f"http://127.0.0.1:{port}/hook"


async def soak(duration: float, rate: float, tmp: Path, rss_limit: float = MAX_RSS_GROWTH_PCT) -> int:
    res = Results()
    children = Children()
    runner, hook = await _receiver(res)
    try:
        config = {
            "sandbox": {"enabled": True, "music_seconds": 2.0},
            "tasks": {"poll_interval": 0.5, "max_poll_interval": 1.0, "allow_private_webhooks": True},
        }
        gateway = await asyncio.to_thread(launch_unigate, children, tmp, config)
        key = await asyncio.to_thread(create_key, gateway)
        pid = gateway.child.pid
        base = f"http://127.0.0.1:{gateway.port}"
        kinds = [k for k, w in MIX for _ in range(w)]
        start = time.monotonic()
        # Caches (fonts, codecs, allocator arenas) fill during the first half minute or so:
        # in a loaded CI run RSS was still rising to its plateau at 30 s (129 -> 140 MB).
        warm = max(45.0, duration / 5)
        pending: set[asyncio.Task[None]] = set()
        timeout = aiohttp.ClientTimeout(total=30)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            next_sample = start + warm
            sent = 0
            while (now := time.monotonic()) < start + duration:
                due = int((now - start) * rate)
                while sent < due:
                    task = asyncio.ensure_future(
                        _call(session, base, key, random.choice(kinds), hook, res, start)
                    )
                    pending.add(task)
                    task.add_done_callback(pending.discard)
                    sent += 1
                if now >= next_sample:
                    res.samples.append((now - start, rss_kb(pid) or 0, _fd_count(pid)))
                    next_sample += SAMPLE_EVERY
                await asyncio.sleep(0.005)
            await asyncio.gather(*pending)
        # Every submitted task's final webhook, within the sandbox's time and a poll or two.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not res.tasks <= res.finished_hooks:
            await asyncio.sleep(0.5)
        res.samples.append((time.monotonic() - start, rss_kb(pid) or 0, _fd_count(pid)))
        return _report(res, sent, duration, rss_limit)
    finally:
        await runner.cleanup()
        children.stop_all()


def _rss_trend(samples: list[tuple[float, int, int]]) -> float:
    """RSS growth after warm-up in % of its start, from the Theil-Sen slope of every sample
    (the median of the pairwise slopes): one sample caught while a burst of image or speech
    buffers is alive, at either end, moves it no more than any other, as it did a
    first-vs-last comparison. A leak grows steadily and still shows in full."""
    if len(samples) < 3:
        return 0.0
    slopes = sorted(
        (b[1] - a[1]) / (b[0] - a[0]) for i, a in enumerate(samples) for b in samples[i + 1 :] if b[0] > a[0]
    )
    base = statistics.median(s[1] for s in samples[:3])
    span = samples[-1][0] - samples[0][0]
    return statistics.median(slopes) * span / base * 100 if base else 0.0


def rss_growth(samples: list[tuple[float, int, int]]) -> float:
    """The growth judged against the limit, in %: the smallest of the trend over the run, the end
    against the start, and the trend of the run's second half scaled to the whole run. A leak
    grows steadily and raises all three; allocator arenas filling mid-run and given back by the
    end raise only the first; one late sample only the second; a process still filling its caches
    after the warm-up (in one loaded full-suite run it rose 107 -> 120 MB, where other runs stay
    flat at 112-116) slows down, so its second half grows less than its first."""
    first, last = samples[0], samples[-1]
    trend = _rss_trend(samples)
    end_growth = (last[1] - first[1]) / first[1] * 100 if first[1] else 0.0
    half = samples[len(samples) // 2 :]
    late = _rss_trend(half) * (last[0] - first[0]) / (half[-1][0] - half[0][0]) if len(half) >= 3 else trend
    return min(trend, end_growth, late)


def _report(res: Results, sent: int, duration: float, rss_limit: float) -> int:
    print(
        f"soak: {sent} calls in {duration:.0f} s ({sent / duration:.0f}/s): "
        + ", ".join(f"{k} {n}" for k, n in sorted(res.by_kind.items()))
    )
    p99s = []
    for window in sorted(res.latencies):
        lat = sorted(res.latencies[window])
        p50, p99 = lat[len(lat) // 2], lat[min(len(lat) - 1, int(len(lat) * 0.99))]
        p99s.append(p99)
        span = f"t={window * WINDOW:5.0f}-{(window + 1) * WINDOW:.0f}s"
        print(f"  {span}  n={len(lat):5d}  p50 {p50 * 1000:6.1f} ms  p99 {p99 * 1000:6.1f} ms")
    first, last = res.samples[0], res.samples[-1]
    trend = _rss_trend(res.samples)
    end_growth = (last[1] - first[1]) / first[1] * 100 if first[1] else 0.0
    growth = rss_growth(res.samples)
    fd_growth = last[2] - first[2]
    print(
        f"  RSS after warm-up {first[1] / 1024:.1f} MB -> end {last[1] / 1024:.1f} MB "
        f"({end_growth:+.1f}%; trend over the run {trend:+.1f}%)"
    )
    print("  RSS samples (s: MB): " + ", ".join(f"{t:.0f}: {kb / 1024:.1f}" for t, kb, _ in res.samples))
    print(
        f"  open fds after warm-up {first[2]} -> end {last[2]} ({fd_growth:+d}); "
        f"max {max(s[2] for s in res.samples)}"
    )
    if p99s:
        print(
            f"  p99 per window: median {statistics.median(p99s) * 1000:.1f} ms, max {max(p99s) * 1000:.1f} ms"
        )
    missing = res.tasks - res.finished_hooks
    print(f"  music tasks {len(res.tasks)}, final webhooks received {len(res.tasks) - len(missing)}")
    failures = []
    if growth > rss_limit:
        failures.append(f"RSS grew {growth:.1f}% after warm-up (limit {rss_limit:g}%)")
    if fd_growth > 20:
        failures.append(f"open file descriptors grew by {fd_growth}")
    if res.errors:
        failures.append(f"{len(res.errors)} failed calls, first: {res.errors[0]}")
    if missing:
        failures.append(f"{len(missing)} tasks without a final webhook")
    for failure in failures:
        print(f"  FAIL: {failure}")
    print("VERDICT: " + ("FAIL" if failures else "PASS"))
    return 1 if failures else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=600.0, help="seconds (default 600)")
    parser.add_argument("--rate", type=float, default=60.0, help="calls per second (default 60)")
    parser.add_argument(
        "--rss-limit",
        type=float,
        default=MAX_RSS_GROWTH_PCT,
        help=f"RSS growth after warm-up that fails the run, in %% (default {MAX_RSS_GROWTH_PCT:g})",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="unigate-soak-") as tmp:
        try:
            code = asyncio.run(soak(args.duration, args.rate, Path(tmp), args.rss_limit))
        except BenchError as exc:
            print(f"soak: {exc}", file=sys.stderr)
            code = 2
    sys.exit(code)


if __name__ == "__main__":
    main()
