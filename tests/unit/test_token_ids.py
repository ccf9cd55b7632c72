"""Token ids back to text (`translate/token_ids.py`) with OpenAI's cl100k_base table, and
OpenAI's embeddings `input` read as texts for a route that embeds text only."""

from __future__ import annotations

import pytest

from unigate.errors import InvalidRequest
from unigate.translate.gemini_embed import input_texts, input_tokens
from unigate.translate.token_ids import decode, spelled_by_ids, table

# tiktoken's cl100k_base encoding of each text (encode_ordinary), recorded.
ENCODED = {
    "Hello world!": [9906, 1917, 0],
    " ünï 🎉": [10709, 77, 38672, 11410, 236, 231],
    "<|endoftext|>": [100257],
}


def test_the_table_is_cl100k_base() -> None:
    assert len(table()) == 100277  # 100,256 ranks, the gap, and the special tokens


@pytest.mark.parametrize(("text", "ids"), ENCODED.items())
def test_decode(text: str, ids: list[int]) -> None:
    assert decode(ids, "input") == text


@pytest.mark.parametrize("bad", [-1, 100261, 100277, 10**9, "7", 1.5, True])
def test_an_id_outside_the_encoding_is_named(bad: object) -> None:
    with pytest.raises(InvalidRequest) as refused:
        decode([9906, bad], "input[3]")  # type: ignore[list-item]
    assert refused.value.param == "input[3]"


def test_half_a_character_reads_as_a_replacement() -> None:
    assert decode([11410], "input") == " \ufffd"  # a space and the first byte of an emoji


@pytest.mark.parametrize(
    ("given", "texts", "tokens"),
    [
        ("hi", ["hi"], None),
        (["a", "b"], ["a", "b"], None),
        ([9906, 1917], ["Hello world"], 2),
        ([[9906], [1917, 0]], ["Hello", " world!"], 3),
        (["a", [9906]], ["a", "Hello"], None),
    ],
)
def test_input_texts_and_tokens(given: object, texts: list[str], tokens: int | None) -> None:
    assert input_texts(given) == texts
    if tokens is not None:
        assert input_tokens(given) == tokens and spelled_by_ids(given)


@pytest.mark.parametrize("given", [[], None, 5, [{"a": 1}], [1.5]])
def test_input_of_another_shape_is_refused(given: object) -> None:
    with pytest.raises(InvalidRequest):
        input_texts(given)
