"""`:generateContent` / `:streamGenerateContent` with the real `google-genai` SDK against the
real gateway, through the sandbox and through a fake OpenAI-compatible upstream."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from google import genai
from google.genai import errors, types

from tests.support.fake_openai import FakeOpenAI
from tests.support.served import ServedGateway

WEATHER = types.Tool(
    function_declarations=[
        types.FunctionDeclaration(
            name="get_weather",
            description="Weather in a city",
            parameters=types.Schema(
                type=types.Type.OBJECT,
                properties={"city": types.Schema(type=types.Type.STRING)},
                required=["city"],
            ),
        )
    ]
)


@dataclass
class Case:
    client: genai.Client
    model: str
    fake: FakeOpenAI | None
    base_url: str


def _client(gw: ServedGateway, key: str) -> genai.Client:
    return genai.Client(api_key=key, http_options=types.HttpOptions(base_url=gw.base_url))


@pytest.fixture(scope="module", params=["sandbox", "openai-upstream"])
def case(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Case]:
    workdir = Path(tmp_path_factory.mktemp(request.param))
    if request.param == "sandbox":
        with ServedGateway(workdir) as gw:
            key = gw.create_key()
            # Closed with its case: left to the collector, its socket was a ResourceWarning in
            # the next case's setup.
            with _client(gw, key) as client:
                yield Case(client, "sandbox-chat", None, gw.base_url)
        return
    with FakeOpenAI() as fake:
        config = {
            "providers": [
                {"name": "oa", "protocol": "openai", "base_url": fake.base_url, "api_key": "sk-up"}
            ],
            "models": [{"name": "gemini-like", "routes": [{"provider": "oa", "model": "gpt-up"}]}],
        }
        with ServedGateway(workdir, config=config) as gw:
            key = gw.create_key()
            with _client(gw, key) as client:
                yield Case(client, "gemini-like", fake, gw.base_url)


def test_generate_content(case: Case) -> None:
    resp = case.client.models.generate_content(
        model=case.model,
        contents="Tell me about volcanoes",
        config=types.GenerateContentConfig(system_instruction="Be brief.", max_output_tokens=80),
    )
    assert resp.text
    assert resp.candidates and resp.candidates[0].finish_reason == types.FinishReason.STOP
    assert resp.usage_metadata and (resp.usage_metadata.prompt_token_count or 0) > 0
    if case.fake is None:
        assert "volcanoes" in resp.text.lower()
    else:
        sent = case.fake.received[-1].body
        assert sent["model"] == "gpt-up" and sent["messages"][0] == {"role": "system", "content": "Be brief."}
        assert resp.text == "Hello from the fake upstream"


def test_stream_generate_content(case: Case) -> None:
    chunks = list(
        case.client.models.generate_content_stream(model=case.model, contents="Stream about oceans")
    )
    text = "".join(c.text or "" for c in chunks)
    assert len(chunks) >= 2 and text.strip()
    last = chunks[-1]
    assert last.candidates and last.candidates[0].finish_reason == types.FinishReason.STOP
    assert last.usage_metadata and (last.usage_metadata.candidates_token_count or 0) > 0


def test_function_call_round_trip(case: Case) -> None:
    config = types.GenerateContentConfig(tools=[WEATHER])
    first = case.client.models.generate_content(model=case.model, contents="Weather in Paris?", config=config)
    calls = first.function_calls or []
    assert calls and calls[0].name == "get_weather" and isinstance((calls[0].args or {}).get("city"), str)
    contents = [
        types.Content(role="user", parts=[types.Part(text="Weather in Paris?")]),
        first.candidates[0].content,  # type: ignore[index]
        types.Content(
            role="user",
            parts=[types.Part.from_function_response(name="get_weather", response={"temp_c": 24})],
        ),
    ]
    second = case.client.models.generate_content(model=case.model, contents=contents, config=config)
    assert "24" in (second.text or "")


def test_what_a_translated_route_drops_is_named(case: Case) -> None:
    # Gemini CLI's turns carry topK and a thinkingConfig; chat completions have neither.
    config = types.GenerateContentConfig(
        top_k=40,
        temperature=0.5,
        thinking_config=types.ThinkingConfig(include_thoughts=True),
        safety_settings=[
            types.SafetySetting(
                category=types.HarmCategory.HARM_CATEGORY_HARASSMENT,
                threshold=types.HarmBlockThreshold.BLOCK_ONLY_HIGH,
            )
        ],
        max_output_tokens=50,
    )
    resp = case.client.models.generate_content(model=case.model, contents="Hello there", config=config)
    assert resp.text and resp.sdk_http_response and resp.sdk_http_response.headers
    dropped = resp.sdk_http_response.headers["x-unigate-dropped-fields"].split(", ")
    named = ["generationConfig.thinkingConfig", "generationConfig.topK", "safetySettings"]
    # The sandbox ignores sampling too; an OpenAI-compatible upstream takes the temperature.
    if case.fake is None:
        assert dropped == sorted([*named, "generationConfig.temperature"]), dropped
    else:
        assert dropped == named, dropped
        assert case.fake.received[-1].body["temperature"] == 0.5


def test_errors_in_google_shape(case: Case) -> None:
    with pytest.raises(errors.ClientError) as unknown:
        case.client.models.generate_content(model="no-such-model", contents="x")
    assert unknown.value.code == 404 and unknown.value.status == "NOT_FOUND"
    bad = genai.Client(api_key="ugk_wrong", http_options=types.HttpOptions(base_url=case.base_url))
    with pytest.raises(errors.ClientError) as denied:
        bad.models.generate_content(model=case.model, contents="x")
    assert denied.value.code == 401 and denied.value.status == "UNAUTHENTICATED"


@pytest.mark.parametrize("case", ["openai-upstream"], indirect=True)  # only an upstream can die
def test_upstream_death_mid_stream_is_an_error_chunk(case: Case) -> None:
    assert case.fake is not None
    case.fake.mode = "die_mid"
    try:
        with pytest.raises(errors.APIError):
            for _ in case.client.models.generate_content_stream(model=case.model, contents="Stream"):
                pass
    finally:
        case.fake.mode = "ok"
