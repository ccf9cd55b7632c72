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

from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header

from unigate.edge.asgi import ClientDisconnected, Request
from unigate.edge.multipart import (
    FORM_OVERHEAD,
    MAX_FIELD_BYTES,
    MAX_HEADER_BYTES,
    MAX_PARTS,
    boundary_of,
    multipart_type,
    part_text,
)
from unigate.errors import InvalidRequest, PayloadTooLarge

FILE_FIELD = "file"
_BEFORE, _IN, _AFTER = 0, 1, 2  # where the file part is: not begun, being read, read


class StreamedUpload:
    """One request's form with one file part named `file`. Read it with `begin` (up to the
    file), `chunks` (the file's bytes) and `finish` (the fields after it)."""

    def __init__(self, request: Request, max_file: int) -> None:
        self._request = request
        self._max_file = max_file
        self._limit = max_file + FORM_OVERHEAD
        self._parser = MultipartParser(boundary_of(multipart_type(request)), self._callbacks())  # type: ignore[arg-type]
        self.fields: dict[str, str] = {}
        self.filename = ""
        self.ended = False  # the whole body has been received
        self._state = _BEFORE
        self._seen = 0
        self._out: list[bytes] = []
        self._complete = False
        self._parts = 0
        self._header_bytes = 0
        self._header_name = b""
        self._header_value = b""
        self._headers: dict[bytes, bytes] = {}
        self._name = ""
        self._is_file = False
        self._data: list[bytes] = []
        self._size = 0

    def too_large(self) -> bool:
        """The body announced more than the upload may be (refuse before reading it)."""
        declared = self._request.header(b"content-length")
        return declared is not None and declared.isdigit() and int(declared) > self._limit

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
        message = await self._request.receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnected
        chunk = message.get("body", b"")
        more = message.get("more_body", False)
        self.ended = not more
        self._seen += len(chunk)
        if self._seen > self._limit:
            raise PayloadTooLarge(
                f"The upload exceeds the limit of {self._max_file} bytes (files.max_bytes)."
            )
        try:
            if chunk:
                self._parser.write(chunk)
            if not more:
                self._parser.finalize()
        except MultipartParseError:
            raise InvalidRequest("The multipart body is malformed.", code="invalid_multipart") from None
        if not more and not self._complete:
            raise InvalidRequest("The multipart body ended early.", code="invalid_multipart")

    def _callbacks(self) -> dict[str, object]:
        return {
            "on_part_begin": self._begin_part,
            "on_header_field": lambda d, s, e: self._append_header(d[s:e], value=False),
            "on_header_value": lambda d, s, e: self._append_header(d[s:e], value=True),
            "on_header_end": self._header_end,
            "on_headers_finished": self._headers_done,
            "on_part_data": lambda d, s, e: self._append_data(d[s:e]),
            "on_part_end": self._end_part,
            "on_end": self._ended,
        }

    def _ended(self) -> None:
        self._complete = True

    def _begin_part(self) -> None:
        self._parts += 1
        if self._parts > MAX_PARTS:
            raise InvalidRequest(f"Too many multipart parts (at most {MAX_PARTS}).", code="invalid_multipart")
        self._headers, self._data, self._size, self._header_bytes = {}, [], 0, 0
        self._name, self._is_file = "", False

    def _append_header(self, chunk: bytes, value: bool) -> None:
        self._header_bytes += len(chunk)
        if self._header_bytes > MAX_HEADER_BYTES:
            raise InvalidRequest("A multipart part's headers are too large.", code="invalid_multipart")
        if value:
            self._header_value += chunk
        else:
            self._header_name += chunk

    def _header_end(self) -> None:
        self._headers[self._header_name.lower()] = self._header_value
        self._header_name, self._header_value = b"", b""

    def _headers_done(self) -> None:
        _, disposition = parse_options_header(self._headers.get(b"content-disposition", b""))
        raw_name = disposition.get(b"name")
        self._name = part_text(raw_name, "name") if raw_name is not None else ""
        if b"filename" not in disposition:
            return
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
        self.filename = part_text(disposition[b"filename"], "file name").replace("\\", "/").rsplit("/", 1)[-1]
        self._is_file = True
        self._state = _IN

    def _append_data(self, chunk: bytes) -> None:
        if self._is_file:
            self._out.append(chunk)
            return
        self._size += len(chunk)
        if self._size > MAX_FIELD_BYTES:
            raise InvalidRequest(f"The form field '{self._name}' is too large.", code="invalid_multipart")
        self._data.append(chunk)

    def _end_part(self) -> None:
        if self._is_file:
            self._state = _AFTER
            self._is_file = False
            return
        if not self._name:
            return  # a part without a name carries nothing addressable
        try:
            value = b"".join(self._data).decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidRequest(
                f"The form field '{self._name}' is not UTF-8 text.", code="invalid_multipart"
            ) from None
        self.fields.setdefault(self._name, value)
