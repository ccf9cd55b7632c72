"""The README's examples, read from it so a test runs them exactly as documented."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def section(heading: str) -> str:
    """The text of the README's `## heading` section."""
    return README.read_text().split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


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
