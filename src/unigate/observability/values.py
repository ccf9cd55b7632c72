"""One process's metric values, in a file that any worker's scrape reads.

The file has the layout prometheus_client's multiprocess collector reads (`MmapedDict`): an
int of bytes used and 4 bytes of padding, then entries of [int key length][UTF-8 key, padded
so the value is 8-byte aligned][double value][double timestamp]. Its name starts with the
metric type (`counter_`, `histogram_`, `gauge_livesum_`), which tells the collector how to
merge it with the other processes' files: counters and histograms are summed (a worker that
died still counts), live gauges summed over the processes still running.

Written here rather than through prometheus_client's own values: each of those increments
takes a lock, asks the kernel for the process id (to notice a fork) and packs 16 bytes into
the map. Measured on the development VM: 1.3 µs per labelled counter increment and 2.6 µs per
histogram observation there, ~8 µs for what a routed call records; here the same costs ~1 µs,
an increment being one store into a memoryview of doubles over the map. Only this process
writes the file (one file per `ValueFile`, named with a random part), so nothing needs a lock:
a reader sees each value whole (an aligned 8-byte store) and a new entry only once the used
count covering it is written, which happens after the entry.
"""

from __future__ import annotations

import mmap
import os
import struct
from pathlib import Path

_USED = struct.Struct("i")
_HEADER = 8  # the used count and its padding
_INITIAL = 1 << 16


class ValueFile:
    """Values addressed by index into `view` (a memoryview of doubles over the file).
    `view` is replaced when the file grows: read it at each use, never keep it across an
    await."""

    def __init__(self, path: Path) -> None:
        self.path = path
        # O_EXCL: a name is never shared, so no two writers ever append to one file.
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        os.ftruncate(self._fd, _INITIAL)
        self._capacity = _INITIAL
        self._map = mmap.mmap(self._fd, _INITIAL)
        self._used = _HEADER
        _USED.pack_into(self._map, 0, _HEADER)
        self.view = memoryview(self._map).cast("d")
        self._slots: dict[str, int] = {}

    def slot(self, key: str) -> int:
        """The index of `key`'s value, appended (at 0.0) the first time it is asked for."""
        found = self._slots.get(key)
        if found is not None:
            return found
        encoded = key.encode()
        padded = encoded + b" " * (8 - (len(encoded) + 4) % 8)
        entry = _USED.pack(len(encoded)) + padded + bytes(16)
        end = self._used + len(entry)
        if end > self._capacity:
            self._grow(end)
        self._map[self._used : end] = entry
        _USED.pack_into(self._map, 0, end)  # after the entry: no reader sees half of one
        self._used = end
        index = (end - 16) // 8
        self._slots[key] = index
        return index

    def _grow(self, needed: int) -> None:
        capacity = self._capacity
        while capacity < needed:
            capacity *= 2
        os.ftruncate(self._fd, capacity)
        grown = mmap.mmap(self._fd, capacity)
        self.view.release()
        self._map.close()
        self._map, self._capacity = grown, capacity
        self.view = memoryview(grown).cast("d")

    def close(self, remove: bool = False) -> None:
        """Unmap the file (and delete it: a live gauge of a stopped process). A write that
        still comes (a request finishing during shutdown) lands in a scratch buffer."""
        if self._fd < 0:
            return
        scratch = memoryview(bytearray(self._capacity)).cast("d")
        self.view.release()
        self.view = scratch
        self._map.close()
        os.close(self._fd)
        self._fd = -1
        if remove:
            self.path.unlink(missing_ok=True)
