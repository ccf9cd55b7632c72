"""The endpoint table: (method, path) to its `Endpoint`. Exact paths are one dict lookup;
paths with `{params}` are matched by regex after that. Compiled (every request is routed
here); the endpoints themselves stay Python (mypyc miscompiles their overloaded constructor).
"""

from __future__ import annotations

import re
from typing import Final

from unigate.edge.endpoints import Endpoint, Handler
from unigate.edge.error_styles import STYLES

_PARAM: Final = re.compile(r"\{([a-z_]+)\}")


class EndpointTable:
    def __init__(self, endpoints: list[Endpoint]) -> None:
        self._exact: dict[tuple[str, str], Endpoint] = {}
        self._patterns: list[tuple[re.Pattern[str], Endpoint]] = []
        self._paths: set[str] = set()
        self._routed: dict[tuple[str, str], Endpoint] = {}  # what is served, for the API description
        for ep in endpoints:
            if ep.style not in STYLES:
                raise ValueError(
                    f"{ep.method} {ep.path}: unknown error style {ep.style!r} (known: {', '.join(STYLES)})"
                )
            key = (ep.method, ep.path)
            if key in self._routed:
                # Two handlers for one path: only one could ever answer, so say so at start-up.
                first, second = _name(self._routed[key].handler), _name(ep.handler)
                raise ValueError(f"{ep.method} {ep.path} is registered twice: by {first} and by {second}")
            self._routed[key] = ep
            if "{" in ep.path:
                regex = (
                    "^"
                    + _PARAM.sub(
                        rf"(?P<\1>{ep.param})", re.escape(ep.path).replace(r"\{", "{").replace(r"\}", "}")
                    )
                    + "$"
                )
                self._patterns.append((re.compile(regex), ep))
            else:
                self._exact[key] = ep
                self._paths.add(ep.path)

    def endpoints(self) -> list[Endpoint]:
        """Every endpoint the table routes, once per (method, path), in registration order."""
        return list(self._routed.values())

    def match(self, method: str, path: str) -> tuple[Endpoint | None, dict[str, str], tuple[str, ...]]:
        """(endpoint, path params, the methods the path has when none is `method`: a 405's
        `Allow`, empty when the path is unknown)."""
        ep = self._exact.get((method, path))
        if ep is not None:
            return ep, {}, ()
        if "\x00" in path:
            # A NUL (%00) is in no id, name or model, and PostgreSQL cannot even compare text
            # with one: such a path names nothing (404) instead of reaching a lookup (500).
            return None, {}, ()
        for regex, candidate in self._patterns:
            if candidate.method == method:
                m = regex.match(path)
                if m:
                    return candidate, m.groupdict(), ()
        return None, {}, self._methods(path)

    def _methods(self, path: str) -> tuple[str, ...]:
        # Only on the miss path, so the scan over every endpoint costs nothing for a hit.
        found = {m for m, p in self._exact if p == path} if path in self._paths else set()
        found.update(ep.method for regex, ep in self._patterns if regex.match(path))
        return tuple(sorted(found))


def _name(handler: Handler) -> str:
    return f"{getattr(handler, '__module__', '?')}.{getattr(handler, '__qualname__', repr(handler))}"
