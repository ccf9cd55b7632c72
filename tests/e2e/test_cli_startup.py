"""Start-up failures and the CLI, through the real `unigate` process: one `error:` line and exit
code 2 for everything a user can get wrong, "listening" only once the port accepts connections,
and `unigate keys` on the same database as the server it manages."""

from __future__ import annotations

import datetime as dt
import os
import re
import socket
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

import pytest

from tests.support.gateway import GatewayProcess
from tests.support.net import free_port, http

pytestmark = pytest.mark.process

UNSET = (
    "UNIGATE_DATA_DIR",
    "UNIGATE_DATABASE_URL",
    "UNIGATE_CONFIG",
    "UNIGATE_LOG_LEVEL",
    "UNIGATE_ADMIN_KEY",
)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in UNSET}
    env.update(extra)
    return env


def _unigate(args: list[str], cwd: Path, timeout: float = 60, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "unigate", *args],
        env=_env(**env),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    """The failure contract: exit 2, stderr is exactly one `error:` line, no traceback, and
    nothing claims the server is listening."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert "Traceback" not in proc.stderr and "listening" not in proc.stdout
    return lines[0]


def test_uncreatable_data_dir(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    line = _one_error_line(_unigate(["serve"], tmp_path, UNIGATE_DATA_DIR=str(blocker / "data")))
    assert f"cannot create the data directory {blocker / 'data'}" in line and "UNIGATE_DATA_DIR" in line


def test_unwritable_data_dir(tmp_path: Path) -> None:
    # /proc exists and no user, root included, can create a file in it.
    line = _one_error_line(_unigate(["serve"], tmp_path, UNIGATE_DATA_DIR="/proc"))
    assert "cannot write to the data directory /proc" in line and "UNIGATE_DATA_DIR" in line


def test_unsupported_database_scheme(tmp_path: Path) -> None:
    line = _one_error_line(_unigate(["serve"], tmp_path, UNIGATE_DATABASE_URL="mysql://u:p@localhost/db"))
    assert "unsupported scheme mysql://" in line and "postgresql://" in line and "sqlite:///" in line


def test_unreachable_postgres_names_it_without_the_password(tmp_path: Path) -> None:
    url = f"postgresql://gate:s3cr3t-pw@127.0.0.1:{free_port()}/unigate"
    started = time.monotonic()
    line = _one_error_line(_unigate(["serve"], tmp_path, UNIGATE_DATABASE_URL=url))
    assert time.monotonic() - started < 30
    assert "cannot connect to the database postgresql://gate:***@127.0.0.1" in line
    assert "s3cr3t-pw" not in line and "check that the server runs" in line


def test_bad_log_level(tmp_path: Path) -> None:
    line = _one_error_line(_unigate(["serve"], tmp_path, UNIGATE_LOG_LEVEL="loud"))
    assert "UNIGATE_LOG_LEVEL='loud'" in line and "debug, info, warning, error" in line


@pytest.mark.parametrize("port", ["99999", "0", "-1"])
def test_port_out_of_range(tmp_path: Path, port: str) -> None:
    line = _one_error_line(_unigate(["serve", "--port", port], tmp_path))
    assert f"--port {port} is out of range" in line


def test_port_in_use(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        line = _one_error_line(_unigate(["serve", "--port", str(port)], tmp_path))
    assert f"cannot listen on 127.0.0.1:{port}" in line and "--port" in line


def test_debug_level_shows_the_traceback_then_the_line(tmp_path: Path) -> None:
    proc = _unigate(["serve"], tmp_path, UNIGATE_DATABASE_URL="mysql://x/y", UNIGATE_LOG_LEVEL="debug")
    assert proc.returncode == 2 and "Traceback" in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("error: ")


def test_listening_is_printed_once_the_port_accepts(tmp_path: Path) -> None:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "unigate", "serve", "--port", str(port)],
        env=_env(UNIGATE_DATA_DIR=str(tmp_path / "data")),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("unigate listening"):
                break
        assert lines and lines[-1].strip() == f"unigate listening on http://127.0.0.1:{port} (1 worker)"
        # Right after the line: the connection is accepted (it may wait for the app) and answered.
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
        assert http("GET", f"http://127.0.0.1:{port}/readyz", timeout=30).status == 200
    finally:
        proc.terminate()
        proc.wait(15)
        if proc.stdout is not None:
            proc.stdout.close()


def test_version(tmp_path: Path) -> None:
    proc = _unigate(["--version"], tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip() == f"unigate {metadata.version('unigate')}"


def test_keys_refuse_to_guess_a_database(tmp_path: Path) -> None:
    """Run where no server ever ran and with nothing set: an error naming where it looked,
    not a fresh database whose keys the real server does not know."""
    line = _one_error_line(_unigate(["keys", "create", "--name", "x"], tmp_path))
    assert f"{tmp_path / '.unigate'} does not exist" in line and "UNIGATE_DATA_DIR" in line
    assert not (tmp_path / ".unigate").exists()
    _one_error_line(_unigate(["keys", "list"], tmp_path))


def _created(proc: subprocess.CompletedProcess[str]) -> dict[str, str]:
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    fields = dict(line.split(": ", 1) for line in lines[:-1])
    fields["key"] = lines[-1]
    return fields


def test_keys_find_the_server_database(tmp_path: Path) -> None:
    """The server runs on its default ./.unigate; `keys create` run in the same directory, and
    from elsewhere with UNIGATE_DATA_DIR, both make keys that server accepts."""
    home = tmp_path / "home"
    home.mkdir()
    gw = GatewayProcess(home, env={"UNIGATE_DATA_DIR": ""})
    with gw:
        assert (home / ".unigate" / "unigate.db").exists()
        here = _created(_unigate(["keys", "create", "--name", "here"], home))
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        there = _created(
            _unigate(
                ["keys", "create", "--name", "there"], elsewhere, UNIGATE_DATA_DIR=str(home / ".unigate")
            )
        )
        assert not (elsewhere / ".unigate").exists()
        for fields in (here, there):
            assert fields["key"].startswith("ugk_") and fields["webhook_secret"].startswith("whsec_")
            res = http(
                "GET", gw.base_url + "/v1/models", headers={"Authorization": f"Bearer {fields['key']}"}
            )
            assert res.status == 200, res.body
            shown = gw.admin("GET", f"/admin/keys/{fields['id']}").json()
            assert shown["webhook_secret"] == fields["webhook_secret"]
        listed = _unigate(["keys", "list"], home)
        assert listed.returncode == 0 and here["id"] in listed.stdout and there["id"] in listed.stdout


def test_keys_create_expires_and_budget_match_the_admin_api(tmp_path: Path) -> None:
    with GatewayProcess(tmp_path) as gw:
        data_dir = str(tmp_path / "data")
        instants = {
            # A bare date is the start of that day, UTC; a datetime without offset is UTC.
            "2031-05-06": dt.datetime(2031, 5, 6, tzinfo=dt.UTC),
            "2031-05-06T18:30:00": dt.datetime(2031, 5, 6, 18, 30, tzinfo=dt.UTC),
            "2031-05-06T18:30:00+02:00": dt.datetime(2031, 5, 6, 16, 30, tzinfo=dt.UTC),
        }
        for expires, instant in instants.items():
            cli = _created(
                _unigate(
                    ["keys", "create", "--name", "cli", "--expires", expires, "--budget", "2.5"],
                    tmp_path,
                    UNIGATE_DATA_DIR=data_dir,
                )
            )
            api = gw.create_key_record(name="api", expires_at=expires, budget=2.5)
            shown = gw.admin("GET", f"/admin/keys/{cli['id']}").json()
            assert shown["expires_at"] == api["expires_at"] == instant.timestamp(), expires
            assert cli["expires"] == instant.isoformat()
            assert shown["budget"] == api["budget"] == 2.5
        bad = _unigate(
            ["keys", "create", "--name", "x", "--budget", "-1"], tmp_path, UNIGATE_DATA_DIR=data_dir
        )
        assert "--budget" in _one_error_line(bad)
        bad = _unigate(
            ["keys", "create", "--name", "x", "--expires", "soon"], tmp_path, UNIGATE_DATA_DIR=data_dir
        )
        assert "--expires 'soon'" in _one_error_line(bad)


STUB_PYTHON = """#!/usr/bin/env bash
# Stands in for python3 (and, once copied, for the venv's python and unigate) to run the setup
# scripts without a real install.
case "$*" in
    "--version") echo "Python 3.12.0" ;;
    "-c "*) exit 0 ;;
    "-m venv .venv")
        mkdir -p .venv/bin
        cp "$0" .venv/bin/python
        cp "$0" .venv/bin/unigate ;;
    "-m pip "*) echo "pip $*" >> pip.log ;;
    "serve "*) echo "unigate $*" ;;
