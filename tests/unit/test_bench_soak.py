"""The soak's memory judgement (bench/soak.py `rss_growth`), fed made-up RSS samples: a leak
fails it however it is measured, while a process still filling its caches after the warm-up,
allocator arenas given back by the end, or one late sample do not."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from soak import rss_growth

MB = 1024  # the samples hold kB


def _samples(mb: list[float]) -> list[tuple[float, int, int]]:
    """One sample every 5 s from the end of the warm-up (45 s), as the soak takes them."""
    return [(45.0 + 5 * i, int(value * MB), 40) for i, value in enumerate(mb)]


def test_a_steady_leak_fails() -> None:
    leak = _samples([107 + 1.5 * i for i in range(10)])  # +13.5 MB over 45 s, evenly
    assert rss_growth(leak) > 10


def test_a_process_still_filling_its_caches_after_the_warm_up_passes() -> None:
    warming = _samples([107, 110, 113, 115, 116, 116.5, 116.5, 116.6, 116.6, 116.7])
    assert rss_growth(warming) < 5


def test_arenas_given_back_and_a_late_sample_pass() -> None:
    arenas = _samples([112, 114, 116, 118, 119, 119, 117, 114, 112, 112])
    late_spike = _samples([112, 112, 112.2, 112, 112.1, 112, 112.2, 112.1, 112, 125])
    assert rss_growth(arenas) < 5 and rss_growth(late_spike) < 5


def test_a_leak_that_starts_late_fails() -> None:
    late_leak = _samples([112, 112, 112, 112, 112, 114, 117, 120, 123, 126])
    assert rss_growth(late_leak) > 5
