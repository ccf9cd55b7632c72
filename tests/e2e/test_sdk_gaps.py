"""The `anthropic` and `google-genai` SDK calls beyond generation, against the real gateway:
Gemini embeddings and model listing, Anthropic token counting and model listing, error shapes
and `Allow` on unknown paths and wrong methods, and the README's two SDK snippets run as written."""

from __future__ import annotations

import contextlib
import io
import re
from typing import Any

import anthropic
import pytest
from google import genai
from google.genai import errors, types

from tests.support.net import HTTPResult, http
from tests.support.readme import section
from tests.support.served import ServedGateway


@pytest.fixture(scope="module")
def key(sandbox_gateway: ServedGateway) -> str:
    return sandbox_gateway.create_key()


def _genai(gw: ServedGateway, key: str, version: str | None = None) -> genai.Client:
    # google-genai's default API version is v1; Google's own docs use v1beta. Both are served.
    options = types.HttpOptions(base_url=gw.base_url, api_version=version)
    return genai.Client(api_key=key, http_options=options)


def _anthropic(gw: ServedGateway, key: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=gw.base_url, api_key=key, max_retries=0)


def _post(gw: ServedGateway, path: str, body: dict[str, Any], key: str) -> HTTPResult:
    return http("POST", gw.base_url + path, body, {"x-goog-api-key": key})


# --- google-genai: embeddings ---------------------------------------------------------------


def test_embed_content_batch_matches_openai_embeddings(sandbox_gateway: ServedGateway, key: str) -> None:
    client = _genai(sandbox_gateway, key)
    result = client.models.embed_content(
        model="sandbox-embedding",
        contents=["the cat sat on the mat", "stock markets fell"],  # type: ignore[arg-type]
        config=types.EmbedContentConfig(output_dimensionality=32, task_type="RETRIEVAL_DOCUMENT"),
    )
    assert result.embeddings is not None and len(result.embeddings) == 2
    values = [e.values for e in result.embeddings]
    assert all(v is not None and len(v) == 32 for v in values)
    openai_form = http(
        "POST",
        sandbox_gateway.base_url + "/v1/embeddings",
        {
            "model": "sandbox-embedding",
            "input": ["the cat sat on the mat", "stock markets fell"],
            "dimensions": 32,
        },
        {"Authorization": f"Bearer {key}"},
    ).json()
    assert values == [d["embedding"] for d in openai_form["data"]]  # same vectors, same order


@pytest.mark.parametrize("version", ["v1beta", "v1"])
def test_embed_content_single_in_gemini_shape(sandbox_gateway: ServedGateway, key: str, version: str) -> None:
    res = _post(
        sandbox_gateway,
        f"/{version}/models/sandbox-embedding:embedContent",
        {"content": {"parts": [{"text": "hello"}, {"text": "world"}]}, "outputDimensionality": 16},
        key,
    )
    assert res.status == 200, res.body
    assert list(res.json()) == ["embedding"] and len(res.json()["embedding"]["values"]) == 16


def test_embed_errors_in_google_shape(sandbox_gateway: ServedGateway, key: str) -> None:
    mixed = {
        "requests": [
            {"content": {"parts": [{"text": "a"}]}, "outputDimensionality": 8},
            {"content": {"parts": [{"text": "b"}]}, "outputDimensionality": 16},
        ]
    }
    res = _post(sandbox_gateway, "/v1beta/models/sandbox-embedding:batchEmbedContents", mixed, key)
    assert res.status == 400 and res.json()["error"]["status"] == "INVALID_ARGUMENT"
    image = {"content": {"parts": [{"inlineData": {"mimeType": "image/png", "data": "AAAA"}}]}}
    res = _post(sandbox_gateway, "/v1beta/models/sandbox-embedding:embedContent", image, key)
    assert res.status == 400 and "only text parts" in res.json()["error"]["message"]
    client = _genai(sandbox_gateway, key)  # held: a collected Client closes its connection pool
    with pytest.raises(errors.ClientError) as missing:
        client.models.embed_content(model="no-such-model", contents="x")
    assert missing.value.code == 404 and missing.value.status == "NOT_FOUND"


