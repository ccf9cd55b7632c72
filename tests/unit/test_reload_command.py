"""`unigate reload` finds the server by the pid file its data directory holds, and refuses
(one `error:` line, exit 2) when there is none or when it names a process that is not a
unigate server; the real SIGHUP is run against a served gateway in tests/e2e/test_config_reload.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from unigate.cli.main import app


def _reload(data_dir: Path) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["reload"], env={"UNIGATE_DATA_DIR": str(data_dir)})
    return result.exit_code, result.output


def test_without_a_server_it_says_where_it_looked(tmp_path: Path) -> None:
    code, output = _reload(tmp_path)
    assert code == 2 and output.startswith("error: no running `unigate serve` uses the data directory")
    assert str(tmp_path / "unigate.pid") in output and "POST /admin/reload" in output


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_pid_that_is_not_a_unigate_server_gets_no_signal(tmp_path: Path) -> None:
    other = subprocess.Popen(["sleep", "30"])
    try:
        (tmp_path / "unigate.pid").write_text(f"{other.pid}\n")
        code, output = _reload(tmp_path)
        assert code == 2 and "is not a unigate server any more" in output, output
        assert other.poll() is None, "the other process was not signalled"
    finally:
        other.kill()
        other.wait()
    (tmp_path / "unigate.pid").write_text(f"{other.pid}\n")
    code, output = _reload(tmp_path)
    assert code == 2 and "is not running (a stale file)" in output, output
