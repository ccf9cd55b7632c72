"""What the native batch adapters (`openai/batches.py`, `anthropic/batches.py`) share: one JSON
exchange with its failure mapped by the status table, a JSONL body read line by line as it
arrives, and token counts read from an answer body's `usage` in either vendor's words.

Batch calls are control calls (create, retrieve, cancel) and downloads of result files: none
is relayed to a client as it arrives, so a transport failure is `RouteFailed` at any point (the
engine retries the whole call later), never `StreamBroken`.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from typing import IO, Any

import orjson

from unigate.batches.native import NativeState
from unigate.errors import UpstreamRejected
from unigate.providers.base import RouteFailed, Timeouts
from unigate.providers.http import UpstreamHTTP, raise_for_answer, read_json
from unigate.providers.redact import Redactor
from unigate.providers.task_http import query_timeouts, text
from unigate.providers.upstream_status import Reader
from unigate.transport.errors import UpstreamError, UpstreamTimeout
from unigate.transport.interfaces import StreamedBody
from unigate.transport.response import Response

log = logging.getLogger("unigate.providers")

# Result lines are one request's answer each: far below this, which bounds what one malformed
# line (no newline for megabytes) can make the gateway hold.
MAX_LINE = 64 * 1024 * 1024
SPOOL_IN_MEMORY = 1024 * 1024  # a request body larger than this is spooled to disk
_CHUNK = 64 * 1024
Clean = Callable[[dict[str, Any]], bool]  # whether a parsed line needs no scrubbing
# A whole batch going up or its results coming down may take longer than any single call the
# provider's `total_timeout` was chosen for; a stalled transfer still ends at `read_timeout`.
TRANSFER_SECONDS = 3600.0


def transfer_timeouts(timeouts: Timeouts) -> Timeouts:
    """The provider's timeouts for moving a whole batch file: at least `TRANSFER_SECONDS` in all."""
    return Timeouts(timeouts.connect, timeouts.read, max(timeouts.total, TRANSFER_SECONDS))


class Spooled:
    """A request body written once, piece by piece, to a spool (memory, then a temporary file
    past `SPOOL_IN_MEMORY`) and streamed from there: a batch of many thousand lines is never
    one bytes object. A `StreamedBody` (transport/interfaces.py); `close` frees the spool."""

    def __init__(self, pieces: Iterable[bytes]) -> None:
        self.file: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY)  # noqa: SIM115
        self.length = 0
        for piece in pieces:
            self.length += self.file.write(piece)

    def chunks(self) -> Iterator[bytes]:
        self.file.seek(0)
        while chunk := self.file.read(_CHUNK):
            yield chunk

    def close(self) -> None:
        self.file.close()


class BatchCalls:
    """What every native batch adapter holds and does alike: the provider's pool, its timeouts
    for whole files and for small JSON answers, its redactor, and a cancel that counts a refusal
    as done when the batch has ended meanwhile."""

    def __init__(self, http: UpstreamHTTP, timeouts: Timeouts, redactor: Redactor) -> None:
        self.http = http
        self.timeouts = transfer_timeouts(timeouts)  # whole files: the batch up, its results down
        self.queries = query_timeouts(timeouts)  # small JSON answers
        self.redactor = redactor

    async def poll(self, upstream_id: str) -> NativeState:
        raise NotImplementedError

    async def _request_cancel(self, upstream_id: str) -> None:
        raise NotImplementedError

    async def cancel(self, upstream_id: str) -> None:
        try:
            await self._request_cancel(upstream_id)
        except UpstreamRejected:
            # Refused because the batch ended meanwhile: it is over, as a cancel would have it.
            if (await self.poll(upstream_id)).status == "running":
                raise


def line_custom_id(line: dict[str, Any], what: str) -> str | None:
    """A result line's `custom_id`; None (logged) for a line without one: it matches no request."""
    custom_id = text(line, "custom_id")
    if not custom_id:
        log.warning("%s: a line without custom_id; skipped", what)
        return None
    return custom_id


