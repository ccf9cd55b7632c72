"""OpenAI-format embeddings on a Gemini embedding model: the OpenAI SDK against the real gateway,
in front of a fake Gemini API (LangChain's `OpenAIEmbeddings`: tests/clients/test_langchain.py).
Inputs go as `:batchEmbedContents` calls of at most a hundred texts, `dimensions` as
`outputDimensionality`, vectors come back in input order (float or base64), the input's tokens
are counted, token arrays (LangChain's default) are embedded as the text they spell."""

from __future__ import annotations

import base64
import json
from array import array
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from google import genai
from google.genai import types

from tests.support.cross_rig import GEM_KEY, cross_rig
from tests.support.cross_rig import CrossRig as Rig
from tests.support.net import http

UPSTREAM = "gemini-embedding-001"


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    models = [{"name": "gemini-embed", "routes": [{"provider": "gem", "model": UPSTREAM}]}]
    with cross_rig(Path(tmp_path_factory.mktemp("gemini-embed")), models) as rig:
        yield rig


def test_texts_in_order(rig: Rig) -> None:
    answer = rig.client.embeddings.create(
        model="gemini-embed", input=["a", "bbb", "cc"], encoding_format="float"
    )
    assert [d.index for d in answer.data] == [0, 1, 2]
    assert [d.embedding[0] for d in answer.data] == [0.01, 0.03, 0.02]  # the fake's: each text's length
    assert answer.model == "gemini-embed" and answer.usage.prompt_tokens == answer.usage.total_tokens > 0
    call, body, headers = rig.gem.received[-1]
    assert call == f"{UPSTREAM}:batchEmbedContents?" and headers["x-goog-api-key"] == GEM_KEY
    assert body["requests"][1] == {"model": f"models/{UPSTREAM}", "content": {"parts": [{"text": "bbb"}]}}


def test_sdk_default_base64_and_dimensions(rig: Rig) -> None:
    # The OpenAI SDK asks for base64 unless told otherwise, and decodes it itself.
    answer = rig.client.embeddings.create(model="gemini-embed", input="hello", dimensions=4)
    assert answer.data[0].embedding == pytest.approx([0.05, 0.06, 0.07, 0.08])
    assert rig.gem.received[-1][1]["requests"][0]["outputDimensionality"] == 4
    raw = rig.client.embeddings.with_raw_response.create(
        model="gemini-embed", input="hello", encoding_format="base64"
    )
    packed = raw.http_response.json()["data"][0]["embedding"]
    assert array("f", base64.b64decode(packed))[0] == pytest.approx(0.05)


def test_a_long_list_is_split_in_hundreds(rig: Rig) -> None:
    before = len(rig.gem.received)
    answer = rig.client.embeddings.create(model="gemini-embed", input=[f"t{i}" for i in range(250)])
    assert len(answer.data) == 250 and [d.index for d in answer.data] == list(range(250))
    assert [len(b["requests"]) for _, b, _ in rig.gem.received[before:]] == [100, 100, 50]


def test_what_gemini_cannot_take_is_named(rig: Rig) -> None:
    raw = rig.client.embeddings.with_raw_response.create(model="gemini-embed", input="x", user="u-1")
    assert raw.headers["x-unigate-dropped-fields"] == "user"


def test_token_arrays_are_embedded_as_the_text_they_spell(rig: Rig) -> None:
    # cl100k_base ids, as LangChain's OpenAIEmbeddings sends them by default: "Hello world!".
    answer = rig.client.embeddings.create(model="gemini-embed", input=[[9906, 1917, 0], [9906]])
    assert [d.embedding[0] for d in answer.data] == pytest.approx([0.12, 0.05])
    texts = [r["content"]["parts"][0]["text"] for r in rig.gem.received[-1][1]["requests"]]
    assert texts == ["Hello world!", "Hello"] and answer.usage.prompt_tokens == 4
    rig.client.embeddings.create(model="gemini-embed", input=[9906, 1917])  # one text as ids
    assert rig.gem.received[-1][1]["requests"][0]["content"]["parts"][0]["text"] == "Hello world"


def test_an_id_cl100k_lacks_is_a_400(rig: Rig) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        rig.client.embeddings.create(model="gemini-embed", input=[[9906, 100264]])
    assert refused.value.param == "input[0]" and "100264" in refused.value.message


def test_a_gemini_client_is_relayed_as_sent(rig: Rig) -> None:
    """google-genai on a Gemini route: its own request (taskType kept), the model renamed."""
    client = genai.Client(api_key=rig.key, http_options=types.HttpOptions(base_url=rig.gw.base_url))
    config = types.EmbedContentConfig(task_type="RETRIEVAL_DOCUMENT", output_dimensionality=3)
    contents = [types.Content(parts=[types.Part(text=text)]) for text in ("one", "three")]
    result = client.models.embed_content(model="gemini-embed", contents=contents, config=config)
    assert [e.values for e in result.embeddings or []] == [[0.03, 0.04, 0.05], [0.05, 0.06, 0.07]]
    call, body, _ = rig.gem.received[-1]
    assert call == f"{UPSTREAM}:batchEmbedContents?"
    assert [(r["model"], r["taskType"]) for r in body["requests"]] == [
        (f"models/{UPSTREAM}", "RETRIEVAL_DOCUMENT")
    ] * 2
    single = {"content": {"parts": [{"text": "four"}]}, "taskType": "RETRIEVAL_QUERY"}
    res = http(
        "POST",
        f"{rig.gw.base_url}/v1beta/models/gemini-embed:embedContent",
        single,
        {"x-goog-api-key": rig.key},
    )
    assert res.status == 200 and res.json()["embedding"]["values"] == pytest.approx(
        [0.04 + i / 100 for i in range(8)]
    )
    assert (
        rig.gem.received[-1][0] == f"{UPSTREAM}:embedContent?"
        and rig.gem.raw[-1] == json.dumps(single).encode()
    )  # the bytes sent
