"""Request shapes are declared once (`unigate.shapes`): every routed operation that takes a body
documents it from the declaration its router checks with, the document's examples pass that
check, and a refusal names the field in the family's words."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from tests.support.fake_anthropic import FakeAnthropic
from tests.support.fake_openai import FakeOpenAI
from tests.support.in_process import InProcessGateway
from tests.support.video import sandbox_config
from unigate.app import GatewayApp, create_app
from unigate.edge.multipart import Form
from unigate.errors import InvalidRequest
from unigate.openapi.builder import build, declared_components, operations
from unigate.openapi.schema import JSON, Declared
from unigate.settings import Settings
from unigate.shapes.declare import components
from unigate.shapes.stability import GENERATE as STABILITY
from unigate.shapes.text import CHAT, COMPLETION, EMBEDDING, MODERATION
from unigate.translate.responses_request import parse_request
from unigate.video.validate import from_kling, from_unified

TAKES_A_BODY = ("POST", "PUT", "PATCH")
# Operations whose method could carry a body but whose endpoint reads none.
BODYLESS = {
    ("POST", "/v1/responses/{response_id}/cancel"),
    ("POST", "/v1/batches/{batch_id}/cancel"),
    ("POST", "/v1/messages/batches/{batch_id}/cancel"),
    ("POST", "/admin/reload"),
    ("POST", "/admin/providers/check"),
}
# Bodies still described by hand beside their own checks; the list may only shrink (an entry
# that became declared fails the test below). The Gemini API takes each field in camelCase or
# snake_case (one declared name per field cannot say both) and its translator checks what it
# reads; the admin API's key bodies are pydantic models (api/admin/key_spec.py, shared with
# `unigate keys`) documented by hand in openapi/keys.py.
PENDING = {
    ("POST", "/v1beta/models/{model}:embedContent"),
    ("POST", "/v1beta/models/{model}:batchEmbedContents"),
    ("POST", "/v1/models/{model}:embedContent"),
    ("POST", "/v1/models/{model}:batchEmbedContents"),
    ("POST", "/v1beta/models/{model}:generateContent"),
    ("POST", "/v1beta/models/{model}:streamGenerateContent"),
    ("POST", "/v1beta/models/{model}:countTokens"),
    ("POST", "/v1/models/{model}:generateContent"),
    ("POST", "/v1/models/{model}:streamGenerateContent"),
    ("POST", "/v1/models/{model}:countTokens"),
    ("POST", "/admin/keys"),
    ("PATCH", "/admin/keys/{key_id}"),
}


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayApp]:
    yield create_app(Settings.from_env({"UNIGATE_DATA_DIR": str(tmp_path_factory.mktemp("shapes"))}))


def test_every_routed_body_is_declared(app: GatewayApp) -> None:
    documented = operations()
    undeclared, stale = [], []
    for ep in app.table.endpoints():
        key = (ep.method, ep.path)
        if ep.method not in TAKES_A_BODY or key in BODYLESS:
            continue
        declared = isinstance(documented[key].request, Declared)
        if not declared and key not in PENDING:
            undeclared.append(f"{ep.method} {ep.path}")
        if declared and key in PENDING:
            stale.append(f"{ep.method} {ep.path}")
    assert undeclared == [], "declare the body in src/unigate/shapes/, document it with declared_json/_form"
    assert stale == [], "declared now: remove from PENDING"
    for key in BODYLESS:
        assert documented[key].request is None, key


def test_document_bodies_are_the_declarations(app: GatewayApp) -> None:
    document = orjson.loads(orjson.dumps(build(app.table.endpoints())))
    generated = declared_components()
    schemas = document["components"]["schemas"]
    for name, schema in generated.items():
        assert schemas[name] == orjson.loads(orjson.dumps(schema)), name
    for (method, path), op in operations().items():
        if isinstance(op.request, Declared):
            body = document["paths"][path][method.lower()]["requestBody"]
            for media, shape in op.request.content.items():
                assert body["content"][media]["schema"] == {"$ref": f"#/components/schemas/{shape.name}"}


def test_declarations_described_without_docstrings_too() -> None:
    """`unigate serve` runs its workers under `python -OO`, which drops docstrings: the schemas'
    descriptions (each declaration's docstring) are then read from the source, the same."""
    code = (
        "import orjson; from unigate.openapi.builder import declared_components as d;"
        " print(orjson.dumps(d()).decode())"
    )
    out = subprocess.run([sys.executable, "-OO", "-c", code], capture_output=True, text=True, check=True)
    declared = orjson.loads(orjson.dumps(declared_components()))
    described = [name for name, schema in declared.items() if "description" in schema]
    assert len(described) >= 14
    assert orjson.loads(out.stdout) == declared


def test_document_examples_pass_the_router_check() -> None:
    checked = 0
    for op in operations().values():
        if isinstance(op.request, Declared):
            for media, example in op.request.examples.items():
                shape = op.request.content[media]
                if media == JSON:
                    shape.check(example)
                    checked += 1
    assert checked >= 4


def _refused(shape: Any, body: dict[str, Any]) -> InvalidRequest:
    with pytest.raises(InvalidRequest) as caught:
        shape.check(body)
    return caught.value


MSG = [{"role": "user", "content": "hi"}]
Json = dict[str, Any]


@pytest.mark.parametrize(
    ("shape", "body", "param", "code", "words"),
    [
        (CHAT, {"messages": MSG}, "model", "missing_required_parameter", "Missing required parameter"),
        (CHAT, {"model": "", "messages": MSG}, "model", "missing_required_parameter", "'model'"),
        (CHAT, {"model": 42, "messages": []}, "model", "invalid_type", "expected a non-empty string"),
        (CHAT, {"model": "m", "messages": []}, "messages", "invalid_value", "a non-empty array"),
        (CHAT, {"model": "m", "messages": [{"role": "wiz"}]}, "messages[0].role", "invalid_value", "system"),
        (CHAT, {"model": "m", "messages": [{"role": "user", "content": 5}]}, "messages[0].content",
         "invalid_type", "a string or an array of content parts"),
        (CHAT, {"model": "m", "messages": MSG, "max_tokens": 0}, "max_tokens", "invalid_value",
         "an integer of at least 1"),
        (CHAT, {"model": "m", "messages": MSG, "tools": ["x"]}, "tools[0]", "invalid_type", "an object"),
        (CHAT, {"model": "m", "messages": MSG, "stream_options": {"include_usage": "yes"}},
         "stream_options.include_usage", "invalid_type", "a boolean"),
        (COMPLETION, {"model": "m", "prompt": None}, "prompt", "missing_required_parameter", "'prompt'"),
        (EMBEDDING, {"model": "m", "input": "x", "encoding_format": "hex"}, "encoding_format",
         "invalid_value", "one of base64, float"),
        (MODERATION, {"input": [{"type": "audio"}]}, "input[0].type", "invalid_value", "image_url, text"),
        (MODERATION, {"input": ["ok", {"type": "text", "text": "x"}]}, "input[0]", "invalid_type", "part"),
    ],
)  # fmt: skip
def test_refusals_name_the_field(shape: Any, body: dict[str, Any], param: str, code: str, words: str) -> None:
    error = _refused(shape, body)
    assert (error.param, error.code) == (param, code)
    assert words in error.message


def test_max_tokens_bound_is_checked_where_documented() -> None:
    """The document always said `max_tokens` >= 1; the router now refuses 0 itself."""
    schema = components([CHAT])["ChatCompletionRequest"]["properties"]["max_tokens"]
    assert {"type": "integer", "minimum": 1} in schema["anyOf"]
    assert _refused(CHAT, {"model": "m", "messages": MSG, "max_tokens": 0}).param == "max_tokens"
    assert CHAT.check({"model": "m", "messages": MSG, "max_tokens": 1}).max_tokens == 1


def test_unknown_fields_are_relayed_untouched() -> None:
    payload = {"model": "m", "messages": MSG, "logit_bias": {"1": 2}, "seed": 3}
    before = orjson.dumps(payload)
    assert CHAT.check(payload).model == "m"
    assert orjson.dumps(payload) == before


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture(scope="module")
def relay(tmp_path_factory: pytest.TempPathFactory, upstream: FakeOpenAI) -> Iterator[InProcessGateway]:
    config = sandbox_config(
        # pragma: allowlist nextline secret
        providers=[{"name": "up", "protocol": "openai", "base_url": upstream.base_url, "api_key": "sk-up"}],
        models=[{"name": "relayed-chat", "routes": [{"provider": "up", "model": "gpt-4o-mini"}]}],
    )
    with InProcessGateway(tmp_path_factory.mktemp("shapes_relay"), config) as gateway:
        yield gateway


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        ({"max_tokens": 0}, "max_tokens"),  # documented minimum 1, relayed before
        ({"tools": ["x"]}, "tools[0]"),  # documented as objects, relayed before
        ({"stop": {"a": 1}}, "stop"),  # documented string or strings, relayed before
        ({"response_format": "json"}, "response_format"),  # documented object, relayed before
    ],
)
def test_what_the_document_refuses_never_reaches_the_upstream(
    relay: InProcessGateway, upstream: FakeOpenAI, extra: dict[str, Any], param: str
) -> None:
    key = relay.create_key()
    before = len(upstream.received)
    body = {"model": "relayed-chat", "messages": MSG, **extra}
    res = relay.request("POST", "/v1/chat/completions", key, json=body)
    assert res.status_code == 400, res.text
    assert res.json()["error"]["param"] == param
    assert len(upstream.received) == before
    ok = relay.request("POST", "/v1/chat/completions", key, json={"model": "relayed-chat", "messages": MSG})
    assert ok.status_code == 200 and len(upstream.received) == before + 1


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"n": "2"}, "n"),  # documented as an integer, read from its text before
        ({"output_compression": "80"}, "output_compression"),
        ({"response_format": 5}, "response_format"),
    ],
)
def test_image_json_fields_are_typed_as_documented(relay: InProcessGateway, body: Json, param: str) -> None:
    key = relay.create_key()
    full = {"model": "sandbox-image", "prompt": "a lighthouse", "size": "256x256", **body}
    res = relay.request("POST", "/v1/images/generations", key, json=full)
    assert res.status_code == 400, res.text
    assert res.json()["error"]["param"] == param


