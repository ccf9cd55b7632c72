"""`/v1/chat/completions` for the sandbox: the request is validated and fully answered up
front (a plan of choices and usage), then rendered as one JSON body or as SSE chunks, so
a stream can never fail half-way and streaming and non-streaming replies always agree."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

from unigate.limits.estimate import chat_prompt_tokens
from unigate.providers.base import Reply, TextCall
from unigate.translate import web_search
from unigate.translate.sse import DONE, json_event
from unigate.translate.web_search import Citation, Search
from unigate.usage.recorder import Usage
from unigate_sandbox.compose import content_for, parse_response_format
from unigate_sandbox.conversation import parse_conversation
from unigate_sandbox.params import MAX_OUTPUT_TOKENS, choice_count, optional_int, stop_sequences
from unigate_sandbox.schema_values import Budget
from unigate_sandbox.tokens import count_tokens, cut_at_stop, pieces, truncate_tokens
from unigate_sandbox.tools import ToolCall, choose_tools, make_calls, parse_tool_policy
from unigate_sandbox.web_search import parse_search, search_answer
from unigate_sandbox.wire import (
    FINGERPRINT,
    json_reply,
    new_id,
    now,
    pause,
    stream_reply,
    usage_block,
)

ARGUMENT_FRAGMENTS = 4  # a streamed tool call's arguments arrive in about this many pieces


@dataclass(frozen=True, slots=True)
class Choice:
    index: int
    content: str | None
    tool_calls: tuple[ToolCall, ...]
    finish_reason: str
    citations: tuple[Citation, ...] = ()  # of a web search answer
    searches: tuple[Search, ...] = ()

    def completion_tokens(self) -> int:
        if self.tool_calls:
            return sum(count_tokens(c.name) + count_tokens(c.arguments) for c in self.tool_calls)
        return count_tokens(self.content or "")

    def message(self) -> dict[str, Any]:
        msg: dict[str, Any] = {"role": "assistant", "content": self.content, "refusal": None}
        if self.tool_calls:
            msg["tool_calls"] = [c.as_json() for c in self.tool_calls]
        msg.update(self.search_fields())
        return msg

    def search_fields(self) -> dict[str, Any]:
        if not self.searches:
            return {}
        return {
            web_search.ANNOTATIONS: web_search.annotations_json(list(self.citations)),
            web_search.SEARCHES: web_search.searches_json(list(self.searches)),
        }


@dataclass(frozen=True, slots=True)
class ChatPlan:
    choices: tuple[Choice, ...]
    prompt_tokens: int

    def usage(self) -> Usage:
        return Usage(self.prompt_tokens, sum(c.completion_tokens() for c in self.choices))


def plan_chat(payload: dict[str, Any]) -> ChatPlan:
    """Validate the request and decide every choice; raises InvalidRequest only."""
    conv = parse_conversation(payload)
    policy = parse_tool_policy(payload)
    fmt = parse_response_format(payload)
    search = parse_search(payload)
    n = choice_count(payload)
    stops = stop_sequences(payload)
    newer = optional_int(payload, "max_completion_tokens", 1, MAX_OUTPUT_TOKENS)
    legacy = optional_int(payload, "max_tokens", 1, MAX_OUTPUT_TOKENS)
    limit = newer if newer is not None else legacy
    user = conv.last_user
    user_text = user.text if user else ""
    searching = fmt.kind == "text" and search.answers(conv, policy.active)
    # A tool result at the end means the model has what it asked for: answer in text.
    calling = policy.active and not conv.ends_with_tool_result and not searching
    tools = choose_tools(policy, user_text) if calling else []
    choices: list[Choice] = []
    budget = Budget()  # shared by every generated value of this reply
    for i in range(n):
        if tools:
            calls = make_calls(tools, user_text, f"{len(conv.messages)}/{i}", budget)
            choices.append(Choice(i, None, tuple(calls), "tool_calls"))
            continue
        if searching:
            found = search_answer(conv, search)
            finish = "stop"
            if limit is not None:
                text, cut = truncate_tokens(found.text, limit)
                found, finish = found.cut(len(text)), "length" if cut else finish
            choices.append(Choice(i, found.text, (), finish, found.citations, (found.search,)))
            continue
        text, _ = cut_at_stop(content_for(conv, fmt, i, n, budget), stops)
        finish = "stop"
        if limit is not None:
            text, cut = truncate_tokens(text, limit)
            finish = "length" if cut else finish
        choices.append(Choice(i, text, (), finish))
    return ChatPlan(tuple(choices), chat_prompt_tokens(payload))  # counted as core counts it


def chat_reply(call: TextCall) -> Reply:
    plan = plan_chat(call.payload)
    if call.stream:
        return stream_reply(lambda usage: _events(plan, call.model, call.include_usage, usage))
    usage = plan.usage()
    body = {
        "id": new_id("chatcmpl-"),
        "object": "chat.completion",
        "created": now(),
        "model": call.model,
        "system_fingerprint": FINGERPRINT,
        "choices": [
            {"index": c.index, "message": c.message(), "finish_reason": c.finish_reason, "logprobs": None}
            for c in plan.choices
        ],
        "usage": usage_block(usage),
    }
    return json_reply(body, usage)


async def _events(plan: ChatPlan, model: str, include_usage: bool, usage: Usage) -> AsyncIterator[bytes]:
    head = {"id": new_id("chatcmpl-"), "object": "chat.completion.chunk", "created": now(), "model": model}
    head["system_fingerprint"] = FINGERPRINT
    final = plan.usage()
    usage.prompt_tokens = final.prompt_tokens
    for choice in plan.choices:
        for delta, tokens in _deltas(choice):
            # Tool-call fragments may split a token; the running count is capped, then exact.
            usage.completion_tokens = min(final.completion_tokens, usage.completion_tokens + tokens)
            yield json_event({**head, "choices": [_delta(choice.index, delta, None)]})
            await pause()
        yield json_event({**head, "choices": [_delta(choice.index, {}, choice.finish_reason)]})
        await pause()
    usage.completion_tokens = final.completion_tokens
    if include_usage:
        yield json_event({**head, "choices": [], "usage": usage_block(usage)})
    yield DONE


def _delta(index: int, delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
    return {"index": index, "delta": delta, "finish_reason": finish, "logprobs": None}


def _deltas(choice: Choice) -> Iterator[tuple[dict[str, Any], int]]:
    """The deltas of one choice after the role delta, each with its token count."""
    if not choice.tool_calls:
        yield {"role": "assistant", "content": ""}, 0
        fields = choice.search_fields()
        if fields:  # the search comes first, its citations once the text they cite is out
            yield {web_search.SEARCHES: fields[web_search.SEARCHES]}, 0
        for piece in pieces(choice.content or ""):
            yield {"content": piece}, count_tokens(piece)
        if fields:
            yield {web_search.ANNOTATIONS: fields[web_search.ANNOTATIONS]}, 0
        return
    yield {"role": "assistant", "content": None}, 0
    for k, call in enumerate(choice.tool_calls):
        opening = {
            "index": k,
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        yield {"tool_calls": [opening]}, count_tokens(call.name)
        for fragment in _fragments(call.arguments):
            yield {"tool_calls": [{"index": k, "function": {"arguments": fragment}}]}, count_tokens(fragment)


def _fragments(text: str) -> list[str]:
    size = max(1, -(-len(text) // ARGUMENT_FRAGMENTS))
    return [text[i : i + size] for i in range(0, len(text), size)]
