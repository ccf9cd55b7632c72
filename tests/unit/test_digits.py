"""Numbers read from text take ASCII digits only: `str.isdigit()` also accepts "²", "①" and
other digit-like characters, on which `int()` raises (a 500 where a 400 or a default belongs)."""

from __future__ import annotations

import pytest

from unigate.api.anthropic.models import _page
from unigate.api.gemini.models import _int_query
from unigate.errors import InvalidRequest
from unigate.providers.tasks.suno import _percent
from unigate.settings import Settings
from unigate.video.job import DEFAULT_SIZE, video_size
from unigate.webhooks.sender import parse_retry_after

ODD = ("²", "①", "٣", "-²")


@pytest.mark.parametrize("text", ODD)
def test_digit_like_characters_are_not_numbers(text: str) -> None:
    with pytest.raises(InvalidRequest):
        _page(["a", "b"], {"limit": text})

    class Query:
        query = {"pageSize": text}

    with pytest.raises(InvalidRequest):
        _int_query(Query(), "pageSize", 50)  # type: ignore[arg-type]
    assert parse_retry_after(text) is None
    assert _percent(text + "%") is None
    assert video_size({"aspect_ratio": f"{text}:1"}) == DEFAULT_SIZE
    assert Settings.from_env({"UNIGATE_WORKERS": text}).workers == 0


def test_ascii_digits_still_read() -> None:
    assert _page(["a", "b", "c"], {"limit": "2"})["data"][1]["id"] == "b"
    assert parse_retry_after("7") == 7.0
    assert _percent("40%") == 40
    assert video_size({"aspect_ratio": "16:9"}) == (1280, 720)
