"""Helpers shared by the adapters of vendors whose asynchronous jobs are created with one
call and then queried one job at a time (Kling, Vidu, PicWish).

Wire: HTTP/1.1 through the provider's `UpstreamHTTP` pool; JSON bodies (or multipart for
PicWish) in, a JSON object out. This module maps what is common to all of them - transport
failures, HTTP status classes, unreadable bodies - and each adapter reads its own envelope
(Kling's `code`, Vidu's `reason`, PicWish's body `status`) on top of an `Answer`.

Error classes are the status table's (`upstream_status.py`); an adapter hands it the status its
answer means (the HTTP status, or one its body states) with the vendor's message, scrubbed of
the provider's own secrets here (`answer_error`). Polling queries each job with
bounded concurrency; a job whose query fails is left out of the batch (the poller retries it,
and the task's deadline ends it), so one bad job never fails the others.
"""

from __future__ import annotations

import asyncio
import base64
import io
import logging
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

from unigate.edge.media_types import sniff_image
from unigate.edge.multipart import Form, UploadedFile
from unigate.errors import GatewayError, UpstreamRejected
from unigate.providers.base import InputFile, RouteFailed, TaskRef, Timeouts, UpstreamTask
from unigate.providers.form_body import FormBody
from unigate.providers.http import UpstreamHTTP, read_json
from unigate.providers.redact import blank_shapes
from unigate.providers.upstream_status import Said, upstream_error

log = logging.getLogger("unigate.providers")

POLL_CONCURRENCY = 8  # queries in flight per provider and batch: polite to the vendor, fast enough
MAX_MESSAGE = 500  # vendor messages relayed to clients are cut to this many characters
_REDACTED = "[redacted]"
ASPECTS = {"16:9": 16 / 9, "9:16": 9 / 16, "1:1": 1.0}  # the ratios every video vendor here takes


@dataclass(frozen=True, slots=True)
class Answer:
    """An upstream answer: its HTTP status and its body when that is a JSON object ({} if not)."""

    status: int
    body: dict[str, Any]
    is_json: bool
    retry_after: str | None = None
    path: str = ""  # the request's URL path, for error messages
    blank: bool = False  # no body at all (not JSON, but no page either)


async def exchange(
    http: UpstreamHTTP,
    method: str,
    path: str,
    timeouts: Timeouts,
    data: bytes | FormBody = b"",
    headers: Mapping[str, str] | None = None,
) -> Answer:
    """One request, body read whole. Transport failures are `RouteFailed` (http.py)."""
    resp = await http.request(method, path, data, timeouts, headers)
    raw, parsed = await read_json(resp)
    body = parsed if isinstance(parsed, dict) else {}
    return Answer(
        resp.status,
        body,
        isinstance(parsed, dict),
        resp.headers.get("Retry-After"),
        resp.path,
        not raw.strip(),
    )


def answer_error(
    vendor: str,
    answer: Answer,
    message: str,
    secrets: Sequence[str],
    code: str | None = None,
    *,
    status: int | None = None,
    detail: str = "",
    clients_404: bool = False,
) -> RouteFailed | UpstreamRejected:
    """The status table's error for a failed answer: for `status` when the vendor's body states
    one of its own (a service code's class, a body status), else for the HTTP status; the
    vendor's message scrubbed and bounded."""
    return upstream_error(
        answer.status if status is None else status,
        Said(scrub(message, secrets), code),
        vendor=vendor,
        retry_after=answer.retry_after,
        detail=detail,
        path=answer.path,
        not_json=not answer.is_json and not answer.blank,
        clients_404=clients_404,
    )


def scrub(text: str, secrets: Sequence[str]) -> str:
    """A vendor message fit to relay: the provider's secrets blanked out, length bounded."""
    for secret in secrets:
        if len(secret) >= 4 and secret in text:
            text = text.replace(secret, _REDACTED)
    text = blank_shapes(text).strip()  # a per-request JWT echoed back is a credential too
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 3] + "..."


async def poll_each(
    refs: Sequence[TaskRef],
    query: Callable[[TaskRef], Awaitable[UpstreamTask | None]],
    vendor: str,
    limit: int = POLL_CONCURRENCY,
) -> dict[str, UpstreamTask]:
    """Query every job, at most `limit` at once; `query` answers None to leave a job out.
    A query that raises is logged (without secrets: exception messages here are fixed or
    scrubbed texts) and left out too."""
    gate = asyncio.Semaphore(limit)

    async def one(ref: TaskRef) -> UpstreamTask | None:
        async with gate:
            try:
                return await query(ref)
            except (RouteFailed, GatewayError) as exc:
                log.warning("%s: querying task %s failed: %s", vendor, ref.upstream_id, exc.message)
            except Exception as exc:  # a malformed answer must not stall the other jobs
                log.warning("%s: querying task %s failed: %s", vendor, ref.upstream_id, type(exc).__name__)
            return None

    results = await asyncio.gather(*(one(ref) for ref in refs))
    return {ref.upstream_id: task for ref, task in zip(refs, results, strict=True) if task is not None}


