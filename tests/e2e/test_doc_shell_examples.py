"""Every shell example of the README and the site's pages that no mark takes out
(tests/support/readme.py), run as written against the gateway (the sandbox), one command after
the other as a reader types them: the address (`http://127.0.0.1:8000`), a key (`ugk_...`) and
`.venv/bin/` are replaced as a reader's own are; `$KEY` is a key from the step before, and a
task id the page writes as `<task_id>`, `<id>` or `$TASK_ID` is the one the command before
answered. curl runs with `--fail-with-body`, so an answer of 400 or above fails the example."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.gateway import ADMIN_KEY
from tests.support.readme import PLACEHOLDER_KEY, PLACEHOLDER_URL, Block, blocks, distinct, shell_commands
from tests.support.served import ServedGateway

pytestmark = pytest.mark.skipif(shutil.which("curl") is None, reason="needs the curl command")


def _runs_the_cli(block: Block) -> bool:
    return any(re.match(r"(\S*/)?unigate ", command) for command in shell_commands(block.text))


# A block that runs the `unigate` CLI (a process start of a second or more) is out of the default run.
EXAMPLES = [
    pytest.param(
        same[0],
        id="+".join(block.id for block in same),
        marks=[pytest.mark.process] if _runs_the_cli(same[0]) else [],
    )
    for same in distinct([block for block in blocks() if block.runner == "shell"]).values()
]
# A line that only sets variables (`KEY=ugk_...`, `ADMIN_KEY=$(cat ...)`): kept for the commands after it.
ASSIGNMENT = re.compile(r"^(export )?[A-Z_][A-Z0-9_]*=(\$\([^)]*\)|\S*)(\s+#.*)?$")
PRELUDE = 'set -euo pipefail\ncurl() { command curl --fail-with-body "$@"; }\n'
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedGateway]:
    config = {"sandbox": {"enabled": True, "task_seconds": 0.5}}
    with ServedGateway(tmp_path_factory.mktemp("doc-shell"), config=config) as served:
        yield served


def _task_ids(answer: Any) -> dict[str, str]:
    """The task id an answer carries, under each name the pages give it."""
    if not isinstance(answer, dict):
        return {}
    data = answer.get("data")
    name = answer.get("name")
    task = (
        answer.get("task_id")
        or (data.get("task_id") if isinstance(data, dict) else data if isinstance(data, str) else None)
        or answer.get("id")
    )
    found = {"<task_id>": task, "$TASK_ID": task} if isinstance(task, str) else {}
    if isinstance(name, str) and "/operations/" in name:
        found["<id>"] = name.rsplit("/", 1)[1]
    return found


def test_the_pages_have_shell_examples() -> None:
    assert len(EXAMPLES) >= 7


@pytest.mark.parametrize("block", EXAMPLES)
def test_the_shell_example_runs_as_written(block: Block, gw: ServedGateway, tmp_path: Path) -> None:
    # The reader's directory: the repository's, with the admin key where `serve` stores it.
    (tmp_path / ".unigate").mkdir()
    (tmp_path / ".unigate" / "admin_key").write_text(ADMIN_KEY + "\n")
    env = {**gw.env, "KEY": gw.create_key(), "PATH": f"{BIN}:{os.environ.get('PATH', '')}"}
    kept: list[str] = []
    ids: dict[str, str] = {}
    printed = ""
    for command in shell_commands(block.text):
        command = command.replace(PLACEHOLDER_URL, gw.base_url).replace(PLACEHOLDER_KEY, env["KEY"])
        command = command.replace(".venv/bin/", f"{BIN}/")
        for placeholder, value in ids.items():
            command = command.replace(placeholder, value)
        if ASSIGNMENT.match(command):
            kept.append(command)
            continue
        done = subprocess.run(
            ["bash", "-c", PRELUDE + "\n".join([*kept, command])],
            capture_output=True,
            text=True,
            env={**env, **({"TASK_ID": ids["$TASK_ID"]} if "$TASK_ID" in ids else {})},
            cwd=tmp_path,
            timeout=60,
        )
        assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
        printed += done.stdout.strip()
        with contextlib.suppress(ValueError):  # not a JSON answer: nothing to carry to the next command
            ids = _task_ids(json.loads(done.stdout)) or ids
    wrote = [p.name for p in tmp_path.iterdir() if p.name != ".unigate"]
    assert printed or wrote, "the example printed and wrote nothing"
