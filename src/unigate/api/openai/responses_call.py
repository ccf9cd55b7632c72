"""One `POST /v1/responses` call on its way through `TextAPI.serve`: which route takes it
(the upstream's own Responses API, or chat completions through the canonical form), and the
last step before the answer goes out, where the response is stored.

Storing comes first: a body is sent only after its row is committed, and a stream's terminal
event (`response.completed`, `.incomplete` or `.failed`) only after the row is, so a client
that saw the answer can continue the conversation at once, on any gateway process sharing
the database.
"""

from __future__ import annotations

import asyncio
import logging
import re
import sys
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from unigate.api.serving.hosted_tools import HostedTools
from unigate.api.serving.relay import Framing
from unigate.config import ResponsesConfig
from unigate.errors import InvalidRequest, NotFound
from unigate.providers.base import Reply, StreamBroken, Target, TextCall, Unsupported
from unigate.providers.openai.compatible import OpenAIProvider
from unigate.responses.store import PENDING, Head, ResponseStore, StoredResponse
from unigate.store.db import failure_reason, is_outage
from unigate.translate.responses_items import Untranslatable, for_upstream
from unigate.translate.responses_request import ResponsesRequest
from unigate.translate.responses_response import ResponseFrame, chat_to_response
from unigate.translate.responses_stream import QUEUED_EVENTS, ChatToResponsesStream
from unigate.translate.sse import comment, event_data, json_event, json_object, split_events
from unigate.translate.translation import with_dropped

log = logging.getLogger("unigate.responses")

Json = dict[str, Any]
# The client format of an upstream that serves the Responses API itself (`responses: native`).
NATIVE_FORMAT = "openai-responses"
KEEPALIVE = comment(b"keep-alive")  # the SDK's parser skips it
_TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})
TERMINAL_MARKS = (b'"response.completed"', b'"response.incomplete"', b'"response.failed"')
MAX_ID = 64  # the longest response id: a longer one names nothing
_SEQUENCE = re.compile(rb'"sequence_number"\s*:\s*(\d+)')
_NOT_STORED = "The gateway could not store the response, so it was not completed."


class FinalWriter(Protocol):
    """Where a background run's stream goes (`responses_background._Sink`)."""

    async def seal(self, body: Json, tail: bytes) -> bool:
        """Write the final state with every event not written yet, `tail` included, in one
        transaction; nothing is written after it. False: the response was no longer pending."""
        ...


@dataclass(frozen=True, slots=True)
class ContextBounds:
    """The largest conversation `previous_response_id` may rebuild (`responses.max_context_*`)."""

    max_bytes: int
    max_tokens: int

    @classmethod
    def of(cls, config: ResponsesConfig) -> ContextBounds:
        return cls(config.max_context_bytes, config.max_context_tokens)

    def check(self, previous: str, head: Head) -> None:
        for size, limit, unit, key in (
            (head.context_bytes, self.max_bytes, "bytes", "max_context_bytes"),
            (head.context_tokens, self.max_tokens, "tokens", "max_context_tokens"),
        ):
            if size > limit:
                raise InvalidRequest(
                    f"The conversation ending with response '{previous}' holds {size} {unit}, more "
                    f"than the {limit} a continuation may rebuild (responses.{key}). Start a new "
                    "conversation, sending the context you need as input.",
                    param="previous_response_id",
                    code="context_too_large",
                )


async def load_conversation(
    store: ResponseStore, previous: str, key_id: str, bounds: ContextBounds
) -> list[StoredResponse]:
    """The stored conversation `previous` ends, oldest first: 404 when the key has no such
    response (another key's is as unknown as a missing one), 400 while it is still running or
    when it is larger than `bounds` (known from its last row alone, before any turn loads)."""
    head = await store.head(previous, key_id) if len(previous) <= MAX_ID else None
    if head is not None and head.status in PENDING:
        raise InvalidRequest(
            f"Previous response with id '{previous}' is still {head.status}; wait for it to finish.",
            param="previous_response_id",
        )
    if head is not None:
        bounds.check(previous, head)
    chain = await store.chain(previous, key_id) if head is not None else []
    if not chain:  # unknown, or deleted in between
        raise NotFound(
            f"Previous response with id '{previous}' not found.",
            param="previous_response_id",
            code="previous_response_not_found",
        )
    return chain