# --- google-genai: models ---------------------------------------------------------------------


@pytest.mark.parametrize("version", ["v1beta", None])
def test_models_list_pages_and_get(sandbox_gateway: ServedGateway, key: str, version: str | None) -> None:
    client = _genai(sandbox_gateway, key, version)
    openai_ids = [
        m["id"]
        for m in http(
            "GET", sandbox_gateway.base_url + "/v1/models", headers={"Authorization": f"Bearer {key}"}
        ).json()["data"]
    ]
    pager = client.models.list(config={"page_size": 3})
    assert len(pager.page) == 3
    listed = list(pager)  # follows nextPageToken to the end
    assert [m.name for m in listed] == [f"models/{i}" for i in openai_ids]
    chat = client.models.get(model="sandbox-chat")
    assert chat.name == "models/sandbox-chat" and chat.display_name == "sandbox-chat"
    assert chat.supported_actions and "generateContent" in chat.supported_actions
    assert client.models.get(model="models/sandbox-embedding").name == "models/sandbox-embedding"


@pytest.mark.parametrize("version", ["v1beta", None])
def test_models_only_those_the_key_may_use(sandbox_gateway: ServedGateway, version: str | None) -> None:
    client = _genai(sandbox_gateway, sandbox_gateway.create_key(models=["sandbox-emb*"]), version)
    assert [m.name for m in client.models.list()] == ["models/sandbox-embedding"]
    with pytest.raises(errors.ClientError) as hidden:
        client.models.get(model="sandbox-chat")
    assert hidden.value.code == 404 and hidden.value.status == "NOT_FOUND"


# --- unknown paths and wrong methods ----------------------------------------------------------


def test_unknown_and_wrong_method_under_v1beta_in_google_shape(
    sandbox_gateway: ServedGateway, key: str
) -> None:
    base, headers = sandbox_gateway.base_url, {"x-goog-api-key": key}
    unknown = http("GET", base + "/v1beta/nothing/here", headers=headers)
    assert unknown.status == 404 and unknown.json()["error"]["status"] == "NOT_FOUND"
    for method, path in [
        ("DELETE", "/v1beta/models/sandbox-chat:generateContent"),
        ("GET", "/v1beta/models/sandbox-chat:generateContent"),
        ("GET", "/v1beta/models/sandbox-embedding:batchEmbedContents"),
    ]:
        res = http(method, base + path, headers=headers)
        assert res.status == 405, (method, path)
        assert res.headers["allow"] == "POST"
        assert res.json()["error"] == {"code": 405, "message": "Method not allowed.", "status": "INTERNAL"}
    wrong = http("POST", base + "/v1beta/models", {}, headers)
    assert wrong.status == 405 and wrong.headers["allow"] == "GET" and "error" in wrong.json()


def test_every_405_lists_the_path_methods(sandbox_gateway: ServedGateway) -> None:
    base = sandbox_gateway.base_url
    cases = {
        "/v1/chat/completions": ("GET", "POST"),
        "/v1/videos": ("PUT", "GET, POST"),
        "/v1/videos/video_123": ("POST", "DELETE, GET"),
        "/suno/submit/music": ("GET", "POST"),
        "/v1/messages/count_tokens": ("GET", "POST"),
    }
    for path, (method, allow) in cases.items():
        res = http(method, base + path)
        assert res.status == 405 and res.headers["allow"] == allow, (path, res.status, res.headers)
    assert "allow" not in http("GET", base + "/no/such/path").headers


# --- anthropic --------------------------------------------------------------------------------

