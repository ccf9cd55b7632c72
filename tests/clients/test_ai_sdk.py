"""The Vercel AI SDK (`ai` with `@ai-sdk/openai` in Responses and in chat mode,
`@ai-sdk/anthropic`, `@ai-sdk/google`, pinned) against the gateway: each provider package with
`baseURL` = the gateway's `/v1` (`/v1beta` for Google) and the gateway key as its `apiKey`, on the
sandbox and on the chat-only, Anthropic and Gemini fakes. A text call, a stream, and a tool round
trip in which generateText runs the tool and sends its result back for the final answer."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import pytest

from tests.clients.rig import SANDBOX, TRANSLATED, Rig, outcome, run_node_driver

pytestmark = pytest.mark.clients

PROVIDERS = ("openai-responses", "openai-chat", "anthropic", "google")
Run = tuple[dict[str, Any], dict[str, int], str]


@pytest.fixture(scope="module")
def ran(rig: Rig, tmp_path_factory: pytest.TempPathFactory) -> Run:
    """The driver's results for every provider and model, where the fakes' logs stood before,
    and the nonce the tool returned."""
    nonce = f"WX-{secrets.token_hex(4)}"
    since = rig.mark()
    spec = {"base_url": rig.base_url, "key": rig.key, "models": list(TRANSLATED), "nonce": nonce}
    home: Path = tmp_path_factory.mktemp("ai-sdk")
    return run_node_driver("ai_sdk.mjs", spec, home), since, nonce


@pytest.mark.parametrize("model", TRANSLATED)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_text(ran: Run, rig: Rig, provider: str, model: str) -> None:
    got = outcome(ran[0], f"{provider}:{model}", "text")
    assert rig.reply_to(model, "Hello there") in got["text"]


@pytest.mark.parametrize("model", TRANSLATED)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_stream(ran: Run, rig: Rig, provider: str, model: str) -> None:
    got = outcome(ran[0], f"{provider}:{model}", "stream")
    assert got["chunks"] > 1 and rig.reply_to(model, "Stream a short reply please") in got["text"]


@pytest.mark.parametrize("model", TRANSLATED)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_tool_round_trip(ran: Run, rig: Rig, provider: str, model: str) -> None:
    results, since, nonce = ran
    got = outcome(results, f"{provider}:{model}", "tool")
    assert got["calls"] == ["Paris"] and got["steps"] == 2  # the tool ran once, then the answer
    assert nonce in got["text"]  # only the tool's result holds the nonce
    if model != SANDBOX:  # the sandbox quotes the result in the answer, checked above
        assert any(nonce in r for r in rig.tool_results(model, since))