def test_speech_json_numbers_are_typed_as_documented(relay: InProcessGateway) -> None:
    key = relay.create_key()
    body = {"model": "sandbox-tts", "input": "hello", "voice": "alloy", "response_format": "wav"}
    assert relay.request("POST", "/v1/audio/speech", key, json=body).status_code == 200
    res = relay.request("POST", "/v1/audio/speech", key, json={**body, "speed": "2"})  # read as 2.0 before
    assert res.status_code == 400 and res.json()["error"]["param"] == "speed", res.text


def test_a_form_field_sent_as_text_where_a_file_is_declared_is_refused(relay: InProcessGateway) -> None:
    key = relay.create_key()
    form = {"model": (None, "sandbox-transcribe"), "file": (None, "x")}
    res = relay.request("POST", "/v1/audio/transcriptions", key, files=form)
    assert res.status_code == 400, res.text
    assert res.json()["error"] | {"message": ""} == {
        "message": "", "type": "invalid_request_error", "param": "file", "code": "invalid_type"
    }  # fmt: skip


def test_responses_format_flags_are_typed_before_they_are_relayed() -> None:
    fmt = {"type": "json_schema", "name": "answer", "schema": {"type": "object"}}
    ok = parse_request({"model": "m", "input": "x", "text": {"format": {**fmt, "strict": True}}})
    assert ok.chat["response_format"]["json_schema"]["strict"] is True
    with pytest.raises(InvalidRequest) as caught:  # copied into the chat request unchecked before
        parse_request({"model": "m", "input": "x", "text": {"format": {**fmt, "strict": "yes"}}})
    assert caught.value.param == "text.format.strict"


