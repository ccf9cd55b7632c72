"""The Anthropic and Google Gen AI Node SDKs (`@anthropic-ai/sdk`, `@google/genai`, pinned)
against the gateway: each with its base URL = the gateway's root and the gateway key as its API
key, on the sandbox and on the chat-only, Anthropic and Gemini fakes (a client's format relayed
to an upstream of its own, translated to the others). A call, a stream, a tool round trip whose
result goes back for the answer, a token count, and the model listing in the SDK's own shape.
(The `openai` Node SDK has its own module, test_openai_node.py.)"""

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

SDKS = ("anthropic", "google")


@pytest.fixture(scope="module")
def ran(rig: Rig, tmp_path_factory: pytest.TempPathFactory) -> Run:
    home: Path = tmp_path_factory.mktemp("vendor-node")
    return run_with_nonce(
        rig, lambda spec: run_node_driver("vendor_sdks.mjs", spec, home), models=list(TRANSLATED)
    )


@pytest.mark.parametrize("model", TRANSLATED)
@pytest.mark.parametrize("sdk", SDKS)
def test_text(ran: Run, rig: Rig, sdk: str, model: str) -> None:
    got = outcome(ran[0], f"{sdk}:{model}", "text")
    assert got["finish"] == {"anthropic": "end_turn", "google": "STOP"}[sdk], got
    check_reply(rig, model, got, HELLO)


@pytest.mark.parametrize("model", TRANSLATED)
@pytest.mark.parametrize("sdk", SDKS)
def test_stream(ran: Run, rig: Rig, sdk: str, model: str) -> None:
    got = outcome(ran[0], f"{sdk}:{model}", "stream")
    check_reply(rig, model, got, STREAM, streamed=True)
    if sdk == "anthropic":
        assert got["final"] == got["text"], got  # the SDK's accumulated message holds what streamed
        assert got["usage"]["output_tokens"] > 0, got
    else:
        assert got["usage"]["candidatesTokenCount"] > 0, got


@pytest.mark.parametrize("model", TRANSLATED)
@pytest.mark.parametrize("sdk", SDKS)
def test_tool_round_trip(ran: Run, rig: Rig, sdk: str, model: str) -> None:
    results, since, nonce = ran
    got = outcome(results, f"{sdk}:{model}", "tool")
    if sdk == "anthropic":
        assert got["stop"] == "tool_use", got
    check_tool_round_trip(rig, model, got, since, nonce)


@pytest.mark.parametrize("model", TRANSLATED)
@pytest.mark.parametrize("sdk", SDKS)
def test_count_tokens(ran: Run, sdk: str, model: str) -> None:
    assert outcome(ran[0], f"{sdk}:{model}", "count")["tokens"] > 0


@pytest.mark.parametrize("sdk", SDKS)
def test_models_listed_in_the_sdks_shape(ran: Run, sdk: str) -> None:
    # Every model the key may use, as the SDK's pager read them (Gemini names them `models/<id>`).
    ids = outcome(ran[0], f"{sdk}:{TRANSLATED[0]}", "list")["ids"]
    prefix = "models/" if sdk == "google" else ""
    assert {f"{prefix}{model}" for model in TRANSLATED} <= set(ids), ids
