"""The documentation site (mkdocs.yml, docs/) builds with --strict: a broken link, an unknown
anchor or a page left out of the navigation fails the suite. The site goes to a temporary
directory; nothing is written into the repository."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.support.readme import DOCS, README, ROOT, documents, section

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
