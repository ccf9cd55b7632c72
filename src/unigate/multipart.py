"""multipart/form-data parsing with hard limits (part count, header size, field size), on
python-multipart's streaming parser, whose versions since 0.0.18 handle padding-heavy and
malformed bodies in linear time. Bracketed keys (`image[]`, `x[]`) are folded onto `x`, as
the OpenAI SDK sends arrays that way."""

from __future__ import annotations

from dataclasses import dataclass, field

from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header

from unigate.errors import InvalidRequest

MAX_PARTS = 100
MAX_FIELD_BYTES = 1024 * 1024


@dataclass(slots=True)
class UploadedFile:
    filename: str
    content_type: str
    data: bytes


@dataclass(slots=True)
class Form:
    fields: dict[str, list[str]] = field(default_factory=dict)
    files: dict[str, list[UploadedFile]] = field(default_factory=dict)

    def field(self, name: str) -> str | None:
        values = self.fields.get(name)
        return values[0] if values else None

    def file(self, name: str) -> UploadedFile | None:
        values = self.files.get(name)
        return values[0] if values else None


def is_multipart(content_type: bytes | None) -> bool:
    return (
        content_type is not None and content_type.split(b";", 1)[0].strip().lower() == b"multipart/form-data"
    )


def parse_form(body: bytes, content_type: bytes) -> Form:
    _, options = parse_options_header(content_type)
    boundary = options.get(b"boundary")
    if not boundary or len(boundary) > 200:
        raise InvalidRequest("The multipart body has no usable boundary.", code="invalid_multipart")
    builder = _Builder()
    try:
        parser = MultipartParser(boundary, builder.callbacks())  # type: ignore[arg-type]
        parser.write(body)
        parser.finalize()
    except MultipartParseError:
        raise InvalidRequest("The multipart body is malformed.", code="invalid_multipart") from None
    return builder.form


class _Builder:
    def __init__(self) -> None:
        self.form = Form()
        self._parts = 0
        self._header_name = b""
        self._header_value = b""
        self._headers: dict[bytes, bytes] = {}
        self._data: list[bytes] = []
        self._size = 0

    def callbacks(self) -> dict[str, object]:
        return {
            "on_part_begin": self._begin,
            "on_header_field": lambda d, s, e: self._append_header_name(d[s:e]),
            "on_header_value": lambda d, s, e: self._append_header_value(d[s:e]),
            "on_header_end": self._header_end,
            "on_part_data": lambda d, s, e: self._append_data(d[s:e]),
            "on_part_end": self._end,
        }

    def _begin(self) -> None:
        self._parts += 1
        if self._parts > MAX_PARTS:
            raise InvalidRequest(f"Too many multipart parts (at most {MAX_PARTS}).", code="invalid_multipart")
        self._headers, self._data, self._size = {}, [], 0

    def _append_header_name(self, chunk: bytes) -> None:
        self._header_name += chunk

    def _append_header_value(self, chunk: bytes) -> None:
        self._header_value += chunk

    def _header_end(self) -> None:
        self._headers[self._header_name.lower()] = self._header_value
        self._header_name, self._header_value = b"", b""

    def _append_data(self, chunk: bytes) -> None:
        self._size += len(chunk)
        self._data.append(chunk)

    def _end(self) -> None:
        _, disposition = parse_options_header(self._headers.get(b"content-disposition", b""))
        raw_name = disposition.get(b"name")
        if raw_name is None:
            return  # a part without a name carries nothing addressable
        name = raw_name.decode("utf-8", "replace")
        if name.endswith("[]"):
            name = name[:-2]
        data = b"".join(self._data)
        if b"filename" in disposition:
            content_type = self._headers.get(b"content-type", b"application/octet-stream").decode("latin-1")
            filename = (
                disposition[b"filename"].decode("utf-8", "replace").replace("\\", "/").rsplit("/", 1)[-1]
            )
            self.form.files.setdefault(name, []).append(UploadedFile(filename, content_type, data))
            return
        if self._size > MAX_FIELD_BYTES:
            raise InvalidRequest(f"The form field '{name}' is too large.", code="invalid_multipart")
        try:
            value = data.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidRequest(
                f"The form field '{name}' is not UTF-8 text.", code="invalid_multipart"
            ) from None
        self.form.fields.setdefault(name, []).append(value)
