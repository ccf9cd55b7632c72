"""Multipart/form-data request bodies for upstreams, rebuilt from a validated `Form`: the
parts in their order with the names the client used (never the client's raw body, boundary
or part headers), files streamed from their spool with the total length known up front."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping

from unigate.edge.multipart import Form, UploadedFile

_TEXT = b"Content-Type: text/plain; charset=utf-8\r\n\r\n"


class FormBody:
    """A `StreamedBody` (transport/interfaces.py): `length` bytes, produced again on every `chunks()` call."""

    def __init__(self, form: Form, replace: Mapping[str, str] | None = None) -> None:
        self.boundary = os.urandom(16).hex()
        self.content_type = f"multipart/form-data; boundary={self.boundary}"
        self._segments: list[bytes | UploadedFile] = []
        replace = replace or {}
        done: set[str] = set()
        for name, value in form.parts:
            if isinstance(value, str):
                key = name[:-2] if name.endswith("[]") else name
                if key in replace:
                    if key in done:
                        continue
                    value = replace[key]
                    done.add(key)
                self._text(name, value)
            else:
                self._file(name, value)
        for key, text in replace.items():
            if key not in done:
                self._text(key, text)
        self._segments.append(f"--{self.boundary}--\r\n".encode())
        self.length = sum(s.size if isinstance(s, UploadedFile) else len(s) for s in self._segments)

    def chunks(self) -> Iterator[bytes]:
        for segment in self._segments:
            if isinstance(segment, bytes):
                yield segment
            else:
                yield from segment.chunks()

    def _text(self, name: str, value: str) -> None:
        head = f"--{self.boundary}\r\nContent-Disposition: form-data; name={_quote(name)}\r\n".encode()
        self._segments.append(head + _TEXT + value.encode() + b"\r\n")

    def _file(self, name: str, upload: UploadedFile) -> None:
        filename = _quote(upload.filename or "upload")
        head = (
            f"--{self.boundary}\r\n"
            f"Content-Disposition: form-data; name={_quote(name)}; filename={filename}\r\n"
            f"Content-Type: {_header_safe(upload.content_type)}\r\n\r\n"
        )
        self._segments += [head.encode(), upload, b"\r\n"]


def _quote(value: str) -> str:
    """A quoted-string for Content-Disposition parameters, as browsers send them (WHATWG):
    quotes and line breaks percent-encoded, non-ASCII kept as UTF-8."""
    escaped = value.replace('"', "%22").replace("\r", "%0D").replace("\n", "%0A")
    return f'"{escaped}"'


def _header_safe(value: str) -> str:
    return value.replace("\r", " ").replace("\n", " ") or "application/octet-stream"
