"""Token counts of the long lists a client sends again with every call, kept so that only what
is new in them is counted.

A coding agent (Claude Code, Codex, an SDK's tool loop) sends its whole conversation with each
call: the messages of the last call with one or two more at the end, and the same tool list.
Counting the prompt of a 48 KB conversation walks ~600 containers, ~250 µs: more than all the
rest of the gateway's work on the call. Comparing its messages with the last call's is a
C-level deep equality, ~12 µs. So the running counts of recent long lists are kept item by
item, and a list that begins as a kept one does is counted from where the two part. Equal JSON
values have equal counts: this changes what a count costs, never the count.

Bounded by the JSON size of the lists held (and with them their parsed items), the least
recently used dropped first; a list is sized by serialising only its items not seen before.
Only lists worth it are kept (`MIN_TOKENS`: a short one is walked in a few µs, and is not
serialised either), so a client sending many small lists cannot fill the memory with entries;
a lookup looks only at its own field's most recent lists.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from unigate.limits.estimate import prompt_tokens

MIN_ITEMS = 8  # shorter lists are walked: cheaper than looking them up
MIN_TOKENS = 500  # a list counted at fewer is walked in a few µs: not kept
MAX_BYTES = 2_000_000  # JSON bytes of the lists held, per process (their objects take ~4x)
_CANDIDATES = 16  # kept lists of a field compared with a new one, the most recent first


class _Kept:
    """One list seen lately: its items, and after each item the count and the JSON size of
    the items up to it."""

    __slots__ = ("field", "items", "number", "sizes", "sums")

    def __init__(self, field: str, items: list[Any], sums: list[int], sizes: list[int]) -> None:
        self.field = field
        self.items = items
        self.sums = sums
        self.sizes = sizes
        self.number = 0  # its place in `RecentLists._kept`


class RecentLists:
    """A `ListTokens` (estimate.py) for one process's limited calls."""

    min_items = MIN_ITEMS

    def __init__(self, max_bytes: int = MAX_BYTES) -> None:
        self._max_bytes = max_bytes
        self._kept: dict[int, _Kept] = {}  # by age: the least recently used first
        self._fields: dict[str, dict[int, _Kept]] = {}  # the same, by field
        self._next = 0
        self._held = 0  # JSON bytes of the kept lists

    def __call__(self, field: str, items: list[Any], long: Callable[[str], int], depth: int = 1) -> int:
        """`prompt_tokens` of `items`, the list in a body's `field` at nesting `depth` (1: the
        body's top level). Lists of one field at other depths are kept apart: their items'
        counts depend on the depth (nothing past the walk's limit counts)."""
        if depth != 1:
            field = f"{field}@{depth}"
        try:
            kept, same = self._longest_start(field, items)
        except RecursionError:  # nested past the interpreter's limit: walked, not kept
            return prompt_tokens(items, long, depth)
        if kept is not None and same == len(items) == len(kept.items):
            self._touch(kept)  # the same list again (a tool list)
            return kept.sums[-1]
        sums = kept.sums[:same] if kept is not None else []
        total = sums[-1] if sums else 0
        for item in items[same:]:
            total += prompt_tokens(item, long, depth + 1)  # as its list's walk counts one of its items
            sums.append(total)
        if total < MIN_TOKENS:
            return total  # walked in no time: not worth keeping
        sizes = kept.sizes[:same] if kept is not None else []
        size = sizes[-1] if sizes else 0
        try:
            for item in items[same:]:
                size += len(orjson.dumps(item)) + 1
                sizes.append(size)
        except orjson.JSONEncodeError:  # nested too deep to serialise: not kept
            return total
        if kept is not None:
            self._drop(kept)
        if size <= self._max_bytes:
            # The kept items it begins with (equal to this body's), then its new ones: the rest
            # of this body dies with its request instead of being kept, and the cycle
            # collector's young generations are not filled with it at every call. A new list:
            # the body's own may still be appended to by whoever reads it next.
            start = kept.items[:same] if kept is not None else []
            self._add(_Kept(field, start + items[same:], sums, sizes))
        return total

    def _longest_start(self, field: str, items: list[Any]) -> tuple[_Kept | None, int]:
        """The kept list of `field` that `items` begins as for longest, and for how many items;
        the first found that `items` wholly continues wins at once."""
        kept_lists = self._fields.get(field)
        if not kept_lists:
            return None, 0
        first = items[0]
        best, best_same = None, 0
        for looked, kept in enumerate(reversed(kept_lists.values())):
            if looked == _CANDIDATES:
                break
            old = kept.items
            if old[0] != first:
                continue
            end = min(len(old), len(items))
            same = 1
            while same < end and old[same] == items[same]:
                same += 1
            if same > best_same:
                best, best_same = kept, same
                if same == len(old):
                    break
        return best, best_same

    def _touch(self, kept: _Kept) -> None:
        self._drop(kept)
        self._add(kept)

    def _add(self, kept: _Kept) -> None:
        kept.number = self._next
        self._next += 1
        self._kept[kept.number] = kept
        self._fields.setdefault(kept.field, {})[kept.number] = kept
        self._held += kept.sizes[-1]
        while self._held > self._max_bytes:
            self._drop(next(iter(self._kept.values())))

    def _drop(self, kept: _Kept) -> None:
        del self._kept[kept.number]
        of_field = self._fields[kept.field]
        del of_field[kept.number]
        if not of_field:
            del self._fields[kept.field]
        self._held -= kept.sizes[-1]

    @property
    def held(self) -> tuple[int, int]:
        """(lists, JSON bytes) kept."""
        return len(self._kept), self._held
