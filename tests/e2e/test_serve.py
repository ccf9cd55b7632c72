"""`unigate serve` contracts: admin key printed once, config errors named, several workers
sharing revocations and saying their start-up lines once, PostgreSQL as the database."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import openai
import pytest

from tests.support.fake_openai import FakeOpenAI
from tests.support.gateway import GatewayProcess, serve_refused
from tests.support.net import free_port, http
from unigate.limits.table_lock import semaphore_name

pytestmark = pytest.mark.process


def test_admin_key_generated_and_printed_once(tmp_path: Path) -> None:
    env = {"UNIGATE_ADMIN_KEY": ""}
    first = GatewayProcess(tmp_path, env=env).start()
    first.stop()
    stored = (tmp_path / "data" / "admin_key").read_text().strip()
    assert stored.startswith("uga_") and stored in first.log()
    assert oct((tmp_path / "data" / "admin_key").stat().st_mode & 0o777) == "0o600"
    second = GatewayProcess(tmp_path, env=env)
    second.log_path = tmp_path / "second.log"
    second.start()
    try:
        assert stored not in second.log(), "the admin key is printed only when it is created"
        res = http("GET", second.base_url + "/admin/keys", headers={"Authorization": f"Bearer {stored}"})
        assert res.status == 200
    finally:
        second.stop()


def test_config_error_names_key_and_file(tmp_path: Path) -> None:
    config, proc = serve_refused(
        tmp_path, "providers:\n  - name: x\n    protocol: openai\n    base_urll: http://x\n"
    )
    assert proc.returncode == 2
    assert "providers[0].base_urll: unknown key" in proc.stderr and str(config) in proc.stderr.replace(
        "\n", ""
    )


HOSTILE = {
    "anchors": (b"a: &a [x, x]\nb: [*a, *a, *a]\n", "line 1, column 4: anchors (&name) are not allowed"),
    "deep": (b"models: " + b"[" * 100_000 + b"]" * 100_000, "nested deeper than 64 levels"),
    "not-utf8": (b"models: []\n# caf\xe9\n", "is not UTF-8 text: byte 0xe9 at byte offset 16"),
    "over-1-mib": (b"#" * (1024 * 1024 + 1), "larger than the 1 MiB (1,048,576 bytes) limit"),
}


def test_a_hostile_config_file_is_one_error_line(tmp_path: Path) -> None:
    """Anchors, deep nesting, bytes that are not UTF-8, a file too big: each is refused at
    start-up with one line naming the file, what is wrong and the fix, never a traceback."""
    for name, (data, problem) in HOSTILE.items():
        config, proc = serve_refused(tmp_path, data)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1, (name, proc.stderr[-2000:])
        assert lines[0].startswith("error: config file " + str(config)), (name, lines[0])
        assert problem in lines[0] and "fix the config file" in lines[0], (name, lines[0])


def test_unknown_protocol_is_refused(tmp_path: Path) -> None:
    _, proc = serve_refused(tmp_path, "providers:\n  - {name: x, protocol: carrier-pigeon}\n")
    assert proc.returncode == 2 and "carrier-pigeon" in proc.stderr


def test_two_workers_share_revocation(tmp_path: Path) -> None:
    with GatewayProcess(tmp_path, workers=2) as gw:
        record = gw.create_key_record(name="multi")
        client = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=record["key"], max_retries=0)
        for _ in range(6):  # new connections spread over both workers
            client.with_options().chat.completions.create(
                model="sandbox-chat", messages=[{"role": "user", "content": "x"}]
            )
        gw.admin("DELETE", f"/admin/keys/{record['id']}")
        time.sleep(1.0)
        statuses = set()
        for _ in range(10):
            fresh = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=record["key"], max_retries=0)
            try:
                fresh.chat.completions.create(
                    model="sandbox-chat", messages=[{"role": "user", "content": "x"}]
                )
                statuses.add(200)
            except openai.AuthenticationError:
                statuses.add(401)
            fresh.close()
        assert statuses == {401}


def test_workers_are_forked_from_the_supervisor_with_the_app_loaded(tmp_path: Path) -> None:
    """The supervisor imports the app once and forks its workers (cli/supervisor.py), so the
    modules' pages are shared between them: a worker runs the supervisor's own command line,
    not multiprocessing's spawn entry point, and still serves. glibc's malloc arenas are capped
    at two (`MALLOC_ARENA_MAX`), and the interpreter runs with -OO (no docstrings in memory)."""
    with GatewayProcess(tmp_path, workers=2) as gw:
        assert gw.proc is not None
        supervisor = gw.proc.pid
        workers = [
            int(pid) for task in Path(f"/proc/{supervisor}/task").iterdir()
            for pid in (task / "children").read_text().split()
        ]  # fmt: skip
        command = Path(f"/proc/{supervisor}/cmdline").read_bytes()
        assert command.split(b"\0")[1:4] == [b"-OO", b"-m", b"unigate.cli.launch"]
        assert len(workers) == 2
        assert [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in workers] == [command, command]
        for pid in workers:  # two malloc arenas unless the operator said otherwise
            assert b"MALLOC_ARENA_MAX=2" in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        assert http("GET", gw.base_url + "/readyz").status == 200
        # The workers share their limits table under a named semaphore, removed when serve ends.
        semaphore = Path("/dev/shm") / ("sem." + semaphore_name(tmp_path / "data" / "limits.bin")[1:])
        assert semaphore.exists()
    assert not semaphore.exists()


def _descendants(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            found += [int(child), *_descendants(int(child))]
    return found


def _listeners(port: int) -> set[int]:
    """The inodes of the sockets listening on `port` (a connect could not tell: with nobody
    listening, a connect to a port of the ephemeral range now and then connects to itself)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in Path(table).read_text().splitlines()[1:]:
            fields = row.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                found.add(int(fields[9]))
    return found


