"""The soak benchmark's short version in the suite: 90 s of mixed traffic (chat, streams,
embeddings, speech, images, music tasks with webhooks; the last 60 s measured) on loopback:
no RSS growth over 5% after warm-up, no file-descriptor growth, no failed call, every task's final webhook.
The full run is `bench/soak.py --duration 600`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.soak, pytest.mark.process]

BENCH = Path(__file__).resolve().parents[2] / "bench" / "soak.py"


def test_short_soak() -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--duration", "90", "--rate", "40"],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    print(proc.stdout)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert "VERDICT: PASS" in proc.stdout