async def json_call(
    http: UpstreamHTTP,
    method: str,
    path: str,
    timeouts: Timeouts,
    read: Reader,
    vendor: str,
    data: bytes | StreamedBody = b"",
    headers: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """One exchange; the answer's JSON object, or the status table's error (`read` is the
    vendor's reading of its error body, already scrubbed of the provider's secrets)."""
    resp = await http.request(method, path, data, timeouts, headers)
    if resp.status >= 400:
        await raise_for_answer(resp, read, vendor=vendor)
    _, parsed = await read_json(resp)
    if not isinstance(parsed, dict):
        raise RouteFailed(f"The {vendor} upstream's answer at {resp.path} is not a JSON object.")
    return parsed


async def jsonl_objects(
    resp: Response, what: str, redactor: Redactor | None = None, clean: Clean | None = None
) -> AsyncIterator[dict[str, Any]]:
    """The JSON objects of a JSONL body, one per line, parsed as the bytes arrive (the file is
    never held whole). A line that is not a JSON object is logged and skipped. `redactor`
    blanks the provider's secrets out of every line `clean` does not pass (error lines may
    quote what was sent; a model's answer is left as it is, credential-like text included)."""
    pending: list[bytes] = []  # the start of a line still arriving, in the pieces it came in
    size = 0
    number = 0
    try:
        async for data in resp.iter_any():
            start = 0
            while (end := data.find(b"\n", start)) >= 0:
                line = data[start:end]
                if pending:
                    line = b"".join([*pending, line])
                    pending.clear()
                    size = 0
                start = end + 1
                number += 1
                found = _object(line, what, number, redactor, clean)
                if found is not None:
                    yield found
            if start < len(data):
                pending.append(data[start:])
                size += len(data) - start
                if size > MAX_LINE:
                    raise RouteFailed(f"The upstream {what} has a line longer than {MAX_LINE} bytes.")
    except UpstreamTimeout:
        raise RouteFailed(f"The upstream {what} timed out.", status=504, cause="timeout") from None
    except UpstreamError as exc:
        raise RouteFailed(f"The upstream {what} broke off: {exc}.") from None
    finally:
        resp.release()
    found = _object(b"".join(pending), what, number + 1, redactor, clean)
    if found is not None:
        yield found


def _object(
    line: bytes, what: str, number: int, redactor: Redactor | None, clean: Clean | None
) -> dict[str, Any] | None:
    line = line.strip()
    if not line:
        return None
    parsed = _parsed(line)
    if redactor is not None and parsed is not None and not (clean is not None and clean(parsed)):
        scrubbed = redactor.data(line)
        if scrubbed != line:
            parsed = _parsed(scrubbed)
    if parsed is None:
        log.warning("%s: line %d is not a JSON object; skipped", what, number)
    return parsed


def _parsed(line: bytes) -> dict[str, Any] | None:
    try:
        parsed = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return parsed if isinstance(parsed, dict) else None


def token_usage(body: Any) -> dict[str, int]:
    """`prompt_tokens`/`completion_tokens` of an answer body's `usage`: OpenAI's chat and
    completions count prompt/completion tokens, its Responses API and Anthropic input/output;
    an embedding counts prompt tokens only. Absent or malformed counts are 0."""
    usage = body.get("usage") if isinstance(body, dict) else None
    if not isinstance(usage, dict):
        return {"prompt_tokens": 0, "completion_tokens": 0}
    return {
        "prompt_tokens": _first(usage, "prompt_tokens", "input_tokens"),
        "completion_tokens": _first(usage, "completion_tokens", "output_tokens"),
    }


def _first(usage: dict[str, Any], *names: str) -> int:
    return next((count(usage[name]) for name in names if name in usage), 0)


def count(value: Any) -> int:
    """A count from an upstream's JSON: a non-negative integer, anything else 0."""
    return value if type(value) is int and value >= 0 else 0