@pytest.mark.parametrize("server", ["uvicorn", "granian"])
def test_workers_stop_when_their_supervisor_is_killed(tmp_path: Path, server: str) -> None:
    """`kill -9` of the supervisor (or the OOM killer) leaves it no chance to stop its workers:
    each worker is then sent a signal by the kernel (cli/parent_death.py, prctl's parent-death
    signal: SIGTERM for uvicorn's, SIGKILL for granian's) and stops, instead of serving the
    inherited socket unsupervised and holding the port against the next `unigate serve`."""
    with GatewayProcess(tmp_path, workers=2, env={"UNIGATE_SERVER": server}) as gw:
        assert gw.proc is not None
        workers = _descendants(gw.proc.pid)
        assert len(workers) == 2
        port = int(gw.base_url.rsplit(":", 1)[1])
        listening = _listeners(port)
        assert listening
        gw.kill()
        deadline = time.monotonic() + 15
        while any(Path(f"/proc/{pid}").exists() for pid in workers):
            alive = [pid for pid in workers if Path(f"/proc/{pid}").exists()]
            states = [Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] for pid in alive]
            if all(state == "Z" for state in states):
                break  # ended, waiting for init to reap them
            assert time.monotonic() < deadline, f"workers {alive} still run after their supervisor was killed"
            time.sleep(0.1)
        # The gateway's sockets close with their last process, or a moment after (granian's
        # were seen to outlive its workers by ~20 ms, held by nobody's descriptor).
        while listening & _listeners(port):
            assert time.monotonic() < deadline, "the killed gateway's socket still listens"
            time.sleep(0.05)


def test_a_process_a_worker_forks_does_not_end_with_the_supervisor() -> None:
    """The parent-death request is for the supervisor's own workers: a process forked by a
    worker (or by anything else the supervisor forked) is not one, and is left alone."""
    code = """
import os, time
from unigate.cli.parent_death import end_workers_with_this_process
end_workers_with_this_process()
worker = os.fork()
if worker == 0:
    grandchild = os.fork()
    if grandchild == 0:
        time.sleep(0.5)
        os._exit(7)
    _, status = os.waitpid(grandchild, 0)
    os._exit(os.waitstatus_to_exitcode(status))
_, status = os.waitpid(worker, 0)
print(os.waitstatus_to_exitcode(status))
"""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=True
    )
    assert done.stdout.strip() == "7", done.stderr  # not -15: the grandchild was not sent SIGTERM


