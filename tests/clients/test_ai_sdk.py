"""The Vercel AI SDK (`ai` with `@ai-sdk/openai` in Responses and in chat mode,
`@ai-sdk/anthropic`, `@ai-sdk/google`, pinned) against the gateway: each provider package with
`baseURL` = the gateway's `/v1` (`/v1beta` for Google) and the gateway key as its `apiKey`, on the
sandbox and on the chat-only, Anthropic and Gemini fakes. A text call, a stream, and a tool round
trip in which generateText runs the tool and sends its result back for the final answer."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.clients.rig import (
    HELLO,
    STREAM,
    TRANSLATED,
    Rig,
    Run,
    check_reply,
    check_tool_round_trip,
    outcome,
    run_node_driver,
    run_with_nonce,
)

pytestmark = pytest.mark.clients

PROVIDERS = ("openai-responses", "openai-chat", "anthropic", "google")


@pytest.fixture(scope="module")
def ran(rig: Rig, tmp_path_factory: pytest.TempPathFactory) -> Run:
    home: Path = tmp_path_factory.mktemp("ai-sdk")
    return run_with_nonce(
        rig, lambda spec: run_node_driver("ai_sdk.mjs", spec, home), models=list(TRANSLATED)
    )


@pytest.mark.parametrize("model", TRANSLATED)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_text(ran: Run, rig: Rig, provider: str, model: str) -> None:
    check_reply(rig, model, outcome(ran[0], f"{provider}:{model}", "text"), HELLO)


@pytest.mark.parametrize("model", TRANSLATED)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_stream(ran: Run, rig: Rig, provider: str, model: str) -> None:
    check_reply(rig, model, outcome(ran[0], f"{provider}:{model}", "stream"), STREAM, streamed=True)


@pytest.mark.parametrize("model", TRANSLATED)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_tool_round_trip(ran: Run, rig: Rig, provider: str, model: str) -> None:
    results, since, nonce = ran
    got = outcome(results, f"{provider}:{model}", "tool")
    assert got["steps"] == 2  # a tool call, then the answer
    check_tool_round_trip(rig, model, got, since, nonce)
