"""The query of `GET /v1/responses/{id}`: `stream` (true or false) and `starting_after` (the
sequence number of the last event the client has; -1, the default, replays every event).

Both are read strictly, given-but-empty included: a value the endpoint cannot mean is a 400
naming the parameter rather than a silent default, and `starting_after` is ASCII digits
(`str.isdigit()` also takes "²" and "①", which `int()` refuses).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from unigate.edge.asgi import Request, urlencoded
from unigate.errors import InvalidRequest

_SEQUENCE = re.compile(r"-?[0-9]{1,9}")


@dataclass(frozen=True, slots=True)
class RetrieveQuery:
    stream: bool
    starting_after: int


def retrieve_query(request: Request) -> RetrieveQuery:
    given = dict(urlencoded(request.scope.get("query_string", b""), "query string"))
    stream = given.get("stream", "false").lower()
    if stream not in ("true", "false"):
        raise InvalidRequest("'stream' must be true or false.", param="stream", code="invalid_value")
    after = given.get("starting_after", "-1")
    if not _SEQUENCE.fullmatch(after) or int(after) < -1:
        raise InvalidRequest(
            "'starting_after' must be an event's sequence number (an integer from -1, of at most 9 digits).",
            param="starting_after",
            code="invalid_value",
        )
    return RetrieveQuery(stream == "true", int(after))
