"""The documented examples, read from the file that documents them (README.md or a page of the
documentation site under docs/), so a test runs them exactly as written."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def documents() -> list[Path]:
    """The README and every page of the site."""
    return [README, *sorted(DOCS.glob("*.md"))]


def page(name: str) -> str:
    """The text of the site's page `docs/<name>.md`."""
    return (DOCS / f"{name}.md").read_text()


def _section_in(text: str, heading: str) -> str | None:
    level = 0
    kept: list[str] = []
    fenced = False
    for line in text.splitlines(keepends=True):
        if line.startswith("```"):
            fenced = not fenced
        # A `#` line inside a code block is a shell or YAML comment, not a heading.
        title = None if fenced else re.match(r"(#+) (.*)\n?$", line)
        if level and title and len(title.group(1)) <= level:
            break  # the next heading of the section's level or above: its subsections stay in it
        if level:
            kept.append(line)
        elif title and title.group(2) == heading:
            level = len(title.group(1))
    return "".join(kept) if level else None


def section(heading: str, page: str | None = None) -> str:
    """The text of the section titled `heading` (any level, up to the next heading of its level
    or above): in the site's page `docs/<page>.md` when named, else in whichever of the README
    and the site's pages has it (exactly one must)."""
    paths = [DOCS / f"{page}.md"] if page else documents()
    texts = {path.name: _section_in(path.read_text(), heading) for path in paths}
    found = {name: text for name, text in texts.items() if text is not None}
    assert len(found) == 1, f"the section {heading!r} is in {sorted(found) or 'no document'}, not one"
    return next(iter(found.values()))


def lines_starting(start: str) -> list[str]:
    """The lines of the README and the site's pages that start with `start`."""
    return [line for path in documents() for line in path.read_text().splitlines() if line.startswith(start)]


def code_blocks(text: str, lang: str) -> list[str]:
    """The fenced code blocks of `text` in language `lang`, in order."""
    return re.findall(rf"```{lang}\n(.*?)```", text, re.S)


def shell_commands(block: str) -> list[str]:
    """The commands of a shell block: continued lines (`\\` at the end) joined, comment lines
    (what a command prints, shown as `#  -> ...`) and blank lines left out."""
    commands: list[str] = []
    current = ""
    for line in block.splitlines():
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        current += line + "\n"
        if not line.endswith("\\"):
            commands.append(current.rstrip("\n"))
            current = ""
    return commands
