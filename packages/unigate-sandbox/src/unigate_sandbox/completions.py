"""`/v1/completions` (legacy text completion) for the sandbox: a deterministic continuation
of each prompt, with `max_tokens` (default 16, as OpenAI), `stop`, `suffix`, `echo` and `n`,
as one JSON body or as SSE chunks."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from unigate.providers.base import Reply, TextCall
from unigate.translate.sse import DONE, json_event
from unigate.usage.recorder import Usage
from unigate_sandbox.params import (
    MAX_OUTPUT_TOKENS,
    choice_count,
    invalid_type,
    invalid_value,
    is_int,
    optional_bool,
    optional_int,
    optional_str,
    stop_sequences,
)
from unigate_sandbox.tokens import count_tokens, cut_at_stop, keywords, pieces, truncate_tokens
from unigate_sandbox.wire import (
    FINGERPRINT,
    json_reply,
    new_id,
    now,
    pause,
    stream_reply,
    usage_block,
)

DEFAULT_MAX_TOKENS = 16


@dataclass(frozen=True, slots=True)
class Prompt:
    text: str
    tokens: int


@dataclass(frozen=True, slots=True)
class TextChoice:
    index: int
    echoed: str  # the prompt, when `echo` asked for it
    completion: str
    finish_reason: str


@dataclass(frozen=True, slots=True)
class CompletionPlan:
    choices: tuple[TextChoice, ...]
    prompt_tokens: int

    def usage(self) -> Usage:
        return Usage(self.prompt_tokens, sum(count_tokens(c.completion) for c in self.choices))


def parse_prompts(payload: dict[str, Any]) -> list[Prompt]:
    """`prompt` as str | list[str] | list[int] | list[list[int]]; token ids read as words."""
    raw = payload.get("prompt")
    if isinstance(raw, str):
        return [Prompt(raw, count_tokens(raw))]
    if not isinstance(raw, list) or not raw:
        raise invalid_type("prompt", "a string, an array of strings, or token arrays")
    if all(is_int(t) for t in raw):
        return [_token_prompt(raw, "prompt")]
    if all(isinstance(p, str) for p in raw):
        return [Prompt(p, count_tokens(p)) for p in raw]
    if all(isinstance(p, list) for p in raw):
        return [_token_prompt(p, f"prompt[{i}]") for i, p in enumerate(raw)]
    raise invalid_type("prompt", "a string, an array of strings, or token arrays")


def _token_prompt(ids: list[Any], where: str) -> Prompt:
    if not ids or not all(is_int(t) and t >= 0 for t in ids):
        raise invalid_type(where, "a non-empty array of non-negative token ids")
    return Prompt(" ".join(f"tok{t}" for t in ids), len(ids))


def continuation(prompt: str, suffix: str | None, index: int, n: int) -> str:
    """A deterministic continuation that names the prompt's (and the suffix's) key words."""
    found = keywords(prompt) or ["nothing in particular"]
    lead = "" if not prompt or prompt[-1].isspace() else " "
    sentences = [f"This continues the text about {_listing(found[:3])}."]
    if len(found) > 3:
        sentences.append(f"It also touches on {_listing(found[3:6])}.")
    if suffix:
        sentences.append(f"Then it leads into {_listing(keywords(suffix)[:3]) or 'what follows'}.")
    sentences.append(f"The prompt had {count_tokens(prompt)} tokens.")
    if n > 1:
        sentences.append(f"(Variant {index + 1} of {n}.)")
    return lead + " ".join(sentences)


def _listing(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def plan_completions(payload: dict[str, Any]) -> CompletionPlan:
    prompts = parse_prompts(payload)
    n = choice_count(payload)
    limit = optional_int(payload, "max_tokens", 0, MAX_OUTPUT_TOKENS)
    limit = DEFAULT_MAX_TOKENS if limit is None else limit
    stops = stop_sequences(payload)
    echo = optional_bool(payload, "echo", False)
    suffix = optional_str(payload, "suffix")
    if len(prompts) * n > 128:
        raise invalid_value("n", "too many choices: prompts x n must be at most 128.")
    choices: list[TextChoice] = []
    for p, prompt in enumerate(prompts):
        for j in range(n):
            text, _ = cut_at_stop(continuation(prompt.text, suffix, j, n), stops)
            text, cut = truncate_tokens(text, limit)
            finish = "length" if cut else "stop"
            choices.append(TextChoice(p * n + j, prompt.text if echo else "", text, finish))
    return CompletionPlan(tuple(choices), sum(p.tokens for p in prompts))


def completions_reply(call: TextCall) -> Reply:
    plan = plan_completions(call.payload)
    if call.stream:
        return stream_reply(lambda usage: _events(plan, call.model, call.include_usage, usage))
    usage = plan.usage()
    body = {
        "id": new_id("cmpl-"),
        "object": "text_completion",
        "created": now(),
        "model": call.model,
        "system_fingerprint": FINGERPRINT,
        "choices": [
            {
                "index": c.index,
                "text": c.echoed + c.completion,
                "finish_reason": c.finish_reason,
                "logprobs": None,
            }
            for c in plan.choices
        ],
        "usage": usage_block(usage),
    }
    return json_reply(body, usage)


async def _events(
    plan: CompletionPlan, model: str, include_usage: bool, usage: Usage
) -> AsyncIterator[bytes]:
    head = {"id": new_id("cmpl-"), "object": "text_completion", "created": now(), "model": model}
    head["system_fingerprint"] = FINGERPRINT
    usage.prompt_tokens = plan.prompt_tokens
    for choice in plan.choices:
        parts = ([choice.echoed] if choice.echoed else []) + pieces(choice.completion)
        for i, text in enumerate(parts):
            if not (choice.echoed and i == 0):
                usage.completion_tokens += count_tokens(text)
            yield json_event({**head, "choices": [_choice(choice.index, text, None)]})
            await pause()
        yield json_event({**head, "choices": [_choice(choice.index, "", choice.finish_reason)]})
        await pause()
    if include_usage:
        yield json_event({**head, "choices": [], "usage": usage_block(usage)})
    yield DONE


def _choice(index: int, text: str, finish: str | None) -> dict[str, Any]:
    return {"index": index, "text": text, "finish_reason": finish, "logprobs": None}
