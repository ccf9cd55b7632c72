"""A full disk never kills the gateway, and it recovers by itself when space returns.

A real `unigate serve` (2 workers: the shared limits table and per-worker metrics files are in
play) runs with its data dir on a 32 MB tmpfs mounted in a mount namespace of its own. Stored
Responses with 1 MB inputs fill the database until one is refused, and a filler file written
into the mount takes the rest. While the disk is full: the same processes answer, calls that
must write get a 503 in their family's shape, and calls that only touch the memory-mapped files
where a new page would be needed (a new key's first limit slot; dozens of new metrics label
sets, new status labels among them) succeed. Once the filler is removed, the same calls
succeed, with no restart, and the usage of the calls made meanwhile is in the report.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.error_shapes import shape_problem
from tests.support.gateway import ADMIN_KEY, GatewayProcess
from tests.support.music import assert_error_envelope
from tests.support.net import HTTPResult, free_port, http
from tests.support.tiny_disk import fill, inside, mounted_prefix, require_namespaces

pytestmark = pytest.mark.process

MODELS = [f"m-{i:02d}" for i in range(60)]  # ~60 new label sets: more than a 64 KiB value file holds
BIG = "x" * 1_000_000


def _config() -> dict[str, Any]:
    def model(name: str) -> dict[str, Any]:
        route = [{"provider": "sandbox", "model": "sandbox-chat"}]
        return {"name": name, "routes": route, "input_per_million": 1.0, "output_per_million": 2.0}

    return {
        "models": [model("priced-chat"), *map(model, MODELS)],
        "sandbox": {"enabled": True, "music_seconds": 1},
    }


@pytest.fixture
def gw(tmp_path: Path) -> Iterator[GatewayProcess]:
    require_namespaces()  # fails, loudly, where a private tmpfs cannot be mounted
    prefix = mounted_prefix(tmp_path / "data", "32m")
    with GatewayProcess(tmp_path, config=_config(), workers=2, prefix=prefix) as gateway:
        yield gateway


def _processes(gw: GatewayProcess) -> set[int]:
    """The server and its children (the workers): a worker killed and restarted changes it."""
    assert gw.proc is not None and gw.proc.poll() is None, gw.log()[-3000:]
    pid = gw.proc.pid
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return {pid, *map(int, children)}


def _caller(gw: GatewayProcess, key: str) -> Callable[..., HTTPResult]:
    def call(path: str, body: dict[str, Any]) -> HTTPResult:
        return http("POST", gw.base_url + path, body, {"Authorization": f"Bearer {key}"}, timeout=15)

    return call


def _chat(model: str) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": "hi"}]}


def _refused(res: HTTPResult, style: str, code: str) -> None:
    assert res.status == 503, (res.status, res.body[:300])
    body = res.json()
    assert shape_problem(style, body) is None, shape_problem(style, body)
    found = body["error"]["code"] if style == "openai" else body["code"]
    assert found == code, body


def _usage_requests(gw: GatewayProcess, key_id: str) -> int:
    res = gw.admin("GET", "/admin/usage?group_by=key")
    assert res.status == 200, res.body
    return sum(int(row["requests"]) for row in res.json()["data"] if row["key_id"] == key_id)


def _counted(gw: GatewayProcess) -> dict[str, float]:
    """Requests per model in the latency histogram (17 values per label set: the file that
    outgrows its first 64 KiB first), from a scrape."""
    res = gw.admin("GET", "/metrics")
    assert res.status == 200
    counts: dict[str, float] = {}
    for line in res.body.decode().splitlines():
        if line.startswith("unigate_request_duration_seconds_count{"):
            model = line.split('model="', 1)[1].split('"', 1)[0]
            counts[model] = counts.get(model, 0.0) + float(line.rsplit(" ", 1)[1])
    return counts


def _eventually(check: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.2)
    return check()


def test_a_full_disk_costs_503s_not_the_process_and_passes_without_a_restart(gw: GatewayProcess) -> None:
    started = time.monotonic()
    assert gw.proc is not None
    data = inside(gw.proc.pid, gw.workdir / "data")  # the tmpfs, as the server sees it
    first = gw.create_key(rpm=1000)
    later = gw.create_key_record(name="first-call-while-full", rpm=1000)  # no limit slot yet
    call, call_later = _caller(gw, first), _caller(gw, later["key"])
    assert call("/v1/chat/completions", _chat("priced-chat")).status == 200
    processes = _processes(gw)
    assert len(processes) >= 3, "the server and its two workers"

    # Fill: most of the space with a file, then stored Responses until the database is refused,
    # then a file for the rest, then smaller Responses until even a small one is refused (a
    # refused write leaves its space in SQLite's log for the next one).
    filler = fill(data, "filler", leave=4_000_000)
    for _ in range(10):
        stored = call("/v1/responses", {"model": "priced-chat", "input": BIG})
        if stored.status != 200:
            break
    _refused(stored, "openai", "database_unavailable")
    rest = fill(data, "rest")
    for size in (300_000, 60_000, 12_000, 2_000, 200):
        for _ in range(200):
            if call("/v1/responses", {"model": "priced-chat", "input": "y" * size}).status == 503:
                break

    # Full. Calls that must write are refused in their family's shape.
    _refused(call("/v1/responses", {"model": "priced-chat", "input": BIG}), "openai", "database_unavailable")
    image = {"model": "sandbox-image", "prompt": "a tree", "size": "256x256", "response_format": "url"}
    _refused(call("/v1/images/generations", image), "openai", "storage_unavailable")
    music = {"prompt": "la la", "mv": "chirp-v4", "title": "t", "tags": "calm"}
    assert_error_envelope(call("/suno/submit/music", music), 503, "storage_unavailable")
    # Calls that write nothing to disk still work, though each needs pages of the mapped files
    # no call had touched: a new key's first limit slot, new label sets (new statuses too).
    first_call = call_later("/v1/chat/completions", _chat("priced-chat"))
    assert first_call.status == 200 and first_call.headers["x-ratelimit-limit-requests"] == "1000"
    answered = 1
    for model in MODELS:
        res = call_later("/v1/chat/completions", _chat(model))
        assert res.status == 200, (model, res.status, res.body[:300])
        answered += 1
    missing = call_later("/v1/chat/completions", _chat("no-such-model"))
    assert missing.status == 404 and missing.json()["error"]["code"] == "model_not_found"
    assert http("GET", gw.base_url + "/healthz").status == 200
    # The histogram files could not grow for all those label sets: some are counted nowhere.
    lost = [model for model in MODELS if model not in _counted(gw)]
    assert lost, "the value files met the full disk"
    # The usage of those calls cannot be written (each worker tries once a second): it waits.
    assert _eventually(lambda: "usage-flush: OperationalError: database or disk is full" in gw.log())
    assert _processes(gw) == processes, "no worker died (and none was restarted)"

    # Space back: the same calls succeed with no restart.
    filler.unlink()
    rest.unlink()
    assert call("/v1/responses", {"model": "priced-chat", "input": BIG}).status == 200
    assert call("/v1/images/generations", image).status == 200
    submitted = call("/suno/submit/music", music)
    assert submitted.status == 200 and submitted.json()["code"] == "success", submitted.body
    assert call_later("/v1/chat/completions", _chat("priced-chat")).status == 200
    answered += 1
    # The usage of the calls made while the disk was full was kept, and is written now.
    assert _eventually(lambda: _usage_requests(gw, later["id"]) == answered), _usage_requests(gw, later["id"])

    # A label set that had no room is counted once the value file can grow (tried each second).
    def counted() -> bool:
        assert call_later("/v1/chat/completions", _chat(lost[-1])).status == 200
        return lost[-1] in _counted(gw)

    assert _eventually(counted)
    assert _processes(gw) == processes and http("GET", gw.base_url + "/healthz").status == 200
    log = gw.log()
    assert "Bus error" not in log and "unhandled error" not in log and "Traceback" not in log, log[-3000:]
    # Each writer that said it could not write says, at its next pass that works, that it can again.
    writers = [line for line in log.splitlines() if "usage-flush" in line or "request-log" in line]
    assert _eventually(lambda: "usage-flush: working again" in gw.log()), writers

    def recovered(writer: str) -> bool:
        text = gw.log()
        return f"{writer}: working again" in text or f"{writer}: " not in text

    assert _eventually(lambda: recovered("request-log")), gw.log()[-3000:]
    assert "metrics: no room for" in log and "has room again" in log
    print(f"disk-full run: {time.monotonic() - started:.1f} s")


def test_no_room_for_the_limits_table_is_one_startup_line(tmp_path: Path) -> None:
    require_namespaces()
    data = tmp_path / "data"
    env = {**os.environ, "UNIGATE_DATA_DIR": str(data), "UNIGATE_ADMIN_KEY": ADMIN_KEY}
    env.pop("UNIGATE_CONFIG", None)
    command = [sys.executable, "-m", "unigate", "serve", "--workers", "2", "--port", str(free_port())]
    # 2 MB: room for the data dir's checks, not for the workers' 3 MB limits table.
    done = subprocess.run(
        [*mounted_prefix(data, "2m"), *command],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith("error: cannot allocate the limits table"), lines
    assert str(data) in lines[0] and "No space left on device" in lines[0] and "free space" in lines[0]