def query_timeouts(timeouts: Timeouts) -> Timeouts:
    """A status query is one small JSON answer: it never needs the provider's whole-job total,
    and a stuck one must not hold the poll batch for minutes."""
    return Timeouts(timeouts.connect, timeouts.read, min(timeouts.total, timeouts.connect + timeouts.read))


def path_id(value: str) -> str:
    """An upstream id as one path segment (ids come from the vendor; never trust their shape)."""
    return quote(value, safe="")


# -- reading untrusted JSON --


def obj(value: Any, key: str) -> dict[str, Any]:
    """`value[key]` when both are JSON objects, else {}."""
    found = value.get(key) if isinstance(value, dict) else None
    return found if isinstance(found, dict) else {}


def objects(value: Any, key: str) -> list[dict[str, Any]]:
    """The objects in the array `value[key]` (anything else in it is skipped)."""
    found = value.get(key) if isinstance(value, dict) else None
    return [item for item in found if isinstance(item, dict)] if isinstance(found, list) else []


def text(value: Any, key: str) -> str:
    """`value[key]` as a string when it is a string or a number, else ""."""
    found = value.get(key) if isinstance(value, dict) else None
    if isinstance(found, bool) or found is None:
        return ""
    return str(found) if isinstance(found, str | int | float) else ""


def number(value: Any) -> float | None:
    """A JSON number, or a numeric string ("5", "5.2", "40%"), as a float; else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip().rstrip("%"))
        except ValueError:
            return None
    return None


def percent(value: Any) -> int | None:
    found = number(value)
    return None if found is None else max(0, min(100, int(found)))


def is_url(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(("http://", "https://"))


def content_type_of(url: str, default: str = "") -> str:
    """A file's content type from its URL's extension (vendors' CDN links carry one)."""
    import mimetypes  # a finished media task's, not every worker's at start

    guessed, _ = mimetypes.guess_type(urlsplit(url).path)
    return guessed or default


# -- request encodings --


def aspect_ratio(fields: Mapping[str, Any]) -> str | None:
    """A video job's ratio as one of `ASPECTS`: as given when it is one, else the nearest to
    the ratio given, or to width/height; None when the job says nothing about its shape."""
    given = fields.get("aspect_ratio")
    if isinstance(given, str) and given in ASPECTS:
        return given
    ratio = _ratio(given) if isinstance(given, str) else None
    width, height = fields.get("width"), fields.get("height")
    if ratio is None and isinstance(width, int) and isinstance(height, int) and width > 0 and height > 0:
        ratio = width / height
    if ratio is None:
        return None
    target = ratio
    return min(ASPECTS, key=lambda name: abs(math.log(ASPECTS[name] / target)))


def _ratio(value: str) -> float | None:
    a, sep, b = value.partition(":")
    width, height = number(a), number(b)
    if not sep or width is None or height is None or width <= 0 or height <= 0:
        return None
    return width / height


def raw_base64(ref: str) -> str:
    """An image reference in the raw form some vendors want: a data: URL loses its prefix;
    URLs and raw base64 stay as they are."""
    if ref.startswith("data:") and "," in ref:
        return ref.partition(",")[2]
    return ref


def data_url(ref: str) -> str:
    """An image reference as URL or data: URL (raw base64 gets a prefix for its sniffed type)."""
    if ref.startswith(("http://", "https://", "data:")):
        return ref
    try:
        head = base64.b64decode(ref[:88] + "=" * (-len(ref[:88]) % 4))
    except ValueError:
        head = b""
    kind = sniff_image(head) or "png"
    return f"data:image/{kind};base64,{ref}"


def file_data_url(upload: InputFile) -> str:
    content_type = upload.content_type
    if not content_type.startswith("image/"):
        content_type = f"image/{sniff_image(upload.data[:64]) or 'png'}"
    return f"data:{content_type};base64,{base64.b64encode(upload.data).decode('ascii')}"


def file_base64(upload: InputFile) -> str:
    return base64.b64encode(upload.data).decode("ascii")


def form_body(fields: Mapping[str, str], files: Mapping[str, InputFile]) -> FormBody:
    """A multipart/form-data body: the text fields, then the files (held in memory: inputs of
    these jobs are a few MB at most)."""
    parts: list[tuple[str, str | UploadedFile]] = list(fields.items())
    for name, upload in files.items():
        stream = io.BytesIO(upload.data)
        parts.append(
            (name, UploadedFile(name, upload.filename, upload.content_type, stream, len(upload.data)))
        )
    return FormBody(Form(parts=parts))
