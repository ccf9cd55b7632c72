"""The documentation site (mkdocs.yml, docs/) builds with --strict: a broken link, an unknown
anchor or a page left out of the navigation fails the suite. The site goes to a temporary
directory; nothing is written into the repository. Every fenced block of the pages and the README
is run by a test or marked in its page with why not (tests/support/readme.py); the config
examples are loaded here."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.readme import DOCS, README, ROOT, Block, blocks, documents, section
from unigate.config_source import load_config

MKDOCS = Path(sys.executable).with_name("mkdocs")


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [str(MKDOCS), "build", "--strict", "--quiet", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "configuration" / "index.html").is_file()


def test_every_page_is_in_the_navigation() -> None:
    nav = (ROOT / "mkdocs.yml").read_text()
    for page in DOCS.glob("*.md"):
        assert re.search(rf": {re.escape(page.name)}$", nav, re.M), f"{page.name} is not in mkdocs.yml's nav"


def test_the_readme_links_only_to_pages_that_exist() -> None:
    for target in re.findall(r"\]\((docs/[^)#]+)", README.read_text()):
        assert (ROOT / target).exists(), target


def test_a_section_is_found_in_the_one_document_that_has_it() -> None:
    # Shell comments in a code block are not headings: the section runs past them.
    text = section("API description")
    assert "# Swagger UI" in text and "The document is built" in text
    assert len(documents()) > 10


def test_every_code_block_is_run_or_marked() -> None:
    # A block no runner takes must say in its page why it is not run, or which test runs it.
    unrun = [block.id for block in blocks() if block.runner == "unrun"]
    assert unrun == [], "run these, or mark them <!-- not run: why --> / <!-- run by tests/...::name -->"
    assert len(blocks()) > 50


def test_a_block_without_a_runner_or_a_mark_is_found(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "Text.\n\n```\nan output\n```\n\n<!-- not run: an output sample -->\n\n```\nshown\n```\n\n"
        "- item\n\n    ```sh\n    curl -s http://127.0.0.1:8000/healthz\n    ```\n\n"
        "```python\nprint('no gateway')\n```\n"
    )
    found = [(b.line, b.lang, b.runner, b.text) for b in blocks([page])]
    assert found == [
        (3, "", "unrun", "an output\n"),
        (9, "", "not run: an output sample", "shown\n"),
        (15, "sh", "shell", "curl -s http://127.0.0.1:8000/healthz\n"),
        (19, "python", "unrun", "print('no gateway')\n"),
    ]


def test_each_run_by_mark_names_a_test_that_reads_the_pages() -> None:
    marks = [block.runner.removeprefix("run by ") for block in blocks() if block.runner.startswith("run by ")]
    assert marks
    for mark in marks:
        for target in mark.split(", "):
            path, _, name = target.partition("::")
            source = (ROOT / path).read_text()
            assert f"def {name}(" in source, target
            assert "from tests.support.readme import" in source, f"{path} does not read the pages"


CONFIG_BLOCKS = [pytest.param(block, id=block.id) for block in blocks() if block.runner == "config"]


@pytest.mark.parametrize("block", CONFIG_BLOCKS)
def test_the_config_example_loads(block: Block, tmp_path: Path) -> None:
    # Through the loader `--config` uses, each `${VAR}` it names set as a reader would.
    path = tmp_path / "gateway.yaml"
    path.write_text(block.text)
    env = {name: "set-by-the-test" for name in re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)", block.text)}
    config = load_config(path, env)
    assert config.providers or config.storage.backend != "local", "the example configures nothing"
