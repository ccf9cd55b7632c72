"""multipart/form-data parsing with hard limits, fed from the request as it arrives.

python-multipart's streaming parser (>= 0.0.18 handles padding-heavy and malformed bodies
in linear time) gets the body chunk by chunk; file parts go to spooled temporary files (in
memory up to 1 MiB, then on disk), so a 25 MB upload never sits in memory whole and can be
streamed on to the upstream. Limits: part count, header bytes per part, text field size, and
a per-file size whose excess is a 413 as soon as it is seen. Bracketed keys (`image[]`, `x[]`)
are folded onto `x`, as the OpenAI SDK sends arrays that way; the names as sent are kept for
re-forwarding.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING

from unigate.edge.asgi import ClientDisconnected, Request
from unigate.errors import InvalidRequest, PayloadTooLarge

if TYPE_CHECKING:
    from python_multipart.multipart import MultipartParser

MAX_PARTS = 100
MAX_FIELD_BYTES = 1024 * 1024
MAX_HEADER_BYTES = 16 * 1024  # all header lines of one part
SPOOL_BYTES = 1024 * 1024
FORM_OVERHEAD = 2 * 1024 * 1024  # text fields and part headers on top of the file limit


@dataclass(slots=True)
class UploadedFile:
    name: str  # the field name as sent (`image[]`)
    filename: str
    content_type: str
    file: IO[bytes]
    size: int = 0

    def read(self) -> bytes:
        """The whole file; only for small files or code that needs it all anyway."""
        self.file.seek(0)
        return self.file.read()

    def head(self, n: int = 64) -> bytes:
        self.file.seek(0)
        data = self.file.read(n)
        self.file.seek(0)
        return data

    def chunks(self, size: int = 64 * 1024) -> Iterator[bytes]:
        self.file.seek(0)
        while chunk := self.file.read(size):
            yield chunk

    @property
    def data(self) -> bytes:
        return self.read()


@dataclass(slots=True)
class Form:
    fields: dict[str, list[str]] = field(default_factory=dict)
    files: dict[str, list[UploadedFile]] = field(default_factory=dict)
    # Every part in arrival order with the name as sent: what an upstream form is rebuilt from.
    parts: list[tuple[str, str | UploadedFile]] = field(default_factory=list)

    def field(self, name: str) -> str | None:
        values = self.fields.get(name)
        return values[0] if values else None

    def file(self, name: str) -> UploadedFile | None:
        values = self.files.get(name)
        return values[0] if values else None

    def close(self) -> None:
        for uploads in self.files.values():
            for upload in uploads:
                upload.file.close()


def is_multipart(content_type: bytes | None) -> bool:
    return (
        content_type is not None and content_type.split(b";", 1)[0].strip().lower() == b"multipart/form-data"
    )


def multipart_type(request: Request) -> bytes:
    """The request's multipart Content-Type; 400 when the body is something else."""
    content_type = request.header(b"content-type")
    if content_type is None or not is_multipart(content_type):
        raise InvalidRequest(
            "This endpoint takes multipart/form-data (a file upload), not "
            f"{(content_type or b'no body type').decode('latin-1').split(';')[0]}.",
            code="invalid_content_type",
        )
    return content_type


def is_json(content_type: bytes | None) -> bool:
    """A JSON body (`application/json`, with or without parameters), which some form
    endpoints take as their other spelling."""
    return content_type is not None and content_type.split(b";", 1)[0].strip().lower() == b"application/json"


def boundary_of(content_type: bytes) -> bytes:
    """The form's boundary; 400 when it has none a parser should take."""
    _, options = _options(content_type)
    boundary = options.get(b"boundary")
    # RFC 2046: at most 70 characters; longer ones only serve to slow the parser down.
    if not boundary or len(boundary) > 70:
        raise InvalidRequest("The multipart body has no usable boundary.", code="invalid_multipart")
    return boundary


# python-multipart is imported by the functions below, which run once per form (or part), not
# at start: a worker that is never sent a form never loads it (~0.2 MB per worker).


