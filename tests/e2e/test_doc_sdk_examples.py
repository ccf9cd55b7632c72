"""Every SDK example in the README and on the documentation site's pages, run as written against
the gateway (the sandbox): only the address (`http://127.0.0.1:8000`), the key (`ugk_...`) and the
admin key (`uga_...`) are replaced, as a reader replaces them. A page whose example stops working
fails here."""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.gateway import ADMIN_KEY
from tests.support.readme import PLACEHOLDER_ADMIN_KEY, PLACEHOLDER_KEY, PLACEHOLDER_URL, blocks, distinct
from tests.support.served import ServedGateway

EXAMPLES = [
    pytest.param(text, id="+".join(block.id for block in same))
    for text, same in distinct([block for block in blocks() if block.runner == "sdk"]).items()
]


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedGateway]:
    # The sandbox's video takes 4 s by default; the examples poll it to the end.
    config = {"sandbox": {"enabled": True, "task_seconds": 0.5}}
    with ServedGateway(tmp_path_factory.mktemp("doc-examples"), config=config) as served:
        yield served


def test_the_pages_have_sdk_examples() -> None:
    assert len(EXAMPLES) >= 9


@pytest.mark.parametrize("block", EXAMPLES)
def test_the_example_runs_as_written(block: str, gw: ServedGateway, tmp_path: Path) -> None:
    code = block.replace(PLACEHOLDER_URL, gw.base_url).replace(PLACEHOLDER_KEY, gw.create_key())
    code = code.replace(PLACEHOLDER_ADMIN_KEY, ADMIN_KEY)
    printed = io.StringIO()
    cwd = Path.cwd()
    os.chdir(tmp_path)  # the examples write their files (hello.mp3, lighthouse.mp4) where they run
    try:
        with contextlib.redirect_stdout(printed):
            exec(compile(code, "<example>", "exec"), {"__name__": "__example__"})
    finally:
        os.chdir(cwd)
    assert printed.getvalue().strip() or list(tmp_path.iterdir()), "the example printed and wrote nothing"
