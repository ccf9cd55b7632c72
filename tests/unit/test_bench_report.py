"""`bash bench/run.sh` judges every performance target (docs/architecture.md) in its verdict:
throughput ratio at 64 connections, own cost in process, added latency at 8 connections (p50 and
p99), streaming time to first byte, idle RSS per worker and its growth under load, each against
the target's own limit. Fed made-up measurements: this checks the judging, not the figures."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from report import LOW_CONNECTIONS, TARGETS, summarize
from ttfb import Sample
from wrk import WrkResult


def _run(connections: int, rps: float, p50_us: float, p99_us: float) -> WrkResult:
    return WrkResult(
        threads=2, connections=connections, requests=1000, duration_s=3.0, rps=rps, mean_us=p50_us,
        p50_us=p50_us, p90_us=p99_us, p99_us=p99_us, p999_us=p99_us, max_us=p99_us, errors={},
    )  # fmt: skip


def _summary(gw_p50_us: float, own_us: float, idle_mb: float, loaded_mb: float) -> dict[str, Any]:
    low = {"direct": _run(8, 9000, 100, 300), "bare": _run(8, 3000, 400, 900)}
    low["unigate"] = _run(8, 3000, gw_p50_us, 1200)
    high = {t: _run(64, rps, 5000, 9000) for t, rps in zip(TARGETS, (90000, 6000, 9600), strict=True)}
    samples = {t: [Sample(ttfb_us=us, total_us=us + 50) for _ in range(10)] for t, us in
               zip(TARGETS, (20.0, 250.0, 420.0), strict=True)}  # fmt: skip
    kb = {"idle": int(idle_mb * 1024), "warm": int(idle_mb * 1024) + 4096, "loaded": int(loaded_mb * 1024)}
    rss = {t: {phase: {1: size} for phase, size in kb.items()} for t in TARGETS}
    meta = {"ratio_median": 1.6, "own_cost_us": own_us}
    summary, _ = summarize(meta, {"low": low, "high": high}, samples, rss, {})
    return summary


def test_the_verdict_judges_every_target_against_its_own_limit() -> None:
    summary = _summary(gw_p50_us=250, own_us=10.5, idle_mb=59.0, loaded_mb=64.0)
    limits = {c["name"]: (c["limit"], c["unit"], c["ok"]) for c in summary["checks"]}
    assert limits == {
        "throughput vs bare proxy at c64 (median of the rounds)": (1.5, "x", True),
        "own cost per request, in process (bench/overhead.py)": (11.0, "us", True),
        f"added median latency at c{LOW_CONNECTIONS}": (200.0, "us", True),  # 250 - 100
        f"added p99 latency at c{LOW_CONNECTIONS}": (1000.0, "us", True),  # 1200 - 300
        "added streaming TTFB (median)": (500.0, "us", True),  # 420 - 20
        "RSS per worker idle (VmRSS)": (60.0, "MB", True),
        "RSS growth under load, after warm-up": (5.0, "%", True),  # 64 MB after 63 warmed
    }
    assert LOW_CONNECTIONS == 8
    assert summary["verdict"] == "PASS"


@pytest.mark.parametrize(
    ("changed", "failed"),
    [
        ({"gw_p50_us": 301}, "added median latency at c8"),
        ({"own_us": 11.5}, "own cost per request, in process (bench/overhead.py)"),
        ({"idle_mb": 61.0, "loaded_mb": 66.0}, "RSS per worker idle (VmRSS)"),
        ({"loaded_mb": 66.5}, "RSS growth under load, after warm-up"),  # +5.5% over 63 MB
    ],
)
def test_one_missed_target_fails_the_verdict(changed: dict[str, float], failed: str) -> None:
    summary = _summary(**{"gw_p50_us": 250, "own_us": 10.5, "idle_mb": 59.0, "loaded_mb": 64.0, **changed})
    assert [c["name"] for c in summary["checks"] if not c["ok"]] == [failed]
    assert summary["verdict"] == "FAIL"


def test_a_figure_that_would_round_onto_its_target_shows_a_third_decimal() -> None:
    from report import Check

    def line(value: float) -> str:
        return Check("throughput", value, 1.5, "x", higher_is_better=True).line()

    assert line(1.4966) == "  [FAIL] throughput: 1.497x (target >= 1.5x)"
    assert line(1.52) == "  [PASS] throughput: 1.52x (target >= 1.5x)"
    assert line(1.5) == "  [PASS] throughput: 1.50x (target >= 1.5x)"