TOOL = {
    "name": "get_weather",
    "description": "Weather in a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


def test_count_tokens_equals_the_sandbox_usage(sandbox_gateway: ServedGateway, key: str) -> None:
    client = _anthropic(sandbox_gateway, key)
    request: dict[str, Any] = {
        "model": "sandbox-chat",
        "system": "Be brief.",
        "tools": [TOOL],
        "tool_choice": {"type": "none"},
        "messages": [{"role": "user", "content": "Tell me about the weather in Paris and lighthouses"}],
    }
    counted = client.messages.count_tokens(**request)
    sent = client.messages.create(max_tokens=50, **request)
    assert counted.input_tokens > 0 and counted.input_tokens == sent.usage.input_tokens
    shorter = client.messages.count_tokens(model="sandbox-chat", messages=[{"role": "user", "content": "Hi"}])
    assert 0 < shorter.input_tokens < counted.input_tokens


def test_count_tokens_errors_in_anthropic_shape(sandbox_gateway: ServedGateway) -> None:
    client = _anthropic(sandbox_gateway, sandbox_gateway.create_key(models=["sandbox-chat"]))
    with pytest.raises(anthropic.NotFoundError) as unknown:
        client.messages.count_tokens(model="no-such-model", messages=[{"role": "user", "content": "x"}])
    assert unknown.value.body["error"]["type"] == "not_found_error"  # type: ignore[index]
    with pytest.raises(anthropic.PermissionDeniedError):
        client.messages.count_tokens(model="sandbox-embedding", messages=[{"role": "user", "content": "x"}])


def test_anthropic_models_list_and_retrieve(sandbox_gateway: ServedGateway, key: str) -> None:
    client = _anthropic(sandbox_gateway, key)
    first = client.models.list(limit=2)
    assert len(first.data) == 2 and first.has_more and first.last_id == first.data[-1].id
    everything = [m.id for m in client.models.list(limit=2)]  # follows after_id to the end
    openai_shape = http(
        "GET", sandbox_gateway.base_url + "/v1/models", headers={"Authorization": f"Bearer {key}"}
    ).json()
    assert openai_shape["object"] == "list"  # OpenAI clients (no anthropic-version) keep theirs
    assert everything == [m["id"] for m in openai_shape["data"]]
    before = client.models.list(before_id=everything[3], limit=2)
    assert [m.id for m in before.data] == everything[1:3]
    model = client.models.retrieve("sandbox-chat")
    assert model.type == "model" and model.id == "sandbox-chat" and model.display_name == "sandbox-chat"
    assert model.created_at.year == 1970
    with pytest.raises(anthropic.NotFoundError) as missing:
        client.models.retrieve("no-such-model")
    assert missing.value.body["type"] == "error"  # type: ignore[index]


def test_anthropic_models_only_those_the_key_may_use(sandbox_gateway: ServedGateway) -> None:
    client = _anthropic(sandbox_gateway, sandbox_gateway.create_key(models=["sandbox-c*"]))
    assert [m.id for m in client.models.list()] == ["sandbox-chat"]
    with pytest.raises(anthropic.NotFoundError):
        client.models.retrieve("sandbox-embedding")


# --- the README's snippets, run as written ----------------------------------------------------


def _readme_snippet(heading: str) -> str:
    found = re.search(r"```python\n(.*?)```", section(heading), re.S)
    assert found, heading
    return found.group(1)


def _run(snippet: str, gw: ServedGateway, key: str) -> str:
    code = snippet.replace("http://127.0.0.1:8000", gw.base_url).replace('"ugk_..."', repr(key))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/text.md", "exec"), {})
    return out.getvalue()


def test_readme_anthropic_snippet(sandbox_gateway: ServedGateway, key: str) -> None:
    lines = _run(_readme_snippet("Anthropic SDK"), sandbox_gateway, key).splitlines()
    assert lines[0] and lines[1]  # the reply, then the streamed text
    assert int(lines[2]) > 0  # the token count
    assert "sandbox-chat sandbox-chat" in lines[3:]


def test_readme_genai_snippet(sandbox_gateway: ServedGateway, key: str) -> None:
    lines = _run(_readme_snippet("google-genai"), sandbox_gateway, key).splitlines()
    assert lines[0] and lines[1]
    assert lines[2] == "[64, 64]"
    assert any(line.startswith("models/sandbox-chat ") and "generateContent" in line for line in lines)
    assert lines[-1] == "sandbox-chat"
