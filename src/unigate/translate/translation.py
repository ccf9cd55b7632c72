"""A client request in the canonical (OpenAI chat) form, with what the translation could not
carry: the fields and blocks named in `x-unigate-dropped-fields` on the routes that used it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from unigate.translate.responses_request import HONOURED

Json = dict[str, Any]


@dataclass(slots=True)
class Translation:
    canonical: Json
    dropped: list[str] = field(default_factory=list)  # named on every translated route
    # Set fields honoured only by some protocols: the client's name for each, and the canonical
    # field whose support `HONOURED` records per protocol.
    by_protocol: dict[str, str] = field(default_factory=dict)

    def drop(self, name: str) -> None:
        if name not in self.dropped:
            self.dropped.append(name)

    def dropped_for(self, protocol: str) -> list[str]:
        """What a translated route of `protocol` cannot honour, sorted."""
        honoured = HONOURED.get(protocol)
        extra = [] if honoured is None else [n for n, f in self.by_protocol.items() if f not in honoured]
        return sorted({*self.dropped, *extra})
