"""The token counts of an OpenAI-format reply, scanned without parsing it (`reply_usage.py`),
against what parsing the reply says, and against the regular expressions the scan replaced."""

from __future__ import annotations

import re

import orjson
import pytest

from unigate.providers.openai.reply_usage import body_usage

_OLD = (re.compile(rb'"prompt_tokens"\s*:\s*(\d+)'), re.compile(rb'"completion_tokens"\s*:\s*(\d+)'))


def _old(data: bytes) -> tuple[int, int]:
    at = data.rfind(b'"usage"')
    if at < 0:
        return 0, 0
    found = [pattern.search(data, at) for pattern in _OLD]
    return (int(found[0].group(1)) if found[0] else 0, int(found[1].group(1)) if found[1] else 0)


REPLIES = [
    {"id": "c1", "choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}},
    {"usage": {"prompt_tokens": 0, "completion_tokens": 123456789}},
    {"usage": {"prompt_tokens_details": {"cached_tokens": 5}, "prompt_tokens": 40, "completion_tokens": 2}},
    {"choices": [{"message": {"content": '"usage": {"prompt_tokens": 999}'}}], "usage": {"prompt_tokens": 3}},
    {"usage": {"completion_tokens": 9}},
    {"usage": None},
    {"choices": []},
]


@pytest.mark.parametrize("reply", REPLIES)
def test_counts_match_the_parsed_reply(reply: dict[str, object]) -> None:
    data = orjson.dumps(reply)
    usage = body_usage(data)
    parsed = reply.get("usage") if isinstance(reply.get("usage"), dict) else {}
    assert isinstance(parsed, dict)
    assert (usage.prompt_tokens, usage.completion_tokens) == (
        parsed.get("prompt_tokens", 0),
        parsed.get("completion_tokens", 0),
    )


@pytest.mark.parametrize(
    "data",
    [
        b'{"usage" : {"prompt_tokens" : \n 17 ,\t"completion_tokens":\r\n4}}',  # spaced as JSON allows
        b'{"usage": {"prompt_tokens": null, "x": {"prompt_tokens": 8}, "completion_tokens": -1}}',
        b'{"usage": {"prompt_tokens": "5", "completion_tokens": 6.5}}',
        b'"usage" "prompt_tokens": 3',  # no colon: not a counter
        b'{"usage": {"prompt_tokens": 12',  # cut short
        b'{"usage": {"prompt_tokens":',
        b"not json at all",
        b"",
    ],
)
def test_odd_bodies_read_as_the_old_scan_read_them(data: bytes) -> None:
    usage = body_usage(data)
    assert (usage.prompt_tokens, usage.completion_tokens) == _old(data)
