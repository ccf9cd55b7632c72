"""`POST /v1/moderations`, in process: the sandbox's offline classifier (OpenAI's categories,
scores and applied input types; strings, string arrays and text/image parts; omni and legacy
text models), the router's 400s, a relay to an OpenAI upstream, and the text family's keys,
limits and usage accounting; the openai SDK's `moderations.create` reads every answer."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from tests.support.fake_openai import FakeOpenAI
from tests.support.fake_openai_media import FakeOpenAIMedia
from tests.support.in_process import BASE_URL, InProcessGateway
from tests.support.media_fixtures import make_image
from tests.support.video import sandbox_config
from unigate_sandbox.moderation import CATEGORIES

Json = dict[str, Any]


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture(scope="module")
def media() -> Iterator[FakeOpenAIMedia]:
    with FakeOpenAIMedia() as fake:
        yield fake


@pytest.fixture(scope="module")
def gw(
    tmp_path_factory: pytest.TempPathFactory, upstream: FakeOpenAI, media: FakeOpenAIMedia
) -> Iterator[InProcessGateway]:
    config = sandbox_config(
        # pragma: allowlist nextline secret
        providers=[{"name": "up", "protocol": "openai", "base_url": upstream.base_url, "api_key": "sk-up"}],
        models=[
            {
                "name": "relayed-moderation",
                "routes": [{"provider": "up", "model": "omni-moderation-2024-09-26"}],
            }
        ],
    )
    config["tasks"] = {"allow_private_webhooks": True}  # the image server below is on 127.0.0.1
    with InProcessGateway(tmp_path_factory.mktemp("moderations"), config) as gateway:
        yield gateway


@pytest.fixture(scope="module")
def key(gw: InProcessGateway) -> str:
    return gw.create_key()


def _moderate(gw: InProcessGateway, key: str, body: Json, status: int = 200) -> Json:
    res = gw.request("POST", "/v1/moderations", key, json=body)
    assert res.status_code == status, res.text
    return dict(res.json())


def _sdk(gw: InProcessGateway, key: str, **kwargs: Any) -> Any:
    client = openai.AsyncOpenAI(
        base_url=BASE_URL + "/v1", api_key=key, http_client=gw.client(), max_retries=0
    )

    async def call() -> Any:
        return await client.moderations.create(**kwargs)

    return gw.run(call())


def _data_url(data: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode()


def test_the_sdk_reads_a_flagged_and_a_harmless_text(gw: InProcessGateway, key: str) -> None:
    flagged = _sdk(gw, key, input="I want to kill them.")
    assert flagged.model == "omni-moderation-latest" and flagged.id.startswith("modr-")
    [result] = flagged.results
    assert result.flagged and result.categories.violence and result.categories.harassment_threatening
    assert not result.categories.sexual and result.category_scores.violence >= 0.5
    assert result.category_applied_input_types.violence == ["text"]
    [calm] = _sdk(gw, key, input="The weather is lovely today.").results
    assert not calm.flagged
    assert all(0 < score < 0.001 for score in calm.category_scores.model_dump(by_alias=True).values())


def test_scores_are_deterministic_and_cover_every_category(gw: InProcessGateway, key: str) -> None:
    texts = ["how to build a bomb", "I want to end my life", "you idiot", "hello"]
    one = _moderate(gw, key, {"input": texts})
    again = _moderate(gw, key, {"input": texts})
    assert [r["category_scores"] for r in one["results"]] == [r["category_scores"] for r in again["results"]]
    assert one["id"] != again["id"]
    flagged = [sorted(c for c, on in r["categories"].items() if on) for r in one["results"]]
    assert flagged == [
        ["illicit", "illicit/violent"],
        ["self-harm", "self-harm/intent"],
        ["harassment"],
        [],
    ]
    for result in one["results"]:
        for part in ("categories", "category_scores", "category_applied_input_types"):
            assert list(result[part]) == list(CATEGORIES)


def test_text_and_image_parts_are_one_result(gw: InProcessGateway, key: str, media: FakeOpenAIMedia) -> None:
    red = _data_url(make_image(64, 64, color=(200, 20, 20)))
    both = _moderate(
        gw,
        key,
        {"input": [{"type": "text", "text": "a picture"}, {"type": "image_url", "image_url": {"url": red}}]},
    )
    [result] = both["results"]
    assert result["categories"]["violence/graphic"] and result["flagged"]
    applied = result["category_applied_input_types"]
    assert applied["violence"] == ["text", "image"] and applied["hate"] == ["text"]
    url = media.serve_file("calm.png", "image/png", make_image(64, 64, color=(40, 120, 200)))
    [calm] = _moderate(gw, key, {"input": [{"type": "image_url", "image_url": {"url": url}}]})["results"]
    assert not calm["flagged"] and "calm.png" in media.file_gets  # fetched through the guard
    assert calm["category_applied_input_types"]["sexual"] == ["image"]
    assert calm["category_applied_input_types"]["harassment"] == []


def test_the_legacy_text_model(gw: InProcessGateway, key: str) -> None:
    answer = _moderate(gw, key, {"model": "text-moderation-latest", "input": "how to shoplift"})
    [result] = answer["results"]
    assert answer["model"] == "text-moderation-latest"
    assert result["categories"]["illicit"] is None and result["category_scores"]["illicit"] == 0.0
    image = {"type": "image_url", "image_url": {"url": _data_url(make_image(64, 64))}}
    refused = _moderate(gw, key, {"model": "text-moderation-latest", "input": [image]}, 400)
    assert "text only" in refused["error"]["message"]


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({}, "input"),
        ({"input": 5}, "input"),
        ({"input": []}, "input"),
        ({"input": ["ok", {"type": "text", "text": "x"}]}, "input[0]"),
        ({"input": [{"type": "audio"}]}, "input[0].type"),
        ({"input": [{"type": "text"}]}, "input[0].text"),
        ({"input": [{"type": "image_url", "image_url": "https://example.com/a.png"}]}, "input[0].image_url"),
        ({"input": "x", "model": 3}, "model"),
        ({"input": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,bm9wZQ=="}}]}, "input"),
    ],
)
def test_bad_input_is_a_400(gw: InProcessGateway, key: str, body: Json, param: str) -> None:
    assert _moderate(gw, key, body, 400)["error"]["param"] == param


def test_a_chat_model_is_refused_and_a_moderation_model_serves_nothing_else(
    gw: InProcessGateway, key: str
) -> None:
    assert (
        _moderate(gw, key, {"model": "sandbox-chat", "input": "x"}, 404)["error"]["code"]
        == "model_not_supported"
    )
    chat = {"model": "omni-moderation-latest", "messages": [{"role": "user", "content": "hi"}]}
    assert gw.request("POST", "/v1/chat/completions", key, json=chat).status_code == 404


def test_relayed_to_an_openai_upstream(gw: InProcessGateway, key: str, upstream: FakeOpenAI) -> None:
    answer = _moderate(gw, key, {"model": "relayed-moderation", "input": ["kill", "calm"]})
    assert [r["flagged"] for r in answer["results"]] == [True, False]
    sent = upstream.received[-1]
    assert sent.path == "/v1/moderations" and sent.body == {
        "model": "omni-moderation-2024-09-26",
        "input": ["kill", "calm"],
    }
    assert sent.headers["authorization"] == "Bearer sk-up"


def test_keys_limits_and_usage_as_for_text_calls(gw: InProcessGateway) -> None:
    images_only = gw.create_key(families=["image"])
    assert _moderate(gw, images_only, {"input": "x"}, 403)["error"]["code"] == "family_not_allowed"
    other_model = gw.create_key(models=["sandbox-chat"])
    assert _moderate(gw, other_model, {"input": "x"}, 403)["error"]["code"] == "model_not_allowed"
    record = gw.create_key_record(rpm=1)
    limited = record["key"]
    _moderate(gw, limited, {"input": "one two three four"})
    assert _moderate(gw, limited, {"input": "again"}, 429)["error"]["code"] == "rate_limit_exceeded"
    usage = gw.request("GET", "/admin/usage", params={"group_by": "key,endpoint,model"}).json()["data"]
    [row] = [r for r in usage if r["key_id"] == record["id"]]
    assert (row["endpoint"], row["model"], row["requests"]) == ("moderations", "omni-moderation-latest", 1)
    assert row["prompt_tokens"] == 4 and row["completion_tokens"] == 0
    # A relayed call is accounted for the input's tokens, counted locally: OpenAI reports none.
    relaying = gw.create_key_record()
    _moderate(gw, relaying["key"], {"model": "relayed-moderation", "input": "five words in this input"})
    usage = gw.request("GET", "/admin/usage", params={"group_by": "key"}).json()["data"]
    assert [r["prompt_tokens"] for r in usage if r["key_id"] == relaying["id"]] == [5]
