"""Streaming translation: OpenAI chat completion chunks in, Responses API events out.

The events are the typed ones the `openai` SDK's stream helpers accumulate: `response.created`
and `response.in_progress` first, then per output item `response.output_item.added`, its
content parts and deltas, their `.done` events and `response.output_item.done`, each event
numbered by `sequence_number`. A text message is closed when a tool call starts; tool calls
stay open until the upstream finishes, since late argument fragments may still arrive. A
custom tool's input is sent in one delta when its call closes (the upstream streams it as JSON
arguments). A web search the upstream reports becomes a finished `web_search_call` item at
once (one reported after the text began leaves the message open: Gemini grounds its last
event, and an OpenAI search model only cites, which implies a search at the end), and
citations become `response.output_text.annotation.added` events on the text they cite.

The translator never emits the terminal event itself: once the upstream has finished,
`final()` gives the finished Response object and `terminal()` its event, so the caller can
store the response before the client learns it is done. A stream that broke gets `failed()`
(the `response.failed` event) and `error_event()`, an `error` event with a top-level `error`
object, on which the SDK raises.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from unigate.translate import web_search
from unigate.translate.anthropic_response import as_object
from unigate.translate.openai_chunks import CUT_OFF, OpenAIChunkReader
from unigate.translate.pieces import Pieces
from unigate.translate.responses_items import item_id
from unigate.translate.responses_response import (
    INCOMPLETE,
    ResponseFrame,
    message_item,
    response_usage,
    text_part,
    url_annotation,
)
from unigate.translate.responses_tools import custom_input
from unigate.translate.sse import json_event

Json = dict[str, Any]
QUEUED_EVENTS = 2  # `response.created` and `response.queued` of a background response


@dataclass(slots=True)
class _Part:
    kind: str  # output_text | refusal
    offset: int = 0  # characters of the chat answer's text before this part
    text: Pieces = field(default_factory=Pieces)
    annotations: list[Json] = field(default_factory=list)

    def json(self) -> Json:
        if self.kind == "output_text":
            return text_part(self.text.joined(), list(self.annotations))
        return {"type": "refusal", "refusal": self.text.joined()}


@dataclass(slots=True)
class _Item:
    index: int  # output_index
    id: str
    kind: str  # message | call | web_search_call
    parts: list[_Part] = field(default_factory=list)
    call_id: str = ""
    name: str = ""  # the upstream function's name
    arguments: Pieces = field(default_factory=Pieces)
    search: web_search.Search | None = None  # what a web search call searched
    done: bool = False


_PREFIX = {"message": "msg_", "call": "fc_", "web_search_call": "ws_"}


class ChatToResponsesStream(OpenAIChunkReader):
    """`queued`: a background response, whose `response.created` and `response.queued`
    (events 0 and 1) were sent when it was accepted; this stream goes on from there."""

    def __init__(self, frame: ResponseFrame, queued: bool = False) -> None:
        super().__init__()
        self.frame = frame
        self.queued = queued
        self.seq = QUEUED_EVENTS if queued else 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.broken = False
        self.error_message = CUT_OFF
        self._started = False
        self._items: list[_Item] = []
        self._message: _Item | None = None  # the open message item
        self._calls: dict[Any, _Item] = {}  # chat tool call index -> its item
        self._chars = 0  # characters of the chat answer's text so far (citations count in them)
        self._cited: list[web_search.Citation] = []
        self._usage: Json | None = None
        self._finish: str | None = None

    # -- events the caller asks for -----------------------------------------------------

    def start(self) -> bytes:
        """`response.created` and `response.in_progress` (once)."""
        if self._started:
            return b""
        self._started = True
        shell = self.frame.response("in_progress", [])
        created = b"" if self.queued else self._event("response.created", {"response": shell})
        return created + self._event("response.in_progress", {"response": shell})

    def finish(self) -> bytes:
        out = self._rest()
        if not (self._done or self._errored):
            self.broken = True
        return out

    @property
    def status(self) -> str:
        return "incomplete" if self._finish in INCOMPLETE else "completed"

    def final(self) -> Json:
        """The finished Response object (after the upstream completed)."""
        status = self.status
        output = [self._json(item, status) for item in self._items]
        usage = response_usage(self._usage)
        return self.frame.response(status, output, usage, incomplete=INCOMPLETE.get(self._finish or ""))

    def terminal(self, response: Json) -> bytes:
        return self._event(f"response.{response['status']}", {"response": response})

    def failed(self) -> tuple[Json, bytes]:
        """The failed Response object and its `response.failed` event."""
        output = [self._json(item, "completed" if item.done else "incomplete") for item in self._items]
        error = {"code": "server_error", "message": self.error_message}
        usage = response_usage(self._usage) if self._usage else None
        response = self.frame.response("failed", output, usage, error=error)
        return response, self.start() + self._event("response.failed", {"response": response})

    def error_event(self, message: str) -> bytes:
        fields = {
            "code": "stream_broken",
            "message": message,
            "param": None,
            # A top-level `error` object is what makes the SDK raise instead of yielding.
            "error": {"type": "upstream_error", "code": "stream_broken", "message": message},
        }
        return self._event("error", fields)

    # -- chat chunks in -----------------------------------------------------------------

    def _on_chunk(self, chunk: Json) -> bytes:
        out = b"" if self._started else self.start()
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self._usage = usage
            self.prompt_tokens = int(usage.get("prompt_tokens") or 0)
            self.completion_tokens = int(usage.get("completion_tokens") or 0)
        choices = chunk.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return out
        choice = choices[0]
        delta = as_object(choice.get("delta"))
        # Searches and citations are rare: most chunks carry neither key (a test, not a call).
        if web_search.SEARCHES in delta:
            for found in web_search.searches(delta[web_search.SEARCHES]):
                out += self._search(found)
        for kind, key in (("output_text", "content"), ("refusal", "refusal")):
            text = delta.get(key)
            if isinstance(text, str) and text:
                out += self._text(kind, text)
        for call in delta.get("tool_calls") or []:
            if isinstance(call, dict):
                out += self._tool_call(call)
        if web_search.ANNOTATIONS in delta:
            for cite in web_search.citations(delta[web_search.ANNOTATIONS]):
                out += self._annotation(cite)
        if choice.get("finish_reason"):
            self._finish = str(choice["finish_reason"])
        return out

    def _on_done(self) -> bytes:
        self._done = True
        out = self.start()
        if self._cited and not any(item.kind == "web_search_call" for item in self._items):
            out += self._search(web_search.implied_search(self._cited))
        status = self.status
        for item in self._items:
            out += self._close(item, status)
        return out

    def _on_error(self, error: Any) -> bytes:
        self._errored = self.broken = True
        message = error.get("message") if isinstance(error, dict) else None
        self.error_message = (
            message if isinstance(message, str) and message else "The upstream reported an error."
        )
        return b""

    # -- items ----------------------------------------------------------------------------

    def _json(self, item: _Item, status: str) -> Json:
        if item.kind == "message":
            return message_item(item.id, [p.json() for p in item.parts], status)
        if item.kind == "call":
            return self.frame.call(item.id, item.call_id, item.name, item.arguments.joined(), status)
        assert item.search is not None
        return self.frame.search_call(item.id, item.search, status)

    def _open(self, kind: str, **fields: Any) -> tuple[_Item, bytes]:
        item = _Item(len(self._items), item_id(_PREFIX[kind]), kind, **fields)
        self._items.append(item)
        fields = {"output_index": item.index, "item": self._json(item, "in_progress")}
        return item, self._event("response.output_item.added", fields)

    def _close_message(self) -> bytes:
        """The text before a call or a search is finished."""
        if self._message is None:
            return b""
        out = self._close(self._message, "completed")
        self._message = None
        return out

    def _search(self, found: web_search.Search) -> bytes:
        """A web search the upstream ran: reported whole, as it is already done."""
        out = b""
        item, added = self._open("web_search_call", search=found)
        out += added
        where = self._where(item)
        for step in ("in_progress", "searching", "completed"):
            out += self._event(f"response.web_search_call.{step}", where)
        return out + self._close(item, "completed")

    def _annotation(self, cite: web_search.Citation) -> bytes:
        """A citation on the text part it falls in (the latest one when none holds it)."""
        found: tuple[_Item, int, _Part] | None = None
        for item in self._items:
            for i, part in enumerate(item.parts):
                if part.kind == "output_text" and (found is None or part.offset <= cite.start):
                    found = (item, i, part)
        if found is None:
            return b""  # no text to cite
        item, index, part = found
        self._cited.append(cite)
        annotation = url_annotation(cite, part.offset)
        part.annotations.append(annotation)
        fields = {
            **self._where(item),
            "content_index": index,
            "annotation_index": len(part.annotations) - 1,
            "annotation": annotation,
        }
        return self._event("response.output_text.annotation.added", fields)

    def _text(self, kind: str, text: str) -> bytes:
        out = b""
        item = self._message
        if item is None:
            item, out = self._open("message")
            self._message = item
        if not item.parts or item.parts[-1].kind != kind:
            item.parts.append(_Part(kind, self._chars))
            fields = {
                **self._where(item),
                "content_index": len(item.parts) - 1,
                "part": item.parts[-1].json(),
            }
            out += self._event("response.content_part.added", fields)
        part = item.parts[-1]
        part.text.add(text)
        if kind == "output_text":
            self._chars += len(text)
        fields = self._where(item)  # a fresh dict, filled in place: this runs once a chunk
        fields["content_index"] = len(item.parts) - 1
        fields["delta"] = text
        if kind == "output_text":
            fields["logprobs"] = []
            return out + self._event("response.output_text.delta", fields)
        return out + self._event("response.refusal.delta", fields)

    def _tool_call(self, call: Json) -> bytes:
        out = b""
        index = call.get("index", 0)
        fn = as_object(call.get("function"))
        item = self._calls.get(index)
        if item is None:
            out += self._close_message()
            call_id = call.get("id") if isinstance(call.get("id"), str) else item_id("call_")
            item, added = self._open("call", call_id=call_id, name=str(fn.get("name") or ""))
            self._calls[index] = item
            out += added
        elif not item.name and isinstance(fn.get("name"), str):
            item.name = fn["name"]
        arguments = fn.get("arguments")
        if isinstance(arguments, str) and arguments:
            item.arguments.add(arguments)
            if not self.frame.names.ref(item.name).custom:  # a custom input is sent whole at the end
                out += self._event(
                    "response.function_call_arguments.delta", {**self._where(item), "delta": arguments}
                )
        return out

    def _close(self, item: _Item, status: str) -> bytes:
        if item.done:
            return b""
        item.done = True
        out = b""
        where = self._where(item)
        if item.kind == "message":
            for i, part in enumerate(item.parts):
                if part.kind == "output_text":
                    fields = {**where, "content_index": i, "text": part.text.joined(), "logprobs": []}
                    out += self._event("response.output_text.done", fields)
                else:
                    out += self._event(
                        "response.refusal.done", {**where, "content_index": i, "refusal": part.text.joined()}
                    )
                out += self._event(
                    "response.content_part.done", {**where, "content_index": i, "part": part.json()}
                )
        elif item.kind == "call":
            ref = self.frame.names.ref(item.name)
            if ref.custom:
                text = custom_input(item.arguments.joined())
                out += self._event("response.custom_tool_call_input.delta", {**where, "delta": text})
                out += self._event("response.custom_tool_call_input.done", {**where, "input": text})
            else:
                fields = {**where, "name": ref.name, "arguments": item.arguments.joined()}
                out += self._event("response.function_call_arguments.done", fields)
        return out + self._event(
            "response.output_item.done", {"output_index": item.index, "item": self._json(item, status)}
        )

    @staticmethod
    def _where(item: _Item) -> Json:
        return {"item_id": item.id, "output_index": item.index}

    def _event(self, kind: str, fields: Json) -> bytes:
        data = {"type": kind, "sequence_number": self.seq, **fields}
        self.seq += 1
        return json_event(data, kind)


def queued_events(response: Json) -> list[tuple[int, bytes]]:
    """Events 0 and 1 of a background response, sent when it is accepted."""
    return [
        (i, json_event({"type": kind, "sequence_number": i, "response": response}, kind))
        for i, kind in enumerate(("response.created", "response.queued"))
    ]