def test_without_docstrings_the_api_description_is_whole(tmp_path: Path) -> None:
    """Under -OO the request shapes' docstrings, their schemas' descriptions, are read from
    their source: the served /openapi.json is the one the declarations give with them. An
    operator's PYTHONOPTIMIZE decides instead of -OO."""
    from unigate.openapi.builder import declared_components

    with GatewayProcess(tmp_path, workers=2) as gw:
        served = http("GET", gw.base_url + "/openapi.json").json()["components"]["schemas"]
    declared = declared_components()
    assert declared["ChatCompletionRequest"]["description"].startswith("OpenAI's chat completion request")
    assert {name: served[name] for name in declared} == declared
    (tmp_path / "kept").mkdir()
    with GatewayProcess(tmp_path / "kept", env={"PYTHONOPTIMIZE": "0"}) as gw:
        assert gw.proc is not None
        command = Path(f"/proc/{gw.proc.pid}/cmdline").read_bytes().split(b"\0")
        assert command[1:3] == [b"-m", b"unigate.cli.launch"]


def test_two_workers_say_the_start_up_lines_once(tmp_path: Path) -> None:
    # One vendor that lists its models, one that cannot be reached (its warning is a start-up
    # line too): asked once by serve, and the workers serve what the first one listed.
    with FakeOpenAI(models=("fake-gpt-1", "fake-gpt-2")) as upstream:
        gw = GatewayProcess(tmp_path, workers=2)
        gw.env.update(  # after construction, which clears vendor keys from the environment
            OPENAI_API_KEY="sk-env",
            OPENAI_BASE_URL=upstream.base_url,
            ANTHROPIC_API_KEY="sk-ant-env",
            ANTHROPIC_BASE_URL=f"http://127.0.0.1:{free_port()}",
        )
        with gw:
            client = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=gw.create_key(), max_retries=0)
            for _ in range(8):  # new connections, spread over both workers
                reply = client.chat.completions.create(
                    model="fake-gpt-2", messages=[{"role": "user", "content": "hi"}]
                )
                assert reply.choices[0].message.content == upstream.reply_text
        log = gw.log()
    lines = {
        "provider sandbox (sandbox): ": 1,
        "provider openai (openai at ": 1,
        "provider anthropic (anthropic at ": 1,
        "provider anthropic: could not list its models": 1,
        "2 models: fake-gpt-1, fake-gpt-2": 1,
        "unigate listening on": 1,
    }
    assert {line: log.count(line) for line in lines} == lines, log


@pytest.mark.services
def test_gateway_on_postgres(tmp_path: Path, postgres_url: str) -> None:
    from tests.conftest import _fresh_postgres_database

    url = _fresh_postgres_database(postgres_url, "gateway_e2e")
    with GatewayProcess(tmp_path, env={"UNIGATE_DATABASE_URL": url}) as gw:
        assert http("GET", gw.base_url + "/readyz").json()["database"] == "ok"
        record = gw.create_key_record(name="pg")
        client = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=record["key"], max_retries=0)
        reply = client.chat.completions.create(
            model="sandbox-chat", messages=[{"role": "user", "content": "hi pg"}]
        )
        assert reply.choices[0].message.content
        time.sleep(1.3)  # one usage flush interval
        usage = gw.admin("GET", "/admin/usage").json()["data"]
        assert any(row["key_id"] == record["id"] and row["requests"] == 1 for row in usage)
        gw.admin("DELETE", f"/admin/keys/{record['id']}")
        try:
            client.chat.completions.create(model="sandbox-chat", messages=[{"role": "user", "content": "x"}])
            raise AssertionError("revoked key accepted")
        except openai.AuthenticationError:
            pass


def test_serve_on_granian(tmp_path: Path) -> None:
    """`--server granian` (or UNIGATE_SERVER=granian): the same app on granian's ASGI server,
    streaming and client-disconnect handling included."""
    with GatewayProcess(tmp_path, env={"UNIGATE_SERVER": "granian"}) as gw:
        client = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=gw.create_key(), max_retries=0)
        reply = client.chat.completions.create(
            model="sandbox-chat", messages=[{"role": "user", "content": "hi"}]
        )
        assert reply.choices[0].message.content
        chunks = list(
            client.chat.completions.create(
                model="sandbox-chat",
                messages=[{"role": "user", "content": "stream"}],
                stream=True,
                stream_options={"include_usage": True},
            )
        )
        assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0
        assert "granian" in Path(f"/proc/{gw.proc.pid}/cmdline").read_text()  # type: ignore[union-attr]


def test_unknown_server_is_refused(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "unigate", "serve", "--server", "gunicorn"],
        env={**os.environ, "UNIGATE_DATA_DIR": str(tmp_path / "d")},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2 and "uvicorn or granian" in proc.stderr
