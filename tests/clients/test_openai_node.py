"""The `openai` Node SDK (pinned) against the gateway: `baseURL` = the gateway's `/v1`, the
gateway key as `apiKey`, on the sandbox and on the chat-only, Anthropic and Gemini fakes. Chat
completions plain and streamed (with usage), and the Responses API plain and streamed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.clients.rig import HELLO, STREAM, TRANSLATED, Rig, check_reply, outcome, run_node_driver

pytestmark = pytest.mark.clients


@pytest.fixture(scope="module")
def results(rig: Rig, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    spec = {"base_url": rig.base_url, "key": rig.key, "models": list(TRANSLATED)}
    home: Path = tmp_path_factory.mktemp("openai-node")
    return run_node_driver("openai_sdk.mjs", spec, home)


@pytest.mark.parametrize("model", TRANSLATED)
def test_chat(results: dict[str, Any], rig: Rig, model: str) -> None:
    got = outcome(results, model, "chat")
    assert got["finish"] == "stop"
    check_reply(rig, model, got, HELLO)


@pytest.mark.parametrize("model", TRANSLATED)
def test_chat_stream(results: dict[str, Any], rig: Rig, model: str) -> None:
    got = outcome(results, model, "stream")
    check_reply(rig, model, got, STREAM, streamed=True)
    assert got["usage"]["completion_tokens"] > 0


@pytest.mark.parametrize("model", TRANSLATED)
def test_responses(results: dict[str, Any], rig: Rig, model: str) -> None:
    got = outcome(results, model, "responses")
    assert got["status"] == "completed"
    check_reply(rig, model, got, HELLO)


@pytest.mark.parametrize("model", TRANSLATED)
def test_responses_stream(results: dict[str, Any], rig: Rig, model: str) -> None:
    got = outcome(results, model, "responses_stream")
    check_reply(rig, model, got, STREAM, streamed=True)
    assert got["final"] == got["text"]  # the completed response holds what was streamed
