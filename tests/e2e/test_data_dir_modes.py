"""What `unigate serve` keeps on disk is owner-only: after a fresh start the data directory and
its media directory are 0700, the SQLite database and its -wal/-shm files, the admin key and
stored media 0600. An existing data directory open to others is served from, with a warning
that names the fix."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from tests.support.gateway import GatewayProcess
from tests.support.net import http

pytestmark = pytest.mark.process


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_fresh_start_is_owner_only(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert not data.exists()
    # No UNIGATE_ADMIN_KEY: the admin key file is created too.
    with GatewayProcess(tmp_path, env={"UNIGATE_ADMIN_KEY": ""}) as gw:
        admin_key = (data / "admin_key").read_text().strip()
        res = http(
            "POST", gw.base_url + "/admin/keys", {"name": "m"}, {"Authorization": f"Bearer {admin_key}"}
        )
        assert res.status == 201, res.body
        key = res.json()["key"]
        image = http(
            "POST",
            gw.base_url + "/v1/images/generations",
            {"model": "sandbox-image", "prompt": "a kite", "size": "256x256", "response_format": "url"},
            {"Authorization": f"Bearer {key}"},
        )
        assert image.status == 200, image.body
        assert _mode(data) == 0o700 and _mode(data / "media") == 0o700
        for name in ("unigate.db", "unigate.db-wal", "unigate.db-shm", "admin_key"):
            assert (data / name).exists(), name
            assert _mode(data / name) == 0o600, (name, oct(_mode(data / name)))
        stored = list((data / "media").iterdir())
        assert stored and all(_mode(f) & 0o077 == 0 for f in stored), [
            (f.name, oct(_mode(f))) for f in stored
        ]
        assert "chmod 700" not in gw.log()


def test_an_open_existing_data_dir_is_warned_about(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    data.chmod(0o755)
    with GatewayProcess(tmp_path) as gw:
        assert http("GET", gw.base_url + "/healthz").status == 200
        lines = [line for line in gw.log().splitlines() if "chmod 700" in line]
        assert lines and "WARNING" in lines[0] and str(data) in lines[0], gw.log()
    assert _mode(data) == 0o755, "the operator's own mode is left as it is"
    assert _mode(data / "unigate.db") == 0o600


def test_the_open_data_dir_warning_is_one_line_on_a_first_start_with_workers(tmp_path: Path) -> None:
    # No admin key yet: serve creates it there after its own checks, which warned already.
    data = tmp_path / "data"
    data.mkdir()
    data.chmod(0o755)
    with GatewayProcess(tmp_path, env={"UNIGATE_ADMIN_KEY": ""}, workers=2) as gw:
        assert http("GET", gw.base_url + "/healthz").status == 200
        lines = [line for line in gw.log().splitlines() if f"chmod 700 {data}" in line]
    assert len(lines) == 1, lines