class ResponseCall:
    def __init__(
        self,
        store: ResponseStore,
        request: ResponsesRequest,
        key_id: str,
        chain: list[StoredResponse],
        raw: bytes | None = None,
        background: tuple[FinalWriter, Json] | None = None,
        hosted: HostedTools | None = None,
    ) -> None:
        """`background`: a background response being run (where its stream goes, and the
        response as accepted): its row is updated rather than inserted, and its events go on
        from the accepted ones with its id. `hosted`: the `hosted_tools` policy and its log
        (without it, hosted tools a translated route cannot run are dropped, unlogged)."""
        self.store = store
        self.request = request
        self.raw = raw  # the client's bytes, relayed as they are to a native route
        self.sink = background[0] if background else None
        self.hosted = hosted
        self.key_id = key_id
        self.chain = chain  # the stored conversation it continues, oldest first
        self.history = [item for r in chain for item in (*r.input, *r.output)]
        self.frame = ResponseFrame.for_request(request)
        if background is not None:
            self.frame.id, self.frame.created_at = background[1]["id"], background[1]["created_at"]
        # The chat request, translated when a translated route is first tried (`route`): a
        # native route (a coding agent's conversation to OpenAI) needs none.
        self.chat: TextCall | None = None
        self.blocked: Untranslatable | None = None  # why only a native route can take it
        self.provider = ""
        self.translator: ChatToResponsesStream | None = None
        self.last_sequence = -1  # of a native stream's events
        self.next_sequence = QUEUED_EVENTS  # a background run's next event number
        self.framing = Framing(self._error_event, KEEPALIVE)

    def text_call(self) -> TextCall:
        """What the call is admitted and accounted by: the Responses request after the stored
        conversation it continues, which every route sends upstream."""
        req = self.request
        payload = req.payload
        if self.history:
            payload = {**payload, "input": [*self.history, *req.input_items]}
        return TextCall("chat", b"", payload, req.model, req.stream, req.stream)

    # -- routing ------------------------------------------------------------------------

    def route(self, target: Target) -> Awaitable[Reply]:
        """A native route gets the Responses request itself; a translated one its chat request,
        or is skipped when the request has what chat completions cannot take."""
        provider = target.provider
        if NATIVE_FORMAT in provider.native_formats:
            payload = self._native_payload(target)
            if isinstance(provider, OpenAIProvider):
                raw = self.raw if payload is self.request.payload else None
                return provider.responses_create(payload, target, self.request.stream, raw)
            return provider.native(payload, target, self.request.stream)
        chat = self._chat_call()
        if self.hosted is not None:
            self.hosted.check(self.request.dropped)
        return provider.chat(chat, target)

    def _chat_call(self) -> TextCall:
        """The canonical chat request, translated once; `Unsupported` (the route is skipped)
        when only a native route can take the request."""
        if self.chat is None and self.blocked is None:
            req = self.request
            try:
                canonical = req.canonical(self.history)
            except Untranslatable as exc:
                self.blocked = exc
            else:
                self.chat = TextCall("chat", b"", canonical, req.model, req.stream, req.stream)
        if self.chat is None:
            assert self.blocked is not None  # one of the two, once translated
            blocked = self.blocked
            raise Unsupported(blocked.message, code=blocked.code, param=blocked.param)
        return self.chat

    def _native_payload(self, target: Target) -> Json:
        """The client's request, unless it continues a conversation that upstream does not hold
        (answered elsewhere or translated): then the whole conversation is sent instead."""
        payload = self.request.payload
        if self.sink is not None:  # the gateway runs it in the background, not the upstream
            payload = {k: v for k, v in payload.items() if k != "background"}
        head = self.chain[-1] if self.chain else None
        if head is None or (head.native and head.provider == target.provider.name):
            return payload
        rebuilt = {k: v for k, v in payload.items() if k != "previous_response_id"}
        rebuilt["input"] = for_upstream(self.history) + for_upstream(self.request.input_items)
        return rebuilt

    # -- the last step before sending -----------------------------------------------------

    async def finish(self, reply: Reply, target: Target) -> Reply:
        self.provider = target.provider.name
        native = reply.wire == NATIVE_FORMAT
        headers = list(reply.headers)
        if not native:
            headers = with_dropped(headers, self.request.dropped_for(target.provider.protocol))
        if not native and self.hosted is not None:
            self.hosted.note(self.key_id, target, self.request.dropped)
        if reply.stream is not None:
            events = self._native_events(reply.stream) if native else self._translated_events(reply.stream)
            return Reply(
                reply.status,
                b"text/event-stream",
                stream=events,
                usage=reply.usage,
                headers=headers,
                close=reply.close,
            )
        if native:
            answered = json_object(reply.body)
            if answered is not None and reply.status < 400:
                await self._save(answered, native=True)
            return Reply(reply.status, reply.content_type, reply.body, usage=reply.usage, headers=headers)
        response = chat_to_response(json_object(reply.body), self.frame)
        await self._save(response, native=False)
        return Reply(
            reply.status, b"application/json", orjson.dumps(response), usage=reply.usage, headers=headers
        )

    async def _translated_events(self, chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        translator = self.translator = ChatToResponsesStream(self.frame, queued=self.sink is not None)
        try:
            async for run in chunks:
                out = translator.feed(run)
                if out:
                    yield out
        except StreamBroken as exc:
            translator.broken = True
            translator.error_message = str(exc)
        tail = translator.finish()
        if tail:
            yield tail
        if translator.broken:
            response, event = translator.failed()
            if self.sink is not None:  # the relay's `error` event would come after the seal
                event += translator.error_event(translator.error_message)
            try:
                event = await self._commit(response, False, event)
            except Exception:  # failing anyway: the client still learns why
                _store_failed(response)
            if event:
                yield event
            raise StreamBroken(translator.error_message)  # the relay adds the `error` event
        response = translator.final()
        try:
            terminal = await self._commit(response, False, translator.terminal(response))
        except Exception:
            _store_failed(response)
            raise StreamBroken(_NOT_STORED) from None
        if terminal:
            yield terminal

    async def _native_events(self, runs: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        async for received in runs:
            run = received if self.sink is None else self._as_background(received)
            self._note_sequence(run)
            if any(mark in run for mark in TERMINAL_MARKS):
                response = _terminal_response(run)
                if response is not None:
                    try:
                        run = await self._commit(response, True, run)
                    except Exception:
                        _store_failed(response)
                        raise StreamBroken(_NOT_STORED) from None
                    if self.sink is not None:
                        return  # sealed: whatever the upstream sends after it is not written
            if run:
                yield run

    async def _commit(self, response: Json, native: bool, terminal: bytes) -> bytes:
        """Store the finished response; returns what the stream sends on. A background run's
        final state is written with its remaining events, `terminal` among them, in one
        transaction, so nothing is left to send (and if a cancel won, nothing may be)."""
        if self.sink is not None:
            await asyncio.shield(self.sink.seal(response, terminal))
            return b""
        await self._save(response, native)
        return terminal

    def _as_background(self, run: bytes) -> bytes:
        """A native run's events as events of the background response: numbered on from the
        accepted ones, under its id (its own `response.created` was sent at acceptance)."""
        out = b""
        for event in split_events(run):
            obj = json_object(event_data(event))
            if obj is None or obj.get("type") in ("response.created", "response.queued"):
                continue
            obj["sequence_number"] = self.next_sequence
            self.next_sequence += 1
            if isinstance(obj.get("response"), dict):
                obj["response"] = {
                    **obj["response"],
                    "id": self.frame.id,
                    "created_at": self.frame.created_at,
                }
                obj["response"]["background"] = True
            out += json_event(obj, str(obj.get("type")))
        return out

    def _note_sequence(self, run: bytes) -> None:
        found = _SEQUENCE.findall(run)
        if found:
            self.last_sequence = int(found[-1])

    async def _save(self, response: Json, native: bool) -> None:
        req = self.request
        if self.sink is not None:
            # A background response's row exists: moved to its final state unless cancelled.
            await asyncio.shield(self.sink.seal(response, b""))
            return
        if not req.store:
            return
        record = StoredResponse(
            id=str(response.get("id") or self.frame.id),
            key_id=self.key_id,
            model=req.model,
            provider=self.provider,
            native=native,
            status=str(response.get("status") or "completed"),
            previous_id=req.previous_response_id,
            body=response,
            input=req.input_items,
        )
        head = self.chain[-1] if self.chain else None
        before = (head.context_bytes, head.context_tokens) if head is not None else (0, 0)
        # Shielded: a client leaving mid-write must not cancel a database transaction.
        await asyncio.shield(self.store.save(record, before))

    def _error_event(self, message: str) -> bytes:
        if self.translator is not None:
            return self.translator.error_event(message)
        self.last_sequence += 1
        fields = {
            "type": "error",
            "sequence_number": self.last_sequence,
            "code": "stream_broken",
            "message": message,
            "param": None,
            "error": {"type": "upstream_error", "code": "stream_broken", "message": message},
        }
        return json_event(fields, "error")


def _store_failed(response: Json) -> None:
    """One line for a database that is away or full (it says so on every request meanwhile);
    a traceback for anything else."""
    exc = sys.exc_info()[1]
    if exc is not None and is_outage(exc):
        log.warning("could not store response %s: %s", response.get("id"), failure_reason(exc))
    else:
        log.exception("could not store response %s", response.get("id"))


def _terminal_response(run: bytes) -> Json | None:
    """The Response object of a native stream's terminal event in `run`, if it has one."""
    for event in split_events(run):
        obj = json_object(event_data(event))
        if obj is not None and obj.get("type") in _TERMINAL and isinstance(obj.get("response"), dict):
            return dict(obj["response"])
    return None
