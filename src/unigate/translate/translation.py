"""What a translation to the canonical (OpenAI chat) form had to leave out, recorded rather than
refused: the fields and blocks named in `x-unigate-dropped-fields` on the routes that used it.

Every client format that reaches other vendors through the canonical form (Responses,
Anthropic Messages, Gemini generateContent) records its omissions here, by one rule: a name in
`fields` is lost on every translated route, a name in `by_protocol` only on the protocols whose
translation cannot honour its canonical field (`HONOURED`). Hosted tools (run by the vendor:
file search, code execution, computer use...) with no equivalent are also kept apart, because
the `hosted_tools: reject` setting refuses them instead, on translated routes only: a route of
the client's own format runs them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

Json = dict[str, Any]
Headers = list[tuple[bytes, bytes]]

HEADER = b"x-unigate-dropped-fields"

# What each protocol's translation keeps of the canonical fields some protocols drop (sampling,
# `user`, reasoning, verbosity); a protocol not named here speaks OpenAI's chat format, which
# has them all.
HONOURED: dict[str, frozenset[str]] = {
    "anthropic": frozenset({"temperature", "top_p", "parallel_tool_calls", "user"}),
    "gemini": frozenset({"temperature", "top_p"}),
    "sandbox": frozenset({"parallel_tool_calls"}),
}


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


@dataclass(slots=True, kw_only=True)
class Dropped:
    fields: list[str] = field(default_factory=list)  # named on every translated route
    # Set fields honoured only by some protocols: the client's name for each, and the canonical
    # field whose support `HONOURED` records per protocol.
    by_protocol: dict[str, str] = field(default_factory=dict)
    hosted: list[HostedTool] = field(default_factory=list)

    def drop(self, name: str) -> None:
        if name not in self.fields:
            self.fields.append(name)

    def tool(self, name: str, param: str, named: str | None = None) -> None:
        """A hosted tool without an equivalent on a translated route (or an item it made,
        `named` so in the header)."""
        self.hosted.append(HostedTool(name, param))
        self.drop(named or f"tools.{name}")

    def dropped_for(self, protocol: str) -> list[str]:
        """What a translated route of `protocol` cannot honour, sorted."""
        honoured = HONOURED.get(protocol)
        extra = [] if honoured is None else [n for n, f in self.by_protocol.items() if f not in honoured]
        return sorted({*self.fields, *extra})

    def refusal(self) -> str:
        names = sorted({f"'{t.name}'" for t in self.hosted})
        tools = f"hosted tool {names[0]} has" if len(names) == 1 else f"hosted tools {', '.join(names)} have"
        return (
            f"The {tools} no equivalent on this model's route, which translates to another vendor's API, "
            "and this gateway is set to refuse such tools (hosted_tools: reject)."
        )


@dataclass(slots=True)
class Translation(Dropped):
    """A client request in the canonical form, with what the translation left out."""

    canonical: Json
