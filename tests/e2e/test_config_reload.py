"""Config reload against the real serve, with one worker and with two: SIGHUP to the serve
process and `POST /admin/reload` both apply a new model, a changed provider and a new price
while a slow stream is in flight (the stream completes intact, on the provider and price it
started with), on every worker; a broken file (YAML syntax, an unknown key) is refused with
its error and the running config keeps serving; the README's commands run as written."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import openai
import pytest
import yaml

from tests.support.fake_openai import FakeOpenAI
from tests.support.gateway import ADMIN_KEY, GatewayProcess
from tests.support.net import HTTPResult, http
from tests.support.readme import lines_starting

pytestmark = pytest.mark.process

# The fake answers 11 prompt and 7 completion tokens to every chat.
BEFORE = {"input_per_million": 1000.0, "output_per_million": 2000.0}  # 0.011 + 0.014
AFTER = {"input_per_million": 3000.0, "output_per_million": 4000.0}  # 0.033 + 0.028
COST_BEFORE, COST_AFTER = 0.025, 0.061


def _config(fake: FakeOpenAI, reloaded: bool = False) -> dict[str, Any]:
    up: dict[str, Any] = {"name": "up", "protocol": "openai", "base_url": fake.base_url, "api_key": "sk-up"}
    if not reloaded:
        return {"providers": [up], "models": [{"name": "chat-a", "routes": [{"provider": "up"}], **BEFORE}]}
    up = {**up, "headers": {"x-config": "2"}}  # a changed provider: a new object for new requests
    # pragma: allowlist nextline secret
    added = {"name": "up2", "protocol": "openai", "base_url": fake.base_url, "api_key": "sk-up2"}
    models = [
        {"name": "chat-a", "routes": [{"provider": "up"}], **AFTER},
        {"name": "chat-b", "routes": [{"provider": "up2"}]},
    ]
    return {"providers": [up, added], "models": models}


def _write(gw: GatewayProcess, text: str | bytes) -> None:
    path = Path(gw.env["UNIGATE_CONFIG"])
    tmp = path.with_suffix(".new")
    if isinstance(text, bytes):
        tmp.write_bytes(text)
    else:
        tmp.write_text(text)
    os.replace(tmp, path)  # as an editor saves it: never half a file


def _reload(gw: GatewayProcess, how: str) -> HTTPResult | None:
    if how == "admin":
        return gw.admin("POST", "/admin/reload")
    assert gw.proc is not None
    gw.proc.send_signal(signal.SIGHUP)  # the serve process: the supervisor with two workers
    return None


def _chat(gw: GatewayProcess, key: str, model: str) -> HTTPResult:
    body = {"model": model, "messages": [{"role": "user", "content": "hello"}]}
    return http("POST", gw.base_url + "/v1/chat/completions", body, {"Authorization": f"Bearer {key}"})


def _on_every_worker(gw: GatewayProcess, key: str, model: str) -> set[str]:
    """Calls `model` on new connections until every worker answered one (a worker's request
    ids share a prefix); every call must succeed."""
    workers: set[str] = set()
    deadline = time.monotonic() + 30  # a worker may still be starting on a busy machine
    with ThreadPoolExecutor(8) as pool:
        while time.monotonic() < deadline:
            for res in pool.map(lambda _: _chat(gw, key, model), range(8)):
                assert res.status == 200, res.body
                workers.add(res.headers["x-request-id"][:8])
            if len(workers) == gw.workers:
                return workers
            time.sleep(0.2)
    raise AssertionError(f"only {len(workers)} of {gw.workers} workers answered")


def _spent(gw: GatewayProcess, key_id: str) -> float:
    rows = gw.admin("GET", "/admin/usage").json()["data"]
    return sum(float(r["cost"]) for r in rows if r["key_id"] == key_id)


def _log_lines(gw: GatewayProcess, needle: str, count: int, timeout: float = 3.0) -> list[str]:
    deadline = time.monotonic() + timeout
    while True:
        lines = [line for line in gw.log().splitlines() if needle in line]
        if len(lines) >= count or time.monotonic() > deadline:
            return lines
        time.sleep(0.1)


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("how", ["sighup", "admin"])
def test_reload_while_a_stream_is_in_flight(
    tmp_path: Path, fake_openai: FakeOpenAI, how: str, workers: int
) -> None:
    fake_openai.mode, fake_openai.slow_seconds = "slow_stream", 0.4  # 8 events: about 3 s
    with GatewayProcess(tmp_path, config=_config(fake_openai), workers=workers) as gw:
        streamer, caller = gw.create_key_record(name="streamer"), gw.create_key_record(name="caller")
        assert _chat(gw, caller["key"], "chat-b").status == 404
        _on_every_worker(gw, gw.create_key(), "chat-a")  # every worker is up (and reloads)
        before = len(fake_openai.received)
        chunks: list[Any] = []
        first = threading.Event()

        def stream() -> None:
            client = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=streamer["key"], max_retries=0)
            for chunk in client.chat.completions.create(
                model="chat-a",
                messages=[{"role": "user", "content": "stream please"}],
                stream=True,
                stream_options={"include_usage": True},
            ):
                chunks.append(chunk)
                first.set()

        streaming = threading.Thread(target=stream)
        streaming.start()
        assert first.wait(10), "the stream started"
        _write(gw, yaml.safe_dump(_config(fake_openai, reloaded=True)))
        answer = _reload(gw, how)
        if answer is not None:
            assert answer.status == 200, answer.body
            report = answer.json()
            assert report["changed"] is True and report["config"] == gw.env["UNIGATE_CONFIG"]
            assert report["providers"] == {"added": ["up2"], "removed": [], "changed": ["up"]}
            assert report["models"] == {"added": ["chat-b"], "removed": [], "changed": ["chat-a"]}
            assert report["restart_required"] == [] and report["settings"] == []
        time.sleep(1.0)  # the whole serve converges within a second
        assert streaming.is_alive(), "the reload happened while the stream was in flight"

        _on_every_worker(gw, caller["key"], "chat-b")  # the new model, on every worker
        assert _chat(gw, caller["key"], "chat-a").status == 200
        streaming.join(15)
        assert not streaming.is_alive()
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert text.strip() == fake_openai.reply_text, "the stream completed intact"
        assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 7

        # The stream ran on the provider object it started with, new calls on the new one.
        stream_call, *later = fake_openai.received[before:]
        assert stream_call.body.get("stream") is True and "x-config" not in stream_call.headers
        to_a = [r for r in later if r.body["model"] == "chat-a"]
        assert len(to_a) == 1 and to_a[0].headers["x-config"] == "2"

        time.sleep(1.5)  # every worker flushes its usage each second
        assert _spent(gw, streamer["id"]) == pytest.approx(COST_BEFORE), "priced as when it started"
        assert _spent(gw, caller["id"]) == pytest.approx(COST_AFTER), "the new price (chat-b is free)"
        lines = _log_lines(gw, "config reloaded", workers)
        assert len(lines) == workers, lines
        assert "providers +up2 ~up; models +chat-b ~chat-a" in lines[0]
        assert "ERROR" not in gw.log() and "Traceback" not in gw.log()


@pytest.mark.parametrize("workers", [1, 2])
def test_a_broken_file_is_refused_and_the_running_config_stays(
    tmp_path: Path, fake_openai: FakeOpenAI, workers: int
) -> None:
    good = _config(fake_openai)
    with GatewayProcess(tmp_path, config=good, workers=workers) as gw:
        key = gw.create_key()
        _on_every_worker(gw, key, "chat-a")  # every worker is up (and so logs its refusals)
        assert gw.admin("POST", "/admin/reload").json()["changed"] is False  # nothing changed yet
        refused = http("POST", gw.base_url + "/admin/reload", headers={"Authorization": f"Bearer {key}"})
        assert refused.status == 401, "an API key is not the admin key"

        unknown_key = {**good, "models": [{**good["models"][0], "pricee": 1}, *good["models"][1:]]}
        broken = {
            "syntax": ("providers: [ {name: up\nmodels: x\n", "is not valid YAML"),
            "unknown key": (yaml.safe_dump(unknown_key), "models[0].pricee: unknown key"),
        }
        errors_before = 0
        for text, problem in broken.values():
            _write(gw, text)
            answer = gw.admin("POST", "/admin/reload")
            assert answer.status == 400, answer.body
            error = answer.json()["error"]
            assert error["code"] == "invalid_config" and error["type"] == "invalid_request_error"
            assert problem in error["message"] and gw.env["UNIGATE_CONFIG"] in error["message"]
            assert error["message"].endswith("the running configuration stays")

            assert gw.proc is not None
            gw.proc.send_signal(signal.SIGHUP)
            errors_before += workers
            lines = _log_lines(gw, "config reload (SIGHUP) refused", errors_before)
            assert len(lines) == errors_before, lines  # one line per worker
            assert " ERROR " in lines[-1] and problem in lines[-1]
            _on_every_worker(gw, key, "chat-a")  # the running config keeps serving

        _write(gw, yaml.safe_dump(_config(fake_openai, reloaded=True)))
        assert gw.admin("POST", "/admin/reload").status == 200
        time.sleep(1.0)
        _on_every_worker(gw, key, "chat-b")
        assert "Traceback" not in gw.log()


def _laughs(levels: int) -> bytes:
    lines = ["l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return ("\n".join(lines) + "\n").encode()


HOSTILE = {
    # Expanded, nine levels are 387 million strings: the worker ran for minutes, gigabytes deep.
    "alias bomb": (_laughs(9), "line 1, column 5: anchors (&name) are not allowed"),
    "deep nesting": (b"models: " + b"[" * 100_000 + b"]" * 100_000, "nested deeper than 64 levels"),
    "not utf-8": (b"models: []\n# caf\xe9\n", "is not UTF-8 text: byte 0xe9 at byte offset 16"),
    "over 1 MiB": (b"#" * (1024 * 1024 + 1), "larger than the 1 MiB (1,048,576 bytes) limit"),
}


def test_a_hostile_file_is_a_quick_400_and_the_worker_keeps_serving(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    with GatewayProcess(tmp_path, config=_config(fake_openai)) as gw:
        key = gw.create_key()
        for name, (data, problem) in HOSTILE.items():
            _write(gw, data)
            started = time.monotonic()
            answer = gw.admin("POST", "/admin/reload")
            assert time.monotonic() - started < 5, name
            assert answer.status == 400, (name, answer.status, answer.body[:300])
            error = answer.json()["error"]
            assert error["code"] == "invalid_config" and problem in error["message"], (name, error)
            assert error["message"].endswith("the running configuration stays"), name
            assert _chat(gw, key, "chat-a").status == 200, name
        assert "Traceback" not in gw.log()


def _readme_command(start: str) -> str:
    lines = lines_starting(start)
    assert len(lines) == 1, f"the README and the site's pages have one line starting {start!r}"
    return lines[0].split("  #")[0]


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs the curl command")
def test_the_readme_commands(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    with GatewayProcess(tmp_path, config=_config(fake_openai), workers=2) as gw:
        key = gw.create_key()
        assert gw.proc is not None
        # `unigate` as installed beside this Python; the data directory the server keeps its pid in.
        path = f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"
        env = {
            **os.environ,
            "ADMIN_KEY": ADMIN_KEY,
            "UNIGATE_DATA_DIR": gw.env["UNIGATE_DATA_DIR"],
            "PATH": path,
        }
        pid_file = Path(gw.env["UNIGATE_DATA_DIR"]) / "unigate.pid"
        assert pid_file.read_text().strip() == str(gw.proc.pid)

        def sh(command: str) -> str:
            command = command.replace("http://127.0.0.1:8000", gw.base_url)
            done = subprocess.run(
                ["bash", "-c", command], capture_output=True, text=True, env=env, timeout=30
            )
            assert done.returncode == 0, done.stderr
            return done.stdout

        _write(gw, yaml.safe_dump(_config(fake_openai, reloaded=True)))
        said = sh(_readme_command("unigate reload   #"))
        assert f"sent SIGHUP to unigate serve (pid {gw.proc.pid})" in said, said
        time.sleep(1.0)
        _on_every_worker(gw, key, "chat-b")
        sh(_readme_command('kill -HUP "$(cat'))
        time.sleep(1.0)
        _on_every_worker(gw, key, "chat-b")
        answer = yaml.safe_load(sh(_readme_command("curl -s -X POST http://127.0.0.1:8000/admin/reload")))
        assert answer["object"] == "config.reload" and answer["changed"] is False
    assert not pid_file.exists(), "a server that stopped leaves no pid file behind"
