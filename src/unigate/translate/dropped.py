"""What a translation to the canonical form had to leave out, recorded rather than refused.

Every name goes to the client in the `x-unigate-dropped-fields` header of an answer a
translated route gave. Hosted tools (run by the vendor: file search, code execution, computer
use...) with no equivalent upstream are also kept apart, because the `hosted_tools: reject`
setting refuses them instead, on translated routes only: a route of the client's own format
runs them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

HEADER = b"x-unigate-dropped-fields"


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

    def tool(self, name: str, param: str, field: str | None = None) -> None:
        """A hosted tool without an equivalent on a translated route (or an item it made,
        named by `field`)."""
        self.hosted.append(HostedTool(name, param))
        self.add(field or f"tools.{name}")

    def header(self) -> tuple[bytes, bytes] | None:
        return (HEADER, ", ".join(sorted(self.fields)).encode()) if self.fields else None

    def refusal(self) -> str:
        names = ", ".join(sorted({f"'{t.name}'" for t in self.hosted}))
        return (
            f"The hosted tool {names} has no equivalent on this model's route, which translates to "
            "another vendor's API, and this gateway is set to refuse such tools (hosted_tools: reject)."
        )