def form_parser(content_type: bytes, reader: PartReader) -> MultipartParser:
    """python-multipart's streaming parser of this form, calling `reader`'s callbacks."""
    from python_multipart.multipart import MultipartParser

    return MultipartParser(boundary_of(content_type), reader.callbacks())  # type: ignore[arg-type]


def feed(parser: MultipartParser, chunk: bytes, last: bool) -> None:
    """The next piece of the body to the parser (`last`: the body ends with it); a malformed
    body is a 400."""
    from python_multipart.exceptions import MultipartParseError

    try:
        if chunk:
            parser.write(chunk)
        if last:
            parser.finalize()
    except MultipartParseError:
        raise InvalidRequest("The multipart body is malformed.", code="invalid_multipart") from None


def _options(header: bytes) -> tuple[bytes, dict[bytes, bytes]]:
    """A header's value and its `;` parameters (Content-Type, Content-Disposition)."""
    from python_multipart.multipart import parse_options_header

    return parse_options_header(header)


def parse_form(body: bytes, content_type: bytes, max_file: int | None = None) -> Form:
    """A form from a body already in memory."""
    builder = _Builder(max_file if max_file is not None else len(body))
    parser = form_parser(content_type, builder)
    try:
        feed(parser, body, True)
    except BaseException:
        builder.form.close()
        raise
    return builder.form


def declared_over(request: Request, limit: int) -> bool:
    """The body's announced length is past `limit` (refuse before reading it)."""
    declared = request.header(b"content-length")
    return declared is not None and declared.isdigit() and int(declared) > limit


async def next_chunk(request: Request) -> tuple[bytes, bool]:
    """The next piece of the body and whether more follows; a disconnect ends the request."""
    message = await request.receive()
    if message["type"] == "http.disconnect":
        raise ClientDisconnected
    return message.get("body", b""), message.get("more_body", False)


async def read_form(request: Request, max_file: int) -> Form:
    """The request's form, parsed while it arrives. 400 if the body is not multipart; 413
    when a file exceeds `max_file` bytes (the caller owns the returned form: `close()` it)."""
    content_type = multipart_type(request)
    limit = max_file + FORM_OVERHEAD
    if declared_over(request, limit):
        await request.drain_body(limit)
        raise PayloadTooLarge(f"The upload exceeds the limit of {max_file} bytes.")
    builder = _Builder(max_file)
    parser = form_parser(content_type, builder)
    seen = 0
    try:
        while True:
            chunk, more = await next_chunk(request)
            seen += len(chunk)
            if seen > limit:
                raise PayloadTooLarge(f"The upload exceeds the limit of {max_file} bytes.")
            feed(parser, chunk, not more)
            if not more:
                break
        if not builder.complete:
            raise InvalidRequest("The multipart body ended early.", code="invalid_multipart")
    except PayloadTooLarge:
        builder.form.close()
        if more:
            await request.drain_body(limit)
        raise
    except BaseException:
        builder.form.close()
        raise
    return builder.form


