"""Hosted web search across vendors, with each vendor's own SDK against the real gateway: a
Responses client's `web_search` tool, an Anthropic client's web search server tool and a
Gemini client's Google Search, each answered by an OpenAI search model, Anthropic, Gemini
(the fakes speak their vendor's real search wire format) and the sandbox, whole and streamed,
with the results and citations mapped back into the client's own format."""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from google import genai
from google.genai import types

from tests.support import fake_anthropic, fake_gemini, fake_openai
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.fake_gemini import FakeGemini
from tests.support.fake_openai import FakeOpenAI
from tests.support.readme import section
from tests.support.served import ServedGateway

QUESTION = "When is high tide in Brest?"
# model -> (the page cited, how the text it supports begins); the sandbox cites the titles of
# pages it names after the query (and the user's city, when the request gives one).
CITED = {
    "chat-only": ("https://fake-openai.test/tides", fake_openai.CITED),
    "claude-chat": (fake_anthropic.SEARCH_PAGE, fake_anthropic.CITED_TEXT),
    "gemini-chat": (fake_gemini.SEARCH_PAGE, fake_gemini.SUPPORTED),
    "sandbox-chat": ("https://example.com/search/high-tide-brest/1", "High Tide Brest"),
}
QUERIES = {"chat-only": "", "claude-chat": QUESTION, "gemini-chat": "marée Brest", "sandbox-chat": QUESTION}
MODELS = tuple(CITED)


@dataclass
class Clients:
    responses: openai.OpenAI
    messages: anthropic.Anthropic
    genai: genai.Client
    chat: FakeOpenAI
    claude: FakeAnthropic
    gemini: FakeGemini
    base_url: str
    key: str


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Clients]:
    with FakeOpenAI() as chat, FakeAnthropic() as claude, FakeGemini() as gemini:
        config = {
            "sandbox": {"enabled": True},
            "providers": [
                {"name": "chat", "protocol": "openai", "base_url": chat.base_url, "api_key": "sk-chat"},
                {"name": "claude", "protocol": "anthropic", "base_url": claude.base_url, "api_key": "sk-ant"},
                {"name": "gem", "protocol": "gemini", "base_url": gemini.base_url, "api_key": "AIza-up"},
            ],
            "models": [
                {"name": "chat-only", "routes": [{"provider": "chat", "model": "gpt-4o-search-preview"}]},
                {"name": "chat-plain", "routes": [{"provider": "chat", "model": "gpt-4.1"}]},
                {"name": "claude-chat", "routes": [{"provider": "claude", "model": "claude-up"}]},
                {"name": "gemini-chat", "routes": [{"provider": "gem", "model": "gemini-up"}]},
            ],
        }
        with ServedGateway(Path(tmp_path_factory.mktemp("hosted-search")), config=config) as gw:
            key = gw.create_key()
            yield Clients(
                openai.OpenAI(base_url=gw.base_url + "/v1", api_key=key, max_retries=0),
                anthropic.Anthropic(base_url=gw.base_url, api_key=key, max_retries=0),
                genai.Client(api_key=key, http_options=types.HttpOptions(base_url=gw.base_url)),
                chat,
                claude,
                gemini,
                gw.base_url,
                key,
            )


def _upstream_search(up: Clients, model: str) -> Any:
    """What the model's upstream was asked to search with, in its own format."""
    if model == "chat-only":
        return up.chat.received[-1].body.get("web_search_options") is not None
    if model == "claude-chat":
        return [t for t in up.claude.received[-1].get("tools", []) if t["type"] == "web_search_20250305"]
    if model == "gemini-chat":
        return [t for t in up.gemini.received[-1][1].get("tools", []) if "googleSearch" in t]
    return True  # the sandbox searches in process


# ---------------------------------------------------------------- Responses clients


def _check_response(response: Any, model: str) -> None:
    # A search reported with the text (Gemini grounds its last event) comes after the message.
    [search] = [item for item in response.output if item.type == "web_search_call"]
    [message] = [item for item in response.output if item.type == "message"]
    assert search.type == "web_search_call" and search.status == "completed"
    assert search.action.type == "search" and search.action.query == QUERIES[model]
    [part] = message.content
    page, cited = CITED[model]
    notes = [a for a in part.annotations if a.url == page]
    assert notes and part.text[notes[0].start_index : notes[0].end_index].startswith(cited)
    assert response.output_text == part.text


@pytest.mark.parametrize("model", MODELS)
def test_responses_web_search(up: Clients, model: str) -> None:
    response = up.responses.responses.create(
        model=model,
        input=QUESTION,
        tools=[{"type": "web_search", "user_location": {"type": "approximate", "city": "Brest"}}],
        include=["web_search_call.action.sources"],
    )
    _check_response(response, model)
    assert _upstream_search(up, model)
    assert response.output[0].action.sources  # type: ignore[union-attr]


@pytest.mark.parametrize("model", MODELS)
def test_responses_web_search_stream(up: Clients, model: str) -> None:
    with up.responses.responses.stream(
        model=model, input=QUESTION, tools=[{"type": "web_search_preview"}]
    ) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    assert "response.web_search_call.completed" in kinds
    assert "response.output_text.annotation.added" in kinds
    _check_response(final, model)
    _check_response(up.responses.responses.retrieve(final.id), model)  # stored as streamed


