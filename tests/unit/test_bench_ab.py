"""`bench/ab.py` compares this tree with another checkout's: it takes a `src` directory holding
the unigate package and refuses anything else before starting a process (a wrong path would
otherwise measure this tree against itself)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from ab import THIS_TREE, parse_args

ROOT = Path(__file__).resolve().parents[2]


def test_the_other_tree_must_be_a_src_directory_holding_unigate(tmp_path: Path) -> None:
    args = parse_args([str(ROOT / "src"), "--rounds", "2", "--connections", "16"])
    assert (args.base, args.rounds, args.connections, args.workers) == (ROOT / "src", 2, 16, 1)
    assert THIS_TREE == ROOT / "src"
    for wrong in (tmp_path, ROOT):  # an empty directory; a checkout's root, not its src
        with pytest.raises(SystemExit):
            parse_args([str(wrong)])
