"""Streaming translation: Anthropic Messages SSE ⇄ OpenAI chat completion chunks.

Each translator is fed raw upstream bytes in whatever pieces the network delivers and returns
complete client-side SSE events; `finish()` is called once the upstream body has ended. A
stream that ends without its terminator (`message_stop` / `[DONE]`) was cut off, so instead of
a clean ending the client gets an in-band error and `broken` is set: the SDKs then raise rather
than silently return a truncated answer.

Web search (`anthropic_search`): Anthropic's `server_tool_use` and `web_search_tool_result`
blocks become a `delta.web_searches` chunk, and a cited text block's `citations_delta`s a
`delta.annotations` chunk once the block ends; the other way round, a search becomes those two
blocks (where the upstream reports it: before the text, or after it for a Gemini grounding;
an OpenAI search model only cites, which implies a search at the end) and each citation a
`citations_delta` on the text block it falls in.
"""

from __future__ import annotations

from typing import Any

import orjson

from unigate.translate import anthropic_search, web_search
from unigate.translate.anthropic_response import (
    anthropic_id,
    anthropic_usage,
    as_object,
    finish_reason,
    openai_id,
    openai_usage,
    prompt_tokens_of,
    stop_reason,
)
from unigate.translate.openai_chunks import CUT_OFF, OpenAIChunkReader, OpenAIChunkWriter, openai_error_chunk
from unigate.translate.pieces import Pieces
from unigate.translate.sse import SSEEvent, json_event, json_object
from unigate.usage.recorder import Usage

Json = dict[str, Any]

# Anthropic error types the Anthropic SDK knows; anything else is reported as `api_error`.
_ANTHROPIC_ERROR_TYPES = frozenset(
    {
        "invalid_request_error",
        "authentication_error",
        "permission_error",
        "not_found_error",
        "rate_limit_error",
        "timeout_error",
        "api_error",
        "overloaded_error",
    }
)


class AnthropicToOpenAIStream(OpenAIChunkWriter):
    """Anthropic `/v1/messages` events in, OpenAI `chat.completion.chunk` events out."""

    def __init__(self, model: str, include_usage: bool, *, created: int | None = None) -> None:
        super().__init__(model, include_usage, created)
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.cached_tokens = 0
        self._id = openai_id(None)
        self._tool_index: dict[int, int] = {}  # Anthropic block index -> OpenAI tool call index
        self._finish: str | None = None
        self._finish_sent = False
        self._stopped = False
        self._search = anthropic_search.SearchReader()
        self._uses: dict[int, tuple[Json, str]] = {}  # block index -> server tool use, its input so far
        self._texts: dict[int, tuple[int, list[Any]]] = {}  # text block index -> start, citations

    def _completed(self) -> bool:
        return self._stopped

    def _closing(self) -> bytes:
        return b"" if self._finish_sent else self._chunk({}, self._finish or "stop")

    def _usage(self) -> Json:
        return openai_usage(self.prompt_tokens, self.completion_tokens, self.cached_tokens)

    def _handle(self, events: list[SSEEvent]) -> bytes:
        out = b""
        for name, data in events:
            if self._stopped or self._errored:
                break
            obj = json_object(data)
            if obj is not None:
                out += self._on_event(str(obj.get("type") or name), obj)
        return out

    def _on_event(self, kind: str, obj: Json) -> bytes:
        if kind == "message_start":
            return self._on_message_start(as_object(obj.get("message")))
        if kind == "content_block_start":
            return self._on_block_start(obj.get("index"), as_object(obj.get("content_block")))
        if kind == "content_block_delta":
            return self._on_block_delta(obj.get("index"), as_object(obj.get("delta")))
        if kind == "message_delta":
            return self._on_message_delta(as_object(obj.get("delta")), as_object(obj.get("usage")))
        if kind == "content_block_stop":
            return self._on_block_stop(obj.get("index"))
        if kind == "message_stop":
            self._stopped = True
        elif kind == "error":
            return self._on_error(as_object(obj.get("error")))
        # `ping` carries nothing an OpenAI client needs.
        return b""

    def _on_message_start(self, message: Json) -> bytes:
        self._id = openai_id(message.get("id"))
        self._take_usage(as_object(message.get("usage")))
        return self._chunk({"role": "assistant", "content": ""})

    def _on_block_start(self, index: Any, block: Json) -> bytes:
        kind = block.get("type")
        if kind == "text":
            if isinstance(index, int):
                self._texts[index] = (self._search.chars, list(block.get("citations") or []))
            text = block.get("text")
            if isinstance(text, str) and text:
                self._search.chars += len(text)
                return self._chunk({"content": text})
            return b""
        if kind == "server_tool_use" and isinstance(index, int):
            self._uses[index] = (block, "")
            return b""
        if kind == "web_search_tool_result":
            found = self._search.result(block)
            return self._chunk({web_search.SEARCHES: web_search.searches_json([found])})
        if kind != "tool_use" or not isinstance(index, int):
            return b""  # Thinking blocks have no place in an OpenAI chat stream.
        tool_index = self._tool_index[index] = len(self._tool_index)
        call = {
            "index": tool_index,
            "id": block.get("id"),
            "type": "function",
            "function": {"name": block.get("name"), "arguments": ""},
        }
        return self._chunk({"tool_calls": [call]})

    def _on_block_delta(self, index: Any, delta: Json) -> bytes:
        kind = delta.get("type")
        if kind == "text_delta" and delta.get("text"):
            self._search.chars += len(str(delta["text"]))
            return self._chunk({"content": delta["text"]})
        if kind == "citations_delta" and index in self._texts:
            self._texts[index][1].append(delta.get("citation"))
            return b""
        if kind == "input_json_delta" and index in self._uses:
            block, sofar = self._uses[index]
            self._uses[index] = (block, sofar + str(delta.get("partial_json") or ""))
            return b""
        if kind == "input_json_delta" and delta.get("partial_json") and index in self._tool_index:
            call = {"index": self._tool_index[index], "function": {"arguments": delta["partial_json"]}}
            return self._chunk({"tool_calls": [call]})
        return b""

    def _on_block_stop(self, index: Any) -> bytes:
        if index in self._uses:
            block, sofar = self._uses.pop(index)
            self._search.use({**block, "input": sofar or block.get("input")})
            return b""
        start, citations = self._texts.pop(index, (0, []))
        cited = self._search.cited(start, citations)
        return self._chunk({web_search.ANNOTATIONS: web_search.annotations_json(cited)}) if cited else b""

    def _on_message_delta(self, delta: Json, usage: Json) -> bytes:
        self._take_usage(usage)
        reason = finish_reason(delta.get("stop_reason"))
        if reason is None or self._finish_sent:
            return b""
        self._finish, self._finish_sent = reason, True
        return self._chunk({}, reason)

    def _take_usage(self, usage: Json) -> None:
        # `message_delta` usage is cumulative and may repeat input counts: take what is present.
        if "input_tokens" in usage or "cache_read_input_tokens" in usage:
            self.prompt_tokens, self.cached_tokens = prompt_tokens_of(usage)
        if isinstance(usage.get("output_tokens"), int):
            self.completion_tokens = usage["output_tokens"]

    def _on_error(self, error: Json) -> bytes:
        self._errored = self.broken = True
        message = str(error.get("message") or "The upstream reported an error.")
        return openai_error_chunk(message, str(error.get("type") or "upstream_error"), None)

    def _chunk(self, delta: Json, finish: str | None = None) -> bytes:
        return self._event({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})