def test_music_upload_fields_are_typed_not_ignored(relay: InProcessGateway) -> None:
    key = relay.create_key()
    body = {"url": "https://example.com/take.wav", "title": 5}  # ignored before, the audio fetched
    res = relay.request("POST", "/suno/upload/audio", key, json=body)
    assert res.status_code == 400, res.text
    assert res.json()["code"] == "invalid_request" and "'title'" in res.json()["message"]


def test_video_numbers_are_typed_as_documented() -> None:
    assert from_unified({"model": "m", "prompt": "p", "duration": 3}).fields["seconds"] == 3
    for body, param in (
        ({"model": "m", "prompt": "p", "duration": "3"}, "duration"),  # read from its text before
        ({"model": "m", "prompt": "p", "width": "640", "height": 360}, "width"),
    ):
        with pytest.raises(InvalidRequest) as caught:
            from_unified(body)
        assert caught.value.param == param
    with pytest.raises(InvalidRequest) as caught:
        from_kling({"prompt": "p", "cfg_scale": "0.5"}, "text2video")
    assert caught.value.param == "cfg_scale"


def test_vidu_numbers_are_typed_as_documented(relay: InProcessGateway) -> None:
    key = relay.create_key()
    body = {"model": "audio1.0", "prompt": "rain on a tin roof", "duration": "5"}  # read as 5.0 before
    res = relay.request("POST", "/ent/v2/text2audio", key, json=body)
    assert res.status_code == 400 and "'duration'" in res.json()["message"], res.text
    assert res.json()["reason"] == "BadRequest"


