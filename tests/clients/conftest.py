"""Fixtures of the real-client tests: one gateway with every fake upstream for the session, and
a fresh working directory per agent run with a file whose secret only a tool can read."""

from __future__ import annotations

import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.clients.rig import Rig, Workdir, running_rig


@pytest.fixture(scope="session")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    with running_rig(tmp_path_factory.mktemp("clients-gateway")) as running:
        yield running


@pytest.fixture
def workdir(tmp_path: Path) -> Workdir:
    """A project folder (a git repository, as agents expect) holding notes.txt."""
    path = tmp_path / "project"
    path.mkdir()
    secret = f"PERIWINKLE-{secrets.token_hex(4).upper()}"
    notes = path / "notes.txt"
    notes.write_text(f"The secret word is {secret}.\n")
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return Workdir(path, notes, secret, tmp_path / "home")
