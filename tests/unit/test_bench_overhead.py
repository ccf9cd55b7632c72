"""The in-process benchmark still runs against the current code: it swaps layers for stubs by
their signatures, and a change to one (a third argument of `authenticate`) broke it silently.
Its `--agent` mode (a coding agent's growing conversation, as Claude Code, Codex and Gemini
CLI send it) and `--stream` (short and long answers on each streaming path) too. A few
hundred calls: this checks that it runs and prices every layer, not the figures."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "overhead.py"
LAYERS = ("auth", "checks", "routing", "limits", "accounting", "metrics", "logs", "reply")


def test_overhead_benchmark_prices_every_layer() -> None:
    run = subprocess.run(
        [sys.executable, str(BENCH), "--layers", "--agent", "--stream", "--long-answer", "500",
         "--requests", "300"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert "unhandled error" not in run.stderr, run.stderr[-3000:]
    assert re.search(r"unigate's own cost: [\d.]+ us/request", run.stdout), run.stdout
    for layer in LAYERS:
        assert re.search(rf"^  {layer} +-?[\d.]+ us$", run.stdout, re.M), (layer, run.stdout)
    agent = r"a coding agent's calls \(\d+ KB .*: [\d.]+ us/request with the limited key"
    assert re.search(agent, run.stdout), run.stdout
    assert re.search(r"POST /v1/messages, the same calls relayed to Anthropic's API: [\d.]+ us", run.stdout)
    assert re.search(
        r"POST :generateContent, the same calls as Gemini CLI sends them, .*: [\d.]+ us", run.stdout
    )
    for route in ("translated to chat", "relayed to a Responses API"):
        codex = rf"POST /v1/responses, the same calls as Codex sends them, {route}: [\d.]+ us/request"
        assert re.search(codex, run.stdout), run.stdout
    for path in ("/v1/chat/completions", "/v1/messages", "/v1/responses"):
        assert re.search(rf"POST {path}, stream of 50 chunks: .* [\d.]+ us/chunk", run.stdout), run.stdout
        assert re.search(rf"POST {path}, one answer of 500 chunks: [\d.]+ us/chunk", run.stdout), run.stdout
