"""The OpenAI Agents SDK (pinned `openai-agents`, run in .venv-clients) against the gateway: its
default client an `AsyncOpenAI` with `base_url` = the gateway's `/v1` and the gateway key,
tracing disabled, `Runner.run_sync` on an Agent with one function tool, over the Responses API
(the SDK's default) and over chat completions, on the sandbox and the chat-only, Anthropic and
Gemini fakes (and, for Responses, an upstream serving it natively)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.clients.rig import (
    NATIVE_RESPONSES,
    TRANSLATED,
    Rig,
    Run,
    check_tool_round_trip,
    run_python_driver,
    run_with_nonce,
)

pytestmark = pytest.mark.clients

RUNS = [("responses", m) for m in (*TRANSLATED, NATIVE_RESPONSES)] + [("chat", m) for m in TRANSLATED]


@pytest.fixture(scope="module")
def ran(rig: Rig, tmp_path_factory: pytest.TempPathFactory) -> Run:
    home: Path = tmp_path_factory.mktemp("openai-agents")
    return run_with_nonce(rig, lambda spec: run_python_driver("agents_client.py", spec, home), runs=RUNS)


@pytest.mark.parametrize(("api", "model"), RUNS)
def test_function_tool_with_run_sync(ran: Run, rig: Rig, api: str, model: str) -> None:
    results, since, nonce = ran
    got = results[f"{api}:{model}"]
    assert "error" not in got, got["error"]
    check_tool_round_trip(rig, model, got, since, nonce)
