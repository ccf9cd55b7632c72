"""Request ids: the client's `x-request-id` when it sends a usable one, else a fresh id.

A client's id ties the gateway's access line, error bodies and spans to its own logs, so it
is kept as sent when it is 1-128 visible ASCII characters; anything else (empty, longer,
spaces, control or non-ASCII characters, which could forge or break a log line) is replaced,
not cleaned, so an id in the log is always one the client sent or one the gateway made.
"""

from __future__ import annotations

import os
import re
from typing import Final

from unigate.edge.asgi import Scope, header_of

MAX_LENGTH: Final = 128
_USABLE: Final = re.compile(rb"[\x21-\x7e]{1,%d}" % MAX_LENGTH)


class RequestIds:
    def __init__(self) -> None:
        # Unique, not secret: a per-process random prefix and a counter cost nothing per
        # request (os.urandom is a syscall).
        self._prefix = os.urandom(4).hex()
        self._count = 0

    def for_request(self, scope: Scope) -> str:
        sent = header_of(scope["headers"], b"x-request-id")
        if sent is not None and _USABLE.fullmatch(sent):
            return sent.decode("ascii")
        self._count += 1
        return self._prefix + hex(self._count)[2:]  # not `:x`: a format spec is slow compiled