esac
"""


def _start_clone(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """A copy of what `scripts/start.sh` reads, a stub Python in place of the real one (it
    logs what pip would install and prints what serve would run), and its environment."""
    repo = Path(__file__).resolve().parents[2]
    clone = tmp_path / "clone"
    (clone / "scripts").mkdir(parents=True)
    for name in ("start.sh", "setup-venv.sh"):
        (clone / "scripts" / name).write_text((repo / "scripts" / name).read_text())
    (clone / "pyproject.toml").write_text((repo / "pyproject.toml").read_text())
    (clone / "requirements").mkdir()
    for lock in (repo / "requirements").glob("*.txt"):
        (clone / "requirements" / lock.name).write_text(lock.read_text())
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stub = bin_dir / "python-stub"
    stub.write_text(STUB_PYTHON)
    stub.chmod(0o755)
    env = {**os.environ, "PYTHON": str(stub), "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    env.pop("UNIGATE_INSTALL_OCR", None)
    return clone, bin_dir, env


def test_start_script_shows_progress_and_the_second_terminal_hint(tmp_path: Path) -> None:
    clone, bin_dir, env = _start_clone(tmp_path)
    (bin_dir / "tesseract").write_text("#!/bin/sh\n")  # present: no OCR install attempted
    (bin_dir / "tesseract").chmod(0o755)

    def start() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "scripts/start.sh", "--port", "8123"],
            cwd=clone,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )

    first = start()
    assert "creating ./.venv with Python 3.12.0 (first run only)" in first.stderr
    assert "installing unigate[sandbox] and its dependencies into ./.venv" in first.stderr
    assert re.search(r"installed in \d+ s", first.stderr)
    assert "open a second terminal in" in first.stderr
    assert first.stdout.strip() == "unigate serve --port 8123"  # stdout stays the server's
    pip = (clone / "pip.log").read_text()
    assert "install -q --require-hashes -r requirements/sandbox.txt" in pip, pip
    assert "install -q --no-deps -e ." in pip
    again = start()
    assert "installing" not in again.stderr and "creating" not in again.stderr
    assert "open a second terminal" in again.stderr


def test_start_script_installs_system_packages_only_with_consent(tmp_path: Path) -> None:
    """As root without Tesseract, start.sh used to run apt-get unasked. Now it asks at a
    terminal, installs with UNIGATE_INSTALL_OCR=1, and otherwise says how to do either."""
    clone, bin_dir, env = _start_clone(tmp_path)
    # A PATH with everything the scripts use but Tesseract; `id -u` says root; apt-get logs.
    tools = tmp_path / "tools"
    tools.mkdir()
    for directory in ("/usr/local/bin", "/usr/bin", "/bin"):
        for tool in Path(directory).iterdir():
            if tool.name != "tesseract" and not (tools / tool.name).exists():
                (tools / tool.name).symlink_to(tool)
    for name, script in (("id", "echo 0"), ("apt-get", f'echo "apt-get $*" >> {tmp_path}/apt.log')):
        (bin_dir / name).write_text(f"#!/bin/sh\n{script}\n")
        (bin_dir / name).chmod(0o755)
    env["PATH"] = f"{bin_dir}:{tools}"

    def start(**extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "scripts/start.sh"], cwd=clone, env={**env, **extra}, stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=60, check=True,
        )  # fmt: skip

    unasked = start()  # no terminal to ask at: nothing installed, and it says how
    assert not (tmp_path / "apt.log").exists()
    assert "UNIGATE_INSTALL_OCR=1" in unasked.stderr and "apt-get install tesseract-ocr" in unasked.stderr
    start(UNIGATE_INSTALL_OCR="0")
    assert not (tmp_path / "apt.log").exists()
    agreed = start(UNIGATE_INSTALL_OCR="1")
    assert "installing Tesseract" in agreed.stderr
    installed = (tmp_path / "apt.log").read_text()
    assert "install -y -qq --no-install-recommends tesseract-ocr tesseract-ocr-eng" in installed
