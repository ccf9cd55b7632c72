"""The counts of a body's long lists kept between calls (`limits/recent_lists.py`): a list that
begins as a kept one is counted only from where they part, and every count is the one the
plain walk gives."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson

from unigate.limits.estimate import LONG_TEXT, count_tokens, prompt_tokens
from unigate.limits.recent_lists import MIN_ITEMS, MIN_TOKENS, RecentLists


def _text(i: int) -> str:
    """A text long enough to be handed to `long` (so the test sees what is counted), and
    eight of them to be worth keeping (`MIN_TOKENS`)."""
    text = f"message {i} " + "word " * 100
    assert len(text) >= LONG_TEXT and 8 * count_tokens(text) >= MIN_TOKENS
    return text


def _message(i: int) -> dict[str, Any]:
    role = "user" if i % 2 == 0 else "assistant"
    return {
        "role": role,
        "content": [{"type": "text", "text": _text(i)}, {"type": "tool_use", "id": f"t{i}"}],
    }


def _body(messages: int, tools: int = 0) -> dict[str, Any]:
    """A fresh parse, as each call brings: equal values, new objects."""
    body: dict[str, Any] = {"model": "m", "messages": [_message(i) for i in range(messages)]}
    if tools:
        body["tools"] = [{"name": f"tool{i}", "description": _text(100 + i)} for i in range(tools)]
    return orjson.loads(orjson.dumps(body))  # type: ignore[no-any-return]


class _Seen:
    """A `long` that records the texts it is asked to count."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def __call__(self, text: str) -> int:
        self.texts.append(text)
        return count_tokens(text)


def _count(lists: RecentLists, body: dict[str, Any]) -> tuple[int, list[str]]:
    seen = _Seen()
    counted = prompt_tokens(body, seen, 0, lists)
    assert counted == prompt_tokens(copy.deepcopy(body))  # what the walk alone says
    return counted, seen.texts


def test_a_growing_conversation_is_counted_from_its_new_messages() -> None:
    lists = RecentLists()
    _, first = _count(lists, _body(10, tools=MIN_ITEMS))
    assert len(first) == 10 + MIN_ITEMS  # all new: every text counted
    for n in range(11, 14):
        _, texts = _count(lists, _body(n, tools=MIN_ITEMS))
        assert texts == [_text(n - 1)]  # the one message added, nothing of the tool list
    assert lists.held[0] == 2  # one conversation, one tool list


def test_only_the_new_items_of_each_call_are_kept() -> None:
    """The kept list goes on with the items it already held (equal to the new body's) and the
    new ones: a call's body is not kept whole, only what it added."""
    lists = RecentLists()
    first = _body(10)
    _count(lists, first)
    second = _body(12)
    _count(lists, second)
    (kept,) = lists._kept.values()
    assert kept.items == second["messages"]
    assert all(a is b for a, b in zip(kept.items[:10], first["messages"], strict=True))
    assert all(a is b for a, b in zip(kept.items[10:], second["messages"][10:], strict=True))
    second["messages"].append(_message(99))  # the body's own list is not the kept one
    assert len(kept.items) == 12


def test_an_edited_conversation_is_counted_from_the_edit() -> None:
    lists = RecentLists()
    _count(lists, _body(12))
    edited = _body(12)
    edited["messages"][5]["content"][0]["text"] = _text(55)
    _, texts = _count(lists, edited)
    assert texts == [_text(i) for i in (55, *range(6, 12))]
    assert lists.held[0] == 1  # the edited conversation replaces the one it came from


def test_interleaved_conversations_each_find_their_own() -> None:
    lists = RecentLists()
    other = {"role": "user", "content": "another conversation " * 60}
    for n in range(10, 13):
        _, texts = _count(lists, _body(n))
        assert len(texts) == (n if n == 10 else 1)
        second = _body(n)
        second["messages"][0] = other
        _, texts = _count(lists, second)
        assert len(texts) == (n if n == 10 else 1)
    assert lists.held[0] == 2


def test_short_lists_are_walked_and_not_kept() -> None:
    lists = RecentLists()
    for _ in range(2):
        _, texts = _count(lists, _body(MIN_ITEMS - 1))
        assert len(texts) == MIN_ITEMS - 1
    assert lists.held == (0, 0)


