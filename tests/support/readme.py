"""The documented examples, read from the file that documents them (README.md or a page of the
documentation site under docs/), so a test runs them exactly as written."""

from __future__ import annotations

import re
from dataclasses import dataclass
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
    """The commands of a shell block: continued lines (`\\` at the end, or a quoted string
    still open) joined, comment lines (what a command prints, shown as `#  -> ...`) and blank
    lines left out."""
    commands: list[str] = []
    current = ""
    for line in block.splitlines():
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        current += line + "\n"
        if not line.endswith("\\") and not _quote_open(current):
            commands.append(current.rstrip("\n"))
            current = ""
    return commands


def _quote_open(text: str) -> bool:
    """Whether `text` ends inside a '...' or "..." string (a `#` comment's quotes do not count)."""
    quote, i, word_start = "", 0, True
    while i < len(text):
        ch = text[i]
        if not quote and ch == "#" and word_start:
            i = text.find("\n", i)
            if i < 0:
                break
        elif not quote and ch in "'\"":
            quote = ch
        elif ch == "\\" and quote != "'":
            i += 1
        elif ch == quote:
            quote = ""
        word_start = not quote and (ch.isspace() or ch in ";|&(")
        i += 1
    return bool(quote)


# Every fenced block of the README and the site is run by a test, or marked in its page, on the
# last non-blank line before its fence, with why it is not run or which test runs it:
#   <!-- not run: an output sample -->
#   <!-- run by tests/e2e/test_config_reload.py::test_the_readme_commands -->
# The mark is an HTML comment, so neither GitHub nor the site shows it.
PLACEHOLDER_URL = "http://127.0.0.1:8000"  # the gateway's address as the pages write it
PLACEHOLDER_KEY = "ugk_..."  # an API key
PLACEHOLDER_ADMIN_KEY = "uga_..."  # the admin key
_MARK = re.compile(r"\s*<!-- (not run: .+|run by .+) -->\s*$")
_FENCE = re.compile(r"^(\s*)```(\S*)[^\n]*$")


@dataclass(frozen=True)
class Block:
    """A fenced code block of a document: where it is, its language and text, and its mark."""

    path: Path
    line: int  # the opening fence's, from 1
    lang: str
    text: str
    mark: str | None

    @property
    def id(self) -> str:
        return f"{self.path.name}:{self.line}"

    @property
    def runner(self) -> str:
        """What runs it: `sdk` (tests/e2e/test_doc_sdk_examples.py), `shell`
        (tests/e2e/test_doc_shell_examples.py), `config` (tests/unit/test_docs_site.py), the
        mark's `run by ...` or `not run: ...`, or `unrun`: an unmarked block no runner takes."""
        if self.mark:
            return self.mark
        if self.lang == "python" and PLACEHOLDER_URL in self.text:
            return "sdk" if PLACEHOLDER_KEY in self.text or PLACEHOLDER_ADMIN_KEY in self.text else "unrun"
        return {"sh": "shell", "bash": "shell", "yaml": "config"}.get(self.lang, "unrun")


def blocks(paths: list[Path] | None = None) -> list[Block]:
    """Every fenced block of the documents (the README and the site's pages by default)."""
    found = []
    for path in paths or documents():
        lines = path.read_text().splitlines()
        i = 0
        while i < len(lines):
            fence = _FENCE.match(lines[i])
            if fence is None:
                i += 1
                continue
            indent, end = fence.group(1), i + 1
            while not lines[end].startswith(indent + "```"):
                end += 1
            before = next((line for line in reversed(lines[:i]) if line.strip()), "")
            mark = _MARK.match(before)
            text = "".join(line.removeprefix(indent) + "\n" for line in lines[i + 1 : end])
            found.append(Block(path, i + 1, fence.group(2), text, mark.group(1) if mark else None))
            i = end + 1
    return found


def distinct(found: list[Block]) -> dict[str, list[Block]]:
    """The blocks by text: a block written the same in two places (the README's quick start and
    the getting-started page's) is run once, under the id of each place."""
    by_text: dict[str, list[Block]] = {}
    for block in found:
        by_text.setdefault(block.text, []).append(block)
    return by_text
