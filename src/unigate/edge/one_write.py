"""A whole response in one write: uvicorn writes a response's head and its body with two
`transport.write` calls, each a system call when the socket is writable (uvloop writes at
once), and on this project's benchmark machine those two writes were over half of a worker's
CPU for a proxied chat completion (py-spy). `HeadWithBody` sits between a request's cycle and
its connection's transport: a head that announces a Content-Length (a body the app sends whole
right after it, as every non-streamed reply does) is held and goes out with the first body
write, in one call. Anything else (a chunked stream's head, `100 Continue`, a HEAD request's
head, which has no body write) is written at once, as before."""

from __future__ import annotations

import asyncio
from typing import Any

_LENGTH = b"\r\ncontent-length: "  # uvicorn writes header names in lower case
_END = b"\r\n\r\n"


class HeadWithBody:
    """The transport of one request-response cycle, holding a sized response's head for its
    body. Only the cycle's first write can be held; everything else passes straight on."""

    __slots__ = ("_first", "_head", "_transport")

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        self._head: bytes | None = None
        self._first = True

    def write(self, data: bytes) -> None:
        head = self._head
        if head is not None:
            self._head = None
            self._transport.write(head + data)
            return
        if self._first:
            self._first = False
            if data.endswith(_END) and _LENGTH in data:
                self._head = data
                return
        self._transport.write(data)

    def flush(self) -> None:
        """Write a held head (its body never came: the app failed after starting)."""
        head, self._head = self._head, None
        if head is not None and not self._transport.is_closing():
            self._transport.write(head)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)