def test_openai_models_that_do_not_search_lose_it_by_name(up: Clients) -> None:
    """OpenAI refuses `web_search_options` but from its search models: a chat-only route to
    another model answers without searching and says so."""
    raw = up.responses.responses.with_raw_response.create(
        model="chat-plain", input=QUESTION, tools=[{"type": "web_search"}]
    )
    response = raw.parse()
    assert [item.type for item in response.output] == ["message"]
    assert "web_search_options" not in up.chat.received[-1].body
    assert raw.headers["x-unigate-dropped-fields"] == "web_search_options"
    chat = up.responses.chat.completions.with_raw_response.create(
        model="chat-plain", messages=[{"role": "user", "content": QUESTION}], web_search_options={}
    )
    assert chat.headers["x-unigate-dropped-fields"] == "web_search_options"
    assert chat.parse().choices[0].message.annotations is None


# ---------------------------------------------------------------- Anthropic clients

SEARCH_TOOL: Any = {"type": "web_search_20250305", "name": "web_search", "max_uses": 3}


def _check_message(message: Any, model: str) -> None:
    kinds = [block.type for block in message.content]
    assert kinds[:2] == ["server_tool_use", "web_search_tool_result"]
    use, result = message.content[:2]
    assert use.name == "web_search" and result.tool_use_id == use.id
    assert use.input == {"query": QUERIES[model]} or (model == "chat-only" and use.input == {"query": ""})
    page, cited = CITED[model]
    assert page in [r.url for r in result.content]
    quoted = [b for b in message.content if b.type == "text" and b.citations]
    assert quoted[0].text.startswith(cited) and quoted[0].citations[0].url == page
    assert quoted[0].citations[0].type == "web_search_result_location"


@pytest.mark.parametrize("model", MODELS)
def test_anthropic_web_search(up: Clients, model: str) -> None:
    raw = up.messages.messages.with_raw_response.create(
        model=model, max_tokens=300, messages=[{"role": "user", "content": QUESTION}], tools=[SEARCH_TOOL]
    )
    message = raw.parse()
    _check_message(message, model)
    assert (
        message.usage.server_tool_use is not None and message.usage.server_tool_use.web_search_requests == 1
    )
    assert _upstream_search(up, model)
    dropped = raw.headers.get("x-unigate-dropped-fields")
    # Relayed as is to Anthropic; elsewhere `max_uses` has no equivalent and is named.
    assert dropped == (None if model == "claude-chat" else "tools.web_search_20250305.max_uses")


@pytest.mark.parametrize("model", MODELS)
def test_anthropic_web_search_stream(up: Clients, model: str) -> None:
    with up.messages.messages.stream(
        model=model, max_tokens=300, messages=[{"role": "user", "content": QUESTION}], tools=[SEARCH_TOOL]
    ) as stream:
        message = stream.get_final_message()
    if model == "claude-chat":  # relayed: Anthropic's own blocks, the cited text is its own block
        assert [b.type for b in message.content][:2] == ["server_tool_use", "web_search_tool_result"]
        return
    kinds = [block.type for block in message.content]
    # The search blocks stand where the upstream reported the search: before the text, or
    # after the text it grounded (Gemini), or at the end (an OpenAI search model only cites).
    at = kinds.index("server_tool_use")
    assert kinds[at + 1] == "web_search_tool_result" and "text" in kinds
    page, cited = CITED[model]
    text = "".join(b.text for b in message.content if b.type == "text")
    citations = [c for b in message.content if b.type == "text" for c in b.citations or []]
    assert any(c.url == page and c.cited_text.startswith(cited) for c in citations) and cited in text


# ---------------------------------------------------------------- Gemini clients

GOOGLE_SEARCH = types.GenerateContentConfig(tools=[types.Tool(google_search=types.GoogleSearch())])


def _check_grounding(text: str, meta: types.GroundingMetadata | None, model: str) -> None:
    assert meta is not None and meta.grounding_chunks and meta.grounding_supports
    page, cited = CITED[model]
    uris = [c.web.uri for c in meta.grounding_chunks if c.web]
    assert page in uris
    if QUERIES[model]:
        assert meta.web_search_queries == [QUERIES[model]]
    spans = []
    for support in meta.grounding_supports:
        assert support.segment is not None
        start, end = support.segment.start_index or 0, support.segment.end_index or 0
        spans.append(text.encode()[start:end].decode())  # Gemini counts bytes
        assert support.segment.text == spans[-1]
    assert any(span.startswith(cited) for span in spans)


@pytest.mark.parametrize("model", MODELS)
def test_gemini_google_search(up: Clients, model: str) -> None:
    response = up.genai.models.generate_content(model=model, contents=QUESTION, config=GOOGLE_SEARCH)
    assert response.candidates and response.text
    _check_grounding(response.text, response.candidates[0].grounding_metadata, model)
    assert _upstream_search(up, model)


@pytest.mark.parametrize("model", MODELS)
def test_gemini_google_search_stream(up: Clients, model: str) -> None:
    chunks = list(
        up.genai.models.generate_content_stream(model=model, contents=QUESTION, config=GOOGLE_SEARCH)
    )
    text = "".join(chunk.text or "" for chunk in chunks)
    grounded = [
        c.candidates[0].grounding_metadata
        for c in chunks
        if c.candidates and c.candidates[0].grounding_metadata
    ]
    assert len(grounded) == 1
    _check_grounding(text, grounded[0], model)


def test_the_readme_example(up: Clients) -> None:
    [block] = re.findall(r"```python\n(.*?)```", section("Hosted web search"), re.S)
    code = block.replace("http://127.0.0.1:8000", up.base_url).replace('"ugk_..."', repr(up.key))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/text.md", "exec"), {})
    query, blocks, queries = out.getvalue().splitlines()
    assert query == "Tides in Brest https://example.com/search/tides-brest/1"
    assert blocks == "['server_tool_use', 'web_search_tool_result', 'text']"
    assert queries == "['Tides in Brest']"
