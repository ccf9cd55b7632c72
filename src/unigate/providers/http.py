"""Upstream HTTP: one pooled aiohttp session per provider, and SSE event framing.

aiohttp is ~10x cheaper per request than httpx on this stack (DESIGN §2); keeping it behind
`UpstreamHTTP` keeps that choice reversible. Transport errors become `RouteFailed` here, once.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any

import aiohttp

from unigate.multipart import Form
from unigate.providers.base import RouteFailed, StreamBroken, Timeouts


class UpstreamHTTP:
    def __init__(self, base_url: str, headers: Mapping[str, str]) -> None:
        self.base_url = base_url.rstrip("/")
        # Explicit values instead of `skip_auto_headers`, which makes aiohttp build a header
        # dict per request. `identity`: bodies are relayed byte for byte, never re-encoded.
        self._headers = {"Accept-Encoding": "identity", "User-Agent": "unigate/1.0", **headers}
        self._session: aiohttp.ClientSession | None = None
        self._timeouts: dict[Timeouts, aiohttp.ClientTimeout] = {}

    async def start(self) -> None:
        connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=30, ttl_dns_cache=300)
        # auto_decompress off: bodies are relayed byte for byte, so never ask for encodings.
        self._session = aiohttp.ClientSession(
            connector=connector, headers=self._headers, auto_decompress=False
        )

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            raise RuntimeError("upstream session used before start()")
        return self._session

    async def post(
        self,
        path: str,
        data: bytes | aiohttp.MultipartWriter,
        timeouts: Timeouts,
        headers: Mapping[str, str] | None = None,
    ) -> aiohttp.ClientResponse:
        """Send a request and return the response with its headers read; body unread."""
        timeout = self._timeouts.get(timeouts)
        if timeout is None:
            timeout = self._timeouts[timeouts] = aiohttp.ClientTimeout(
                total=timeouts.total, sock_connect=timeouts.connect, sock_read=timeouts.read
            )
        try:
            return await self.session.post(
                self.base_url + path, data=data, headers=headers, timeout=timeout, allow_redirects=False
            )
        except TimeoutError:
            raise RouteFailed("The upstream did not answer in time.", status=504) from None
        except aiohttp.ClientError as exc:
            raise RouteFailed(f"Could not reach the upstream: {type(exc).__name__}.") from None


async def read_all(resp: aiohttp.ClientResponse, what: str = "response") -> bytes:
    """The whole upstream body; errors mapped while nothing has reached the client yet."""
    try:
        return await resp.read()
    except TimeoutError:
        raise RouteFailed(f"The upstream {what} timed out.", status=504) from None
    except (aiohttp.ClientError, asyncio.IncompleteReadError) as exc:
        raise RouteFailed(f"The upstream {what} failed: {type(exc).__name__}.") from None


async def sse_events(resp: aiohttp.ClientResponse) -> AsyncIterator[bytes]:
    """Yield runs of *complete* SSE events (each run ends with a blank line), exactly as the
    upstream framed them. Several events that arrive together stay together: one write."""
    buf = b""
    try:
        async for data in resp.content.iter_any():
            buf += data
            cut = _last_event_end(buf)
            if cut > 0:
                out, buf = buf[:cut], buf[cut:]
                yield out
    except TimeoutError:
        raise StreamBroken("The upstream stream stalled past the read timeout.") from None
    except (aiohttp.ClientError, asyncio.IncompleteReadError) as exc:
        raise StreamBroken(f"The upstream stream broke: {type(exc).__name__}.") from None
    if buf.strip():
        yield buf + b"\n\n"


def _last_event_end(buf: bytes) -> int:
    """Index just past the last blank line (LF or CRLF framing), or -1."""
    lf = buf.rfind(b"\n\n")
    crlf = buf.rfind(b"\r\n\r\n")
    return max(lf + 2 if lf >= 0 else -1, crlf + 4 if crlf >= 0 else -1)


def split_events(run: bytes) -> list[bytes]:
    """Split a run of complete events into single events (blank line kept on each)."""
    sep = b"\r\n\r\n" if b"\r\n\r\n" in run else b"\n\n"
    return [part + sep for part in run.split(sep) if part]


def event_data(event: bytes) -> bytes:
    """The joined `data:` payload of one SSE event."""
    lines = []
    for line in event.splitlines():
        if line.startswith(b"data:"):
            lines.append(line[6:] if line[5:6] == b" " else line[5:])
    return b"\n".join(lines)


def header_map(resp: aiohttp.ClientResponse) -> dict[str, Any]:
    return {k.lower(): v for k, v in resp.headers.items()}


def form_writer(form: Form, replace: Mapping[str, str] | None = None) -> aiohttp.MultipartWriter:
    """A fresh upstream form rebuilt from the validated parts, in their order and with the
    names the client used (never the client's raw body, boundary or part headers). Files are
    streamed from their spool; `replace` overrides text fields (the mapped model id)."""
    replace = replace or {}
    writer = aiohttp.MultipartWriter("form-data")
    done: set[str] = set()
    for name, value in form.parts:
        if isinstance(value, str):
            key = name[:-2] if name.endswith("[]") else name
            if key in replace:
                if key in done:
                    continue
                value = replace[key]
                done.add(key)
            part = writer.append(value, {"Content-Type": "text/plain; charset=utf-8"})
            part.set_content_disposition("form-data", name=name)
            continue
        value.file.seek(0)
        part = writer.append(value.file, {"Content-Type": value.content_type})
        part.set_content_disposition("form-data", name=name, filename=value.filename or "upload")
    for key, text in replace.items():
        if key not in done:
            part = writer.append(text, {"Content-Type": "text/plain; charset=utf-8"})
            part.set_content_disposition("form-data", name=key)
    return writer


def form_headers(writer: aiohttp.MultipartWriter) -> dict[str, str]:
    # Per-request Content-Type: the session default is JSON.
    return {"Content-Type": writer.content_type}


async def relay_bytes(resp: aiohttp.ClientResponse, chunk: int = 64 * 1024) -> AsyncIterator[bytes]:
    """An upstream body relayed as it arrives (audio, images): bounded memory whatever its
    length; a break after the first byte is `StreamBroken`."""
    try:
        async for data in resp.content.iter_chunked(chunk):
            yield data
    except TimeoutError:
        raise StreamBroken("The upstream stream stalled past the read timeout.") from None
    except (aiohttp.ClientError, asyncio.IncompleteReadError) as exc:
        raise StreamBroken(f"The upstream stream broke: {type(exc).__name__}.") from None
    finally:
        resp.release()