def test_what_is_kept_stays_within_its_bytes() -> None:
    size = len(orjson.dumps(_body(10)["messages"]))
    lists = RecentLists(max_bytes=int(size * 2.5))
    for first in range(4):  # four conversations, room for two
        body = _body(10)
        body["messages"][0] = {"role": "user", "content": f"conversation {first}"}
        _count(lists, body)
        kept, held = lists.held
        assert held <= size * 2.5
    assert kept == 2
    lists = RecentLists(max_bytes=size // 2)  # a list larger than the whole room: not kept
    _count(lists, _body(10))
    assert lists.held == (0, 0)


def test_a_list_nested_too_deep_to_serialise_is_counted_and_not_kept() -> None:
    deep: Any = "bottom"
    for _ in range(300):
        deep = [deep]
    body = {"messages": [{"role": "user", "content": "hello there"}] * MIN_ITEMS + [deep]}
    lists = RecentLists()
    assert prompt_tokens(body, count_tokens, 0, lists) == prompt_tokens(body) == 2 * MIN_ITEMS
    assert lists.held == (0, 0)


def test_a_body_changed_after_it_was_counted_changes_no_later_count() -> None:
    lists = RecentLists()
    body = _body(10)
    _count(lists, body)
    body["messages"].append(_message(99))  # whoever reads the body next appends to its list
    again = _body(10)
    again["messages"].append(_message(99))
    _, texts = _count(lists, again)  # the walk's count: the kept ten and the one added
    assert texts == [_text(99)]


def test_a_tpm_keys_estimate_counts_a_resent_conversation_from_its_new_messages(tmp_path: Path) -> None:
    """Wired into the limits: a key counting tokens estimates each call of a growing
    conversation at the walk's count (plus its cap), keeping one list for it."""
    from unigate.auth.principal import Principal
    from unigate.limits.backend import LocalCounters
    from unigate.limits.estimate import Prices
    from unigate.limits.service import Limits
    from unigate.routing.catalog import ModelEntry

    async def nothing_spent(key_id: str, start: float) -> float:
        return 0.0

    key = Principal("key_r", "n", "h", (), (), None, None, None, None, 0.0, "whsec_x", tpm=10**9)
    entry = ModelEntry("m", (), 0.0, False, "text", Prices(1.0, 2.0))
    limits = Limits(LocalCounters(tmp_path / "limits.bin", shared=False), nothing_spent)
    for n in range(10, 14):
        body = {**_body(n), "max_tokens": 100}
        tokens, cost = limits.estimate(key, entry, body, 4096)
        assert tokens == prompt_tokens(copy.deepcopy(body)) + 100
        assert cost == Prices(1.0, 2.0).cost(tokens - 100, 100)
    assert limits.lists.held[0] == 1


def test_a_small_list_is_walked_and_not_kept() -> None:
    """Under `MIN_TOKENS` a list is cheaper to walk than to keep: a client sending many small
    lists fills nothing."""
    lists = RecentLists()
    body = {"messages": [{"role": "user", "content": f"hi {i}"} for i in range(MIN_ITEMS)]}
    assert prompt_tokens(body) < MIN_TOKENS
    for _ in range(3):
        assert prompt_tokens(body, count_tokens, 0, lists) == prompt_tokens(body)
    assert lists.held == (0, 0)


def test_lists_of_several_fields_are_kept_and_dropped_apart() -> None:
    """Each field's lists are found among its own; dropping the least recently used, whatever
    its field, leaves the rest consistent."""
    size = len(orjson.dumps(_body(10)["messages"]))
    lists = RecentLists(max_bytes=int(size * 3.5))
    for turn in range(6):
        body = _body(10)
        body["messages"][0] = {"role": "user", "content": f"conversation {turn}"}
        body["input"] = copy.deepcopy(body["messages"])  # the same list under another field
        _count(lists, body)
        kept, held = lists.held
        assert kept <= 3 and held <= size * 3.5
    again = [*orjson.loads(orjson.dumps(body["input"])), _message(10)]
    _, texts = _count(lists, {"input": again})
    assert texts == [_text(10)]  # the last conversation's `input`, found under its own field


def test_a_long_list_one_level_down_is_kept_too() -> None:
    """Gemini's function declarations sit in `tools[0]`: they are counted once, then found
    again, and a field of the same name at another depth is kept apart."""

    def body() -> dict[str, Any]:
        declarations = [{"name": f"tool{i}", "description": _text(200 + i)} for i in range(MIN_ITEMS)]
        parsed = {
            "contents": [{"parts": [{"text": "hi"}]}],
            "tools": [{"functionDeclarations": declarations}],
        }
        return orjson.loads(orjson.dumps(parsed))  # type: ignore[no-any-return]

    lists = RecentLists()
    _, first = _count(lists, body())
    assert len(first) == MIN_ITEMS
    _, again = _count(lists, body())
    assert again == []  # the declarations were not walked again
    top = {"functionDeclarations": body()["tools"][0]["functionDeclarations"]}
    _, apart = _count(lists, top)
    assert len(apart) == MIN_ITEMS and lists.held[0] == 2
