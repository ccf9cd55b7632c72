"""What a translation to the canonical form had to leave out, recorded rather than refused.

Every name goes to the client in the `x-unigate-dropped-fields` header of an answer a
translated route gave. Hosted tools (run by the vendor: file search, code execution, computer
use...) with no equivalent upstream are also kept apart, because the `hosted_tools: reject`
setting refuses them instead, on translated routes only: a route of the client's own format
runs them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

HEADER = b"x-unigate-dropped-fields"


Headers = list[tuple[bytes, bytes]]


def with_dropped(headers: Headers, names: Iterable[str]) -> Headers:
    """`headers` with `names` in the one dropped-fields header (an adapter may have set it:
    what its upstream could not take)."""
    found = {n for value in (v for k, v in headers if k == HEADER) for n in value.decode().split(", ") if n}
    merged = found | set(names)
    if merged == found:
        return headers
    rest = [(k, v) for k, v in headers if k != HEADER]
    return [*rest, (HEADER, ", ".join(sorted(merged)).encode())]


@dataclass(frozen=True, slots=True)
class HostedTool:
    name: str  # the tool's type in the client's dialect (`file_search`, `code_execution_20250522`)
    param: str  # where the request names it (`tools[2]`)


@dataclass(slots=True)
class Dropped:
    fields: list[str] = field(default_factory=list)
    hosted: list[HostedTool] = field(default_factory=list)

    def add(self, name: str) -> None:
        if name not in self.fields:
            self.fields.append(name)

    def tool(self, name: str, param: str, named: str | None = None) -> None:
        """A hosted tool without an equivalent on a translated route (or an item it made,
        `named` so in the header)."""
        self.hosted.append(HostedTool(name, param))
        self.add(named or f"tools.{name}")

    def refusal(self) -> str:
        names = sorted({f"'{t.name}'" for t in self.hosted})
        tools = f"hosted tool {names[0]} has" if len(names) == 1 else f"hosted tools {', '.join(names)} have"
        return (
            f"The {tools} no equivalent on this model's route, which translates to another vendor's API, "
            "and this gateway is set to refuse such tools (hosted_tools: reject)."
        )
