"""The access log: one line per request on the `unigate.access` logger, at info.

    POST /v1/chat/completions 200 3.41ms model=gpt-4o route=main-openai/gpt-4o key=key_… request=…

Fields: method, path (never the query string: Gemini clients may send `?key=`), the status
actually sent (499 when the client left before any response), the latency until the handler
returned (for a stream: until it ended), the model the client asked for, the route that
answered (provider/upstream model), the key's id (never the key) and the request id. `-`
stands for a field a request does not have. A stream that did not end cleanly adds
`outcome=499` (client left) or `outcome=502` (upstream broke), the status usage records carry.
With UNIGATE_LOG_FORMAT=json the same record is one JSON object with the fields request_id,
key_id, method, path, model, route, status, latency_ms and outcome (null when absent).

The request edge (app.py) knows the method, path, status and key; the routed handlers know the
model and the route and leave them in the request's scope under the keys below (scope is the
one per-request mapping every handler can reach without changing its signature).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final
from urllib.parse import quote

from unigate.edge.asgi import Request
from unigate.observability.logs import InfoLines

ACCESS_LOGGER: Final = "unigate.access"

# Per-request scope keys the handlers fill (namespaced so no ASGI server's key collides).
MODEL: Final = "unigate.model"
ROUTE: Final = "unigate.route"
OUTCOME: Final = "unigate.outcome"
ERROR: Final = "unigate.error"  # the error a request was answered with, for the request log
# For the metrics' labels: the config's name of the model (bounded, unlike what clients
# send) and the provider that answered.
MODEL_NAME: Final = "unigate.model_name"
PROVIDER: Final = "unigate.provider"

# Characters left as they are when a path or model has to be escaped: those of RFC 3986 paths.
_SAFE: Final = "/:@!$&'()*+,;=-._~"


def _clean(text: str) -> str:
    """`text` safe for a one-line, space-separated record: the path is percent-decoded and the
    model comes from the client, so either could carry spaces or newlines (forged lines)."""
    if text.isprintable() and " " not in text:
        return text
    return quote(text, safe=_SAFE)


MAX_LOGGED: Final = 200  # characters of a path or model kept in a log line; a longer one is cut
_KEPT: Final = 8  # characters of an unguessable media name kept: enough to tell files apart


def shown_path(path: str) -> str:
    """A request path as log lines show it: `/media/` names are capabilities (anyone with the
    link may fetch the file), so only their first characters are kept; anything over
    MAX_LOGGED is cut; escaped as `_clean` does."""
    if len(path) <= MAX_LOGGED and not path.startswith("/media/"):
        return _clean(path)  # every API call: two cheap tests on top of the escaping
    if path.startswith("/media/"):
        rest = path[7:]
        prefix = "/media/tasks/" if rest.startswith("tasks/") else "/media/"
        name, sep, tail = path[len(prefix) :].partition("/")
        path = prefix + _cut_name(name) + sep + tail
    return _clean(_bounded(path))


def _cut_name(name: str) -> str:
    if len(name) <= _KEPT:
        return name
    stem, dot, ext = name.rpartition(".")
    if dot and 0 < len(ext) <= 5:
        return f"{stem[:_KEPT]}…{dot}{ext[:5]}"
    return f"{name[:_KEPT]}…"


def _bounded(text: str) -> str:
    return text if len(text) <= MAX_LOGGED else f"{text[:MAX_LOGGED]}…(+{len(text) - MAX_LOGGED})"


# One finished request, as the edge hands it to the access log and the request log (one tuple
# for both, of strings and numbers only: a held scope would keep its headers and server
# objects alive): (request id, method, path, status, perf_counter at start and at end, key id,
# and what the handlers left in the scope: model, route, outcome, error).
Finished = tuple[str, str, str, int, float, float, str | None, Any, Any, Any, Any]


def finished(request: Request, status: int, started: float, ended: float, key_id: str | None) -> Finished:
    """The record of `request`, which ended at `ended` (a `perf_counter` reading) with `status`
    (0: the client left before any response)."""
    get = request.scope.get
    return (
        request.request_id, request.method, request.path, status, started, ended, key_id, get(MODEL),
        get(ROUTE), get(OUTCOME), get(ERROR),
    )  # fmt: skip


def access_line(done: Finished) -> str:
    """The access line of a finished request."""
    request_id, method, path, status, started, ended, key_id, model, route, outcome, _ = done
    # Plain text (what `_clean` and `_bounded` would leave alone: most paths and models) is
    # tested here rather than in a call.
    if len(path) > MAX_LOGGED or not path.isprintable() or " " in path or path.startswith("/media/"):
        path = shown_path(path)
    if not model:
        model = "-"
    elif len(model) > MAX_LOGGED or not model.isprintable() or " " in model:
        model = _clean(_bounded(model))
    # The latency in ms to two decimals, from whole hundredths: a format spec (`:.2f`) in
    # compiled code goes through `str.format` and cost more than the rest of the line.
    hundredths = int((ended - started) * 100_000.0 + 0.5)
    cents = hundredths % 100
    line = (
        f"{method} {path} {status or 499} {hundredths // 100}.{'0' if cents < 10 else ''}{cents}ms "
        f"model={model} route={route or '-'} key={key_id or '-'} request={request_id}"
    )
    return line if outcome is None else f"{line} outcome={outcome}"


def access_fields(done: Finished) -> tuple[str, dict[str, Any]]:
    """The access record as (message, fields) for JSON lines."""
    request_id, method, path, status, started, ended, key_id, model, route, outcome, _ = done
    path = shown_path(path)
    status = status or 499
    fields = {
        "request_id": request_id,
        "key_id": key_id,
        "method": method,
        "path": path,
        "model": _bounded(model) if model else None,
        "route": route,
        "status": status,
        "latency_ms": round((ended - started) * 1000.0, 2),
        "outcome": outcome,
    }
    return f"{method} {path} {status}", fields


class AccessLog:
    """The access lines of finished requests, built and written in batches: those of
    `InfoLines.HOLD` seconds when they go to unigate's own stream, those of one event-loop turn
    otherwise (`InfoLines.schedule`). The checks of where lines go, the timestamp and the write
    (`InfoLines.write_all`) are paid once per batch rather than once per request, and the lines
    are formatted in one loop, not between two requests' other work."""

    __slots__ = ("_json", "_lines", "_pending", "enabled")

    def __init__(self, lines: InfoLines, json: bool) -> None:
        self._lines = lines
        self._json = json
        self._pending: list[Finished] = []
        # Whether lines are written, asked per request so a level changed at run time counts.
        self.enabled: Callable[[], bool] = lines.enabled_check()

    def add(self, done: Finished) -> None:
        if self._json:
            self._lines.record(*access_fields(done))
            return
        pending = self._pending
        pending.append(done)
        if len(pending) == 1:
            self._lines.schedule(self.flush)
        elif len(pending) >= InfoLines.MAX_PENDING:
            self.flush()

    def flush(self) -> None:
        """Write the pending lines (at the end of their loop turn, and at shutdown)."""
        pending = self._pending
        if pending:
            self._pending = []
            self._lines.write_all([access_line(done) for done in pending])
        elif self._json:
            self._lines.flush()  # JSON lines are held by InfoLines itself