class PartReader:
    """The per-part rules of a form, declared once for every multipart reader: the part
    count, header bytes per part, names and file names as UTF-8, text field size and
    encoding. Subclasses say what a file part is and what becomes of its bytes and of each
    finished text field."""

    def __init__(self) -> None:
        self.complete = False  # the closing boundary has been parsed
        self._parts = 0
        self._header_name = b""
        self._header_value = b""
        self._header_bytes = 0
        self._headers: dict[bytes, bytes] = {}
        self._data: list[bytes] = []
        self._size = 0
        self._name = ""
        self._in_file = False

    def callbacks(self) -> dict[str, object]:
        return {
            "on_part_begin": self._begin,
            "on_header_field": lambda d, s, e: self._append_header(d[s:e], value=False),
            "on_header_value": lambda d, s, e: self._append_header(d[s:e], value=True),
            "on_header_end": self._header_end,
            "on_headers_finished": self._headers_done,
            "on_part_data": lambda d, s, e: self._append_data(d[s:e]),
            "on_part_end": self._end,
            "on_end": self._finished,
        }

    def _file_begins(self, disposition: dict[bytes, bytes]) -> bool:
        """A part with a file name has started (its name is in `_name`); True when its bytes
        go to `_file_data` rather than to a text field."""
        raise NotImplementedError

    def _file_data(self, chunk: bytes) -> None:
        raise NotImplementedError

    def _file_ended(self) -> None:
        raise NotImplementedError

    def _field_ended(self, value: str) -> None:
        """A text field (named `_name`) has been read whole."""
        raise NotImplementedError

    def _finished(self) -> None:
        self.complete = True

    def _begin(self) -> None:
        self._parts += 1
        if self._parts > MAX_PARTS:
            raise InvalidRequest(f"Too many multipart parts (at most {MAX_PARTS}).", code="invalid_multipart")
        self._headers, self._data, self._size, self._header_bytes = {}, [], 0, 0
        self._name, self._in_file = "", False

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
        _, disposition = _options(self._headers.get(b"content-disposition", b""))
        raw_name = disposition.get(b"name")
        self._name = part_text(raw_name, "name") if raw_name is not None else ""
        if b"filename" in disposition:
            self._in_file = self._file_begins(disposition)

    def _append_data(self, chunk: bytes) -> None:
        if self._in_file:
            self._file_data(chunk)
            return
        self._size += len(chunk)
        if self._size > MAX_FIELD_BYTES:
            raise InvalidRequest(f"The form field '{self._name}' is too large.", code="invalid_multipart")
        self._data.append(chunk)

    def _end(self) -> None:
        if self._in_file:
            self._in_file = False
            self._file_ended()
            return
        if not self._name:
            return  # a part without a name carries nothing addressable
        try:
            value = b"".join(self._data).decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidRequest(
                f"The form field '{self._name}' is not UTF-8 text.", code="invalid_multipart"
            ) from None
        self._field_ended(value)


class _Builder(PartReader):
    """Spools file parts to temporary files and collects the whole form."""

    def __init__(self, max_file: int) -> None:
        super().__init__()
        self.form = Form()
        self.max_file = max_file
        self._upload: UploadedFile | None = None

    def _file_begins(self, disposition: dict[bytes, bytes]) -> bool:
        if b"name" not in disposition:
            return False  # an unnamed file part is read (and dropped) like an unnamed field
        content_type = self._headers.get(b"content-type", b"application/octet-stream").decode("latin-1")
        spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)  # noqa: SIM115 - the form owns it
        self._upload = UploadedFile(self._name, file_name(disposition), content_type, spool)
        return True

    def _file_data(self, chunk: bytes) -> None:
        upload = self._upload
        assert upload is not None  # set by _file_begins
        self._size += len(chunk)
        if self._size > self.max_file:
            upload.file.close()
            raise PayloadTooLarge(f"The file '{upload.filename}' exceeds the limit of {self.max_file} bytes.")
        upload.file.write(chunk)

    def _file_ended(self) -> None:
        upload, self._upload = self._upload, None
        if upload is None or not self._name:
            return  # a part without a name carries nothing addressable
        upload.size = self._size
        upload.file.seek(0)
        self.form.files.setdefault(_key(self._name), []).append(upload)
        self.form.parts.append((self._name, upload))

    def _field_ended(self, value: str) -> None:
        self.form.fields.setdefault(_key(self._name), []).append(value)
        self.form.parts.append((self._name, value))


def _key(name: str) -> str:
    """`image[]` is filed under `image`: the OpenAI SDK sends arrays that way."""
    return name[:-2] if name.endswith("[]") else name


def file_name(disposition: dict[bytes, bytes]) -> str:
    """A file part's name without any directories the client put in it."""
    return part_text(disposition[b"filename"], "file name").replace("\\", "/").rsplit("/", 1)[-1]


def part_text(raw: bytes, what: str) -> str:
    """A part's name or file name; not UTF-8 is a 400 rather than U+FFFD in what is stored."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        message = f"A multipart part's {what} is not UTF-8 text."
        raise InvalidRequest(message, code="invalid_multipart") from None
