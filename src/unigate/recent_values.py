"""Values worked out lately, kept by what they were worked out from, so that a client sending
the same thing again (a coding agent resends its whole conversation with every call) is not
worked out again: the token counts of long texts (limits/estimate.py), the translations of a
conversation's turns (translate/anthropic_inbound.py).

Bounded by the total size of the keys held (their length: characters or bytes, which is what
the values' memory follows), the oldest inserted dropped first. A hit does not move its key:
reordering a dict costs as much as a lookup, and a key still in use is put back at its next
miss.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sized
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class RecentValues(Generic[K, V]):
    """`get` and `put` by key; each key's size is `len(sized)` of what `put` is told."""

    __slots__ = ("_held", "_max", "_sizes", "_values", "get")

    def __init__(self, max_size: int) -> None:
        self._values: dict[K, V] = {}
        self._sizes: dict[K, int] = {}
        self._held = 0
        self._max = max_size
        # The value kept for a key, or None: the dict's own lookup, without a call around it.
        self.get: Callable[[K], V | None] = self._values.get

    def put(self, key: K, value: V, sized: Sized) -> None:
        """Keep `value` for `key`, which weighs `len(sized)`; one heavier than the whole bound is
        not kept."""
        size = len(sized)
        if size > self._max or key in self._values:
            return
        values, sizes = self._values, self._sizes
        while values and self._held + size > self._max:
            oldest = next(iter(values))  # insertion order: the oldest first
            del values[oldest]
            self._held -= sizes.pop(oldest)
        values[key] = value
        sizes[key] = size
        self._held += size

    @property
    def held(self) -> tuple[int, int]:
        """(values, total size of their keys) kept."""
        return len(self._values), self._held
