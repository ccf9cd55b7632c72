"""LangChain's chat models (pinned `langchain-openai`, `langchain-anthropic`,
`langchain-google-genai`, run in .venv-clients) against the gateway: `ChatOpenAI` in chat mode
and with `use_responses_api=True` (`base_url` = the gateway's `/v1`), `ChatAnthropic` and
`ChatGoogleGenerativeAI` (`base_url` = the gateway's root), the gateway key as the API key, on the
sandbox and the chat-only, Anthropic and Gemini fakes. invoke, stream, and a `bind_tools` round
trip whose tool result goes back for the answer. `OpenAIEmbeddings` with its defaults, which
sends token arrays, on the sandbox and on Gemini's embedding model (which embeds text: the
gateway sends the text the ids spell)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.clients.rig import (
    GEMINI_EMBED,
    HELLO,
    STREAM,
    TIKTOKEN_CACHE,
    TRANSLATED,
    Rig,
    Run,
    check_reply,
    check_tool_round_trip,
    outcome,
    run_python_driver,
    run_with_nonce,
)

pytestmark = pytest.mark.clients

CHAT_MODELS = ("openai-chat", "openai-responses", "anthropic", "google")
EMBEDDING_MODELS = ("sandbox-embedding", GEMINI_EMBED)


@pytest.fixture(scope="module")
def ran(rig: Rig, tmp_path_factory: pytest.TempPathFactory) -> Run:
    home: Path = tmp_path_factory.mktemp("langchain")
    return run_with_nonce(
        rig,
        lambda spec: run_python_driver(
            "langchain_client.py", spec, home, TIKTOKEN_CACHE_DIR=str(TIKTOKEN_CACHE)
        ),
        models=list(TRANSLATED),
        embedding_models=list(EMBEDDING_MODELS),
    )


@pytest.mark.parametrize("model", TRANSLATED)
@pytest.mark.parametrize("chat_model", CHAT_MODELS)
def test_invoke(ran: Run, rig: Rig, chat_model: str, model: str) -> None:
    check_reply(rig, model, outcome(ran[0], f"{chat_model}:{model}", "invoke"), HELLO)


@pytest.mark.parametrize("model", TRANSLATED)
@pytest.mark.parametrize("chat_model", CHAT_MODELS)
def test_stream(ran: Run, rig: Rig, chat_model: str, model: str) -> None:
    check_reply(rig, model, outcome(ran[0], f"{chat_model}:{model}", "stream"), STREAM, streamed=True)


@pytest.mark.parametrize("model", TRANSLATED)
@pytest.mark.parametrize("chat_model", CHAT_MODELS)
def test_bind_tools_round_trip(ran: Run, rig: Rig, chat_model: str, model: str) -> None:
    results, since, nonce = ran
    check_tool_round_trip(rig, model, outcome(results, f"{chat_model}:{model}", "tool"), since, nonce)


@pytest.mark.parametrize("model", EMBEDDING_MODELS)
def test_embeddings_with_defaults(ran: Run, rig: Rig, model: str) -> None:
    got = outcome(ran[0], f"embeddings:{model}", "embed")
    assert len(got["documents"]) == 2 and got["query"] == got["documents"][0] > 0


def test_gemini_got_the_texts_the_ids_spell(ran: Run, rig: Rig) -> None:
    texts = [
        r["content"]["parts"][0]["text"]
        for call, body, _ in rig.gemini.received
        if call.startswith("gemini-embedding-001:batchEmbedContents")
        for r in body["requests"]
    ]
    assert texts == ["The first document.", "A second one, longer than the first.", "which one?"]
