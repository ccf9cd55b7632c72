"""A multipart upload read as it arrives, its file part handed on chunk by chunk.

`edge/multipart.py` spools a form's files to temporary files before the router sees them; a
Files API upload is larger (hundreds of MB) and goes to the file store anyway, so here the
parser's file bytes are yielded to the store as each piece of the body is parsed: memory holds
one received chunk, whatever the file's size. Text fields may come before or after the file
(the SDKs send them first); the caller reads the ones sent after once the file has been read.
The limits are edge/multipart.py's (parts, part headers, field size, the body past the file
limit plus the form's overhead), and so are its refusals.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from unigate.edge.asgi import Request
from unigate.edge.multipart import (
    FORM_OVERHEAD,
    PartReader,
    declared_over,
    feed,
    file_name,
    form_parser,
    multipart_type,
    next_chunk,
)
from unigate.errors import InvalidRequest, PayloadTooLarge

FILE_FIELD = "file"
_BEFORE, _IN, _AFTER = 0, 1, 2  # where the file part is: not begun, being read, read


class StreamedUpload(PartReader):
    """One request's form with one file part named `file`. Read it with `begin` (up to the
    file), `chunks` (the file's bytes) and `finish` (the fields after it)."""

    def __init__(self, request: Request, max_file: int) -> None:
        super().__init__()
        self._request = request
        self._max_file = max_file
        self._limit = max_file + FORM_OVERHEAD
        self._parser = form_parser(multipart_type(request), self)
        self.fields: dict[str, str] = {}
        self.filename = ""
        self.ended = False  # the whole body has been received
        self._state = _BEFORE
        self._seen = 0
        self._out: list[bytes] = []

    def too_large(self) -> bool:
        """The body announced more than the upload may be (refuse before reading it)."""
        return declared_over(self._request, self._limit)

    async def begin(self) -> bool:
        """Read until the file part starts; False when the body ended without one."""
        while self._state == _BEFORE and not self.ended:
            await self._pump()
        return self._state != _BEFORE

    async def chunks(self) -> AsyncIterator[bytes]:
        """The file's bytes as they arrive (after `begin` returned True)."""
        while True:
            if self._out:
                data = self._out[0] if len(self._out) == 1 else b"".join(self._out)
                self._out.clear()
                yield data
            if self._state == _AFTER:
                return
            if self.ended:
                raise InvalidRequest("The multipart body ended early.", code="invalid_multipart")
            await self._pump()

    async def finish(self) -> None:
        """Read the rest of the body (the fields sent after the file)."""
        while not self.ended:
            await self._pump()

    async def drain(self) -> None:
        """After a refusal: read what the client is still sending (up to a cap), so it gets
        the answer rather than a reset connection."""
        if not self.ended:
            self.ended = True
            await self._request.drain_body(self._limit)

    async def _pump(self) -> None:
        chunk, more = await next_chunk(self._request)
        self.ended = not more
        self._seen += len(chunk)
        if self._seen > self._limit:
            raise PayloadTooLarge(
                f"The upload exceeds the limit of {self._max_file} bytes (files.max_bytes)."
            )
        feed(self._parser, chunk, not more)
        if not more and not self.complete:
            raise InvalidRequest("The multipart body ended early.", code="invalid_multipart")

    def _file_begins(self, disposition: dict[bytes, bytes]) -> bool:
        if self._name != FILE_FIELD:
            raise InvalidRequest(
                f"Unexpected file part '{self._name}': the upload is the part named '{FILE_FIELD}'.",
                param=self._name or None,
                code="invalid_multipart",
            )
        if self._state != _BEFORE:
            raise InvalidRequest(
                "Only one file part may be sent.", param=FILE_FIELD, code="invalid_multipart"
            )
        self.filename = file_name(disposition)
        self._state = _IN
        return True

    def _file_data(self, chunk: bytes) -> None:
        self._out.append(chunk)

    def _file_ended(self) -> None:
        self._state = _AFTER

    def _field_ended(self, value: str) -> None:
        self.fields.setdefault(self._name, value)
