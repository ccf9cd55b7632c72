"""Endpoint table: (method, path) to handler, with the family, error shape and auth kind
that the edge needs before the handler runs. Exact paths are one dict lookup; paths with
`{params}` are matched by regex after that."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from unigate.asgi import Request
from unigate.auth.principal import Principal
from unigate.errors import ErrorStyle

Handler = Callable[[Request, Principal | None], Awaitable[None]]
AuthKind = Literal["key", "admin", "none"]


@dataclass(frozen=True, slots=True)
class Endpoint:
    method: str
    path: str
    handler: Handler
    family: str = ""  # the permission family; "" for admin/health
    style: ErrorStyle = "openai"
    auth: AuthKind = "key"


_PARAM = re.compile(r"\{([a-z_]+)\}")


class EndpointTable:
    def __init__(self, endpoints: list[Endpoint]) -> None:
        self._exact: dict[tuple[str, str], Endpoint] = {}
        self._patterns: list[tuple[re.Pattern[str], Endpoint]] = []
        self._paths: set[str] = set()
        for ep in endpoints:
            if "{" in ep.path:
                regex = (
                    "^"
                    + _PARAM.sub(r"(?P<\1>[^/]+)", re.escape(ep.path).replace(r"\{", "{").replace(r"\}", "}"))
                    + "$"
                )
                self._patterns.append((re.compile(regex), ep))
            else:
                self._exact[(ep.method, ep.path)] = ep
                self._paths.add(ep.path)

    def match(self, method: str, path: str) -> tuple[Endpoint | None, dict[str, str], bool]:
        """(endpoint, path params, path exists with another method)."""
        ep = self._exact.get((method, path))
        if ep is not None:
            return ep, {}, False
        other_method = path in self._paths
        for regex, candidate in self._patterns:
            m = regex.match(path)
            if m:
                if candidate.method == method:
                    return candidate, m.groupdict(), False
                other_method = True
        return None, {}, other_method

    def style_for(self, path: str) -> ErrorStyle:
        """Error shape for a path no endpoint matched."""
        if path.startswith("/suno/"):
            return "music"
        if path.startswith("/fish/"):
            return "fish"
        if path.startswith("/stability/"):
            return "stability"
        if path.startswith("/kling/"):
            return "kling"
        if path.startswith("/ent/"):
            return "vidu"
        if path.startswith("/api/tasks/"):
            return "picwish"
        if path.startswith("/v1beta/"):
            return "gemini"
        return "openai"
