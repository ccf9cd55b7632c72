"""The lock files install on every Python 3.11+ this machine has, not only on the one that
resolved them: pip-compile resolves for the interpreter it runs on, and a lock made on 3.11.7 left
out redis's async-timeout (required below 3.11.3), so the quick start failed on a stock Debian 12
(python3 3.11.2) with pip's hash-mode refusal. Each interpreter gets a fresh virtualenv with pip
upgraded, as scripts/setup-venv.sh makes one, and resolves each lock there (`--dry-run`: the
wheels come from pip's cache or the index, nothing is installed)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.process

REPO = Path(__file__).resolve().parents[2]
# What setup-venv.sh installs (runtime, sandbox, test, compile), a production deployment
# (production: docs/scaling.md) and setup-clients.sh (clients).
LOCKS = ("runtime", "production", "sandbox", "test", "compile", "clients")
NAMES = ("python3", "python3.11", "python3.12", "python3.13", "python3.14")


def _interpreters() -> list[str]:
    """This test's own interpreter, and every other Python 3.11+ on PATH or in /usr/bin and
    /usr/local/bin with a `venv` module, one per version."""
    found: dict[str, str] = {}
    candidates = [sys.executable]
    for name in NAMES:
        candidates += [shutil.which(name) or "", f"/usr/bin/{name}", f"/usr/local/bin/{name}"]
    for path in candidates:
        if not path or not os.access(path, os.X_OK):
            continue
        probe = subprocess.run(
            [path, "-c", "import sys, venv, ensurepip; print('%d.%d.%d' % sys.version_info[:3])"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        version = probe.stdout.strip()
        if probe.returncode == 0 and tuple(map(int, version.split("."))) >= (3, 11):
            found.setdefault(version, path)
    return [found[v] for v in sorted(found)]


@pytest.mark.parametrize("python", _interpreters())
def test_every_lock_installs(python: str, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([python, "-m", "venv", str(venv)], check=True, timeout=300)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check"]
    subprocess.run([*pip, "install", "-q", "--upgrade", "pip"], check=True, timeout=300)
    refused = {}
    for lock in LOCKS:
        path = REPO / "requirements" / f"{lock}.txt"
        run = subprocess.run(
            [*pip, "install", "-q", "--dry-run", "--require-hashes", "-r", str(path)],
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        if run.returncode != 0:
            refused[lock] = [line for line in run.stderr.splitlines() if "WARNING: Location" not in line][-6:]
    assert not refused, f"{python}: {refused}"