def test_fish_tts_fields_are_typed_as_documented(relay: InProcessGateway) -> None:
    key = relay.create_key()
    body = {"text": "hello", "format": "wav"}
    assert relay.request("POST", "/fish/v1/tts", key, json=body).status_code == 200
    for extra in ({"normalize": "true"}, {"sample_rate": "16000"}):  # both read from their text before
        res = relay.request("POST", "/fish/v1/tts", key, json={**body, **extra})
        assert res.status_code == 400 and res.json()["status"] == 400, res.text
        assert f"'{next(iter(extra))}'" in res.json()["message"]


def _form(**fields: str) -> Form:
    return Form(fields={k: [v] for k, v in fields.items()}, parts=list(fields.items()))


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"strength": "null"}, "strength"),  # no null spelling in a form
        ({"seed": "2.0"}, "seed"),
        ({"seed": "\u00b2"}, "seed"),  # a digit to str.isdigit(), not ASCII
        ({"strength": "nan"}, "strength"),
    ],
)
def test_form_text_is_read_only_in_its_spellings(fields: dict[str, str], param: str) -> None:
    with pytest.raises(InvalidRequest) as caught:
        STABILITY.check_form(_form(prompt="a fox", **fields))
    assert caught.value.param == param
    sent = STABILITY.check_form(_form(prompt="a fox", seed="7", strength="0.5", aspect_ratio=""))
    assert (sent.seed, sent.strength, sent.aspect_ratio) == (7, 0.5, None)


def test_an_empty_optional_form_field_is_documented_as_the_default() -> None:
    schema = declared_components()["StabilityRequest"]
    assert schema["properties"]["strength"]["anyOf"][1] == {"const": ""}
    assert "prompt" in schema["required"] and "anyOf" not in schema["properties"]["prompt"]


@pytest.fixture(scope="module")
def claude() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as fake:
        yield fake


def test_anthropic_max_tokens_bound_is_checked_where_documented(
    tmp_path_factory: pytest.TempPathFactory, claude: FakeAnthropic
) -> None:
    """The document always said max_tokens >= 1; a same-format relay forwarded 0 anyway."""
    config = sandbox_config(
        # pragma: allowlist nextline secret
        providers=[
            {"name": "claude", "protocol": "anthropic", "base_url": claude.base_url, "api_key": "sk-a"}
        ],
        models=[{"name": "relayed-claude", "routes": [{"provider": "claude", "model": "claude-x"}]}],
    )
    with InProcessGateway(tmp_path_factory.mktemp("shapes_claude"), config) as gw:
        key = gw.create_key()
        body = {"model": "relayed-claude", "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}]}
        assert gw.request("POST", "/v1/messages", key, json=body).status_code == 200
        before = len(claude.received)
        res = gw.request("POST", "/v1/messages", key, json={**body, "max_tokens": 0})
        assert res.status_code == 400, res.text
        assert res.json()["error"]["type"] == "invalid_request_error"
        assert "max_tokens" in res.json()["error"]["message"] and len(claude.received) == before