class OpenAIToAnthropicStream(OpenAIChunkReader):
    """OpenAI `chat.completion.chunk` events in, Anthropic `/v1/messages` events out.

    Anthropic content blocks are sequential: a text run or a tool call opens a block and the
    next one closes it. OpenAI upstreams stream tool calls one after another, so each new call
    `index` opens the next block; a late fragment for an earlier call still names that call's
    block index, which is how the Anthropic SDK routes deltas."""

    def __init__(self, model: str, upstream: Usage | None = None) -> None:
        """`upstream`: the route's running usage, whose input count some upstreams report
        with their first event (Gemini's `usageMetadata`, the sandbox) for `message_start`."""
        super().__init__()
        self.model = model
        self.upstream = upstream
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.cached_tokens = 0
        self.broken = False
        self._started = False
        self._open: int | None = None  # index of the open Anthropic block
        self._open_is_text = False
        self._blocks = 0
        self._tool_block: dict[int, int] = {}  # OpenAI tool call index -> Anthropic block index
        self._finish: str | None = None
        self._said = Pieces()  # the answer's text so far, which citations index
        self._text_blocks: list[tuple[int, int]] = []  # (block index, where its text starts)
        self._searches = 0
        self._cited: list[web_search.Citation] = []

    def finish(self) -> bytes:
        out = self._rest()
        if self._done or self._errored:
            return out
        self.broken = True
        return out + _anthropic_event("error", {"error": {"type": "api_error", "message": CUT_OFF}})

    def _on_chunk(self, chunk: Json) -> bytes:
        usage = chunk.get("usage")
        if isinstance(usage, dict):  # read first: a first chunk's count goes into `message_start`
            counts = anthropic_usage(usage)
            self.cached_tokens = counts["cache_read_input_tokens"]
            self.prompt_tokens = counts["input_tokens"] + self.cached_tokens
            self.completion_tokens = counts["output_tokens"]
        out = b"" if self._started else self._start(chunk.get("id"))
        choices = chunk.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return out  # The usage-only chunk.
        choice = choices[0]
        delta = as_object(choice.get("delta"))
        # Searches and citations are rare: most chunks carry neither key (a test, not a call).
        if web_search.SEARCHES in delta:
            for found in web_search.searches(delta[web_search.SEARCHES]):
                out += self._search(found)
        text = delta.get("content") or delta.get("refusal")
        if isinstance(text, str) and text:
            out += self._text(text)
        for call in delta.get("tool_calls") or []:
            if isinstance(call, dict):
                out += self._tool_call(call)
        if web_search.ANNOTATIONS in delta:
            for cite in web_search.citations(delta[web_search.ANNOTATIONS]):
                out += self._citation(cite)
        if choice.get("finish_reason"):
            self._finish = str(choice["finish_reason"])
            out += self._close()
        return out

    def _start(self, chunk_id: Any) -> bytes:
        if self._started:
            return b""
        self._started = True
        message: Json = {
            "id": anthropic_id(chunk_id),
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": self._start_usage(),
        }
        return _anthropic_event("message_start", {"message": message})

    def _start_usage(self) -> Json:
        """The input count as far as it is known before any content: from the chunk itself or
        the upstream's first event; else 0 (OpenAI-compatible upstreams report usage only at the
        end), the real counts following in `message_delta` either way."""
        prompt = self.prompt_tokens or (self.upstream.prompt_tokens if self.upstream is not None else 0)
        usage: Json = {"input_tokens": max(prompt - self.cached_tokens, 0), "output_tokens": 0}
        if self.cached_tokens:
            usage["cache_read_input_tokens"] = self.cached_tokens
        return usage

    def _text(self, text: str) -> bytes:
        out = b""
        if self._open is None or not self._open_is_text:
            out += self._open_block({"type": "text", "text": ""}, is_text=True)
            self._text_blocks.append((self._blocks - 1, self._said.chars))
        self._said.add(text)
        delta = {"type": "text_delta", "text": text}
        return out + _anthropic_event("content_block_delta", {"index": self._open, "delta": delta})

    def _tool_call(self, call: Json) -> bytes:
        out = b""
        index = call.get("index", 0)
        fn = as_object(call.get("function"))
        if index not in self._tool_block:
            block: Json = {
                "type": "tool_use",
                "id": call.get("id") or f"toolu_{self._blocks}",
                "name": fn.get("name"),
                "input": {},
            }
            out += self._open_block(block, is_text=False)
            self._tool_block[index] = self._blocks - 1
        args = fn.get("arguments")
        if isinstance(args, str) and args:
            delta = {"type": "input_json_delta", "partial_json": args}
            out += _anthropic_event("content_block_delta", {"index": self._tool_block[index], "delta": delta})
        return out

    def _search(self, found: web_search.Search) -> bytes:
        self._searches += 1
        use, result = anthropic_search.search_blocks(found, anthropic_search.tool_use_id())
        out = self._open_block({**use, "input": {}}, is_text=False)
        delta = {"type": "input_json_delta", "partial_json": orjson.dumps(use["input"]).decode()}
        out += _anthropic_event("content_block_delta", {"index": self._open, "delta": delta})
        return out + self._open_block(result, is_text=False) + self._close()

    def _citation(self, cite: web_search.Citation) -> bytes:
        """A citation on the text block its span starts in (the latest one before it)."""
        blocks = [index for index, start in self._text_blocks if start <= cite.start] or [
            index for index, _ in self._text_blocks[:1]
        ]
        if not blocks:
            return b""
        self._cited.append(cite)
        delta = {"type": "citations_delta", "citation": anthropic_search.citation(cite, self._said.joined())}
        return _anthropic_event("content_block_delta", {"index": blocks[-1], "delta": delta})

    def _open_block(self, block: Json, *, is_text: bool) -> bytes:
        out = self._close()
        self._open, self._open_is_text = self._blocks, is_text
        self._blocks += 1
        return out + _anthropic_event("content_block_start", {"index": self._open, "content_block": block})

    def _close(self) -> bytes:
        if self._open is None:
            return b""
        index, self._open = self._open, None
        return _anthropic_event("content_block_stop", {"index": index})

    def _on_done(self) -> bytes:
        self._done = True
        out = self._start(None)
        if self._cited and not self._searches:  # citations alone imply the search behind them
            out += self._search(web_search.implied_search(self._cited))
        out += self._close()
        usage: Json = {
            "input_tokens": self.prompt_tokens - self.cached_tokens,
            "output_tokens": self.completion_tokens,
        }
        if self.cached_tokens:
            usage["cache_read_input_tokens"] = self.cached_tokens
        if self._searches:
            usage["server_tool_use"] = {"web_search_requests": self._searches}
        delta = {"stop_reason": stop_reason(self._finish) or "end_turn", "stop_sequence": None}
        out += _anthropic_event("message_delta", {"delta": delta, "usage": usage})
        return out + _anthropic_event("message_stop", {})

    def _on_error(self, error: Any) -> bytes:
        self._errored = self.broken = True
        error = error if isinstance(error, dict) else {"message": str(error)}
        kind = error.get("type")
        payload = {
            "type": kind if kind in _ANTHROPIC_ERROR_TYPES else "api_error",
            "message": str(error.get("message") or "The upstream reported an error."),
        }
        return _anthropic_event("error", {"error": payload})


def _anthropic_event(kind: str, fields: Json) -> bytes:
    """Both the `event:` line and the `type` field: the Anthropic SDK dispatches on the former."""
    return json_event({"type": kind, **fields}, kind)
