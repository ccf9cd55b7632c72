"""The compiled modules (src/unigate/compiled.py) are used all together and only while they match
their source: an edited, missing or foreign build, or UNIGATE_COMPILED=0, runs every listed
module from its source instead."""

from __future__ import annotations

import inspect
import logging
import os
import subprocess
import sys
from importlib.machinery import EXTENSION_SUFFIXES, SourceFileLoader
from pathlib import Path

import pytest

import unigate
from unigate.cli.serve import _announce_build
from unigate.compiled import (
    MODULES,
    RECORD,
    _SourceFinder,
    extension_of,
    problem,
    record,
    shared_library,
    source_of,
)

SUFFIX = EXTENSION_SUFFIXES[0]


def test_this_process_runs_all_of_them_compiled_or_none() -> None:
    import importlib

    loaded = [importlib.import_module(name) for name in MODULES]
    compiled = [m.__name__ for m in loaded if (m.__file__ or "").endswith(SUFFIX)]
    if unigate.COMPILED_PROBLEM is None:
        assert len(compiled) == len(MODULES)
        # Their functions are native, not Python functions.
        from unigate.limits.estimate import count_tokens

        assert not inspect.isfunction(count_tokens)
    else:
        assert compiled == []


def _package(tmp_path: Path) -> Path:
    """A package laid out as a compiled build leaves it: each listed source, an (empty)
    extension beside it, the group's shared library, and the record."""
    package = tmp_path / "unigate"
    for module in MODULES:
        source = source_of(package, module)
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_text(f"NAME = {module!r}\n")
        extension_of(package, module).write_bytes(b"")
    shared_library(package).write_bytes(b"")
    (package / RECORD).write_text(record(package))
    return package


def test_a_current_build_is_used(tmp_path: Path) -> None:
    assert problem(_package(tmp_path), {}) is None


def test_an_edited_source_runs_every_module_from_source(tmp_path: Path) -> None:
    package = _package(tmp_path)
    edited = source_of(package, "unigate.limits.service")
    edited.write_text(edited.read_text() + "# edited\n")
    assert problem(package, {}) == "service.py changed since it was compiled (run scripts/compile.py)"


def test_a_touched_but_unchanged_source_is_still_current(tmp_path: Path) -> None:
    """A `git checkout` rewrites a file's mtime without changing it: its hash decides."""
    package = _package(tmp_path)
    touched = source_of(package, "unigate.app")
    stat = touched.stat()
    os.utime(touched, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    assert problem(package, {}) is None


def test_a_missing_extension_record_or_library_is_not_current(tmp_path: Path) -> None:
    package = _package(tmp_path)
    extension_of(package, "unigate.edge.asgi").unlink()
    assert problem(package, {}) == (
        "unigate.edge.asgi is not compiled for this Python (run scripts/compile.py)"
    )

    package = _package(tmp_path / "2")
    shared_library(package).unlink()
    assert problem(package, {}) == "the compiled modules' shared library is missing (run scripts/compile.py)"

    package = _package(tmp_path / "3")
    (package / RECORD).write_text("unigate.app 1 2 abc\n")
    assert problem(package, {}) == "compiled from another module list (run scripts/compile.py)"

    (package / RECORD).unlink()
    assert problem(package, {}) == "not compiled (scripts/compile.py builds them)"


def test_unigate_compiled_0_turns_them_off(tmp_path: Path) -> None:
    assert problem(_package(tmp_path), {"UNIGATE_COMPILED": "0"}) == "UNIGATE_COMPILED=0"
    assert problem(_package(tmp_path / "2"), {"UNIGATE_COMPILED": "1"}) is None


def test_the_source_finder_finds_each_listed_module_and_nothing_else(tmp_path: Path) -> None:
    package = _package(tmp_path)
    finder = _SourceFinder(package)
    for module in MODULES:
        spec = finder.find_spec(module)
        assert spec is not None and isinstance(spec.loader, SourceFileLoader)
        assert spec.origin == str(source_of(package, module))
    assert finder.find_spec("unigate.gateway") is None
    assert finder.find_spec("json") is None


def test_with_unigate_compiled_0_a_process_imports_the_sources() -> None:
    code = (
        "import unigate, unigate.app, unigate.limits.service as s;"
        "print(unigate.COMPILED_PROBLEM, unigate.app.__file__.endswith('.py'), s.__file__.endswith('.py'))"
    )
    env = {**os.environ, "UNIGATE_COMPILED": "0"}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert run.stdout.split() == ["UNIGATE_COMPILED=0", "True", "True"]


def test_serve_says_which_it_runs(caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    caplog.set_level(logging.INFO, logger="unigate")
    monkeypatch.setattr(unigate, "COMPILED_PROBLEM", None)
    _announce_build()
    monkeypatch.setattr(unigate, "COMPILED_PROBLEM", "UNIGATE_COMPILED=0")
    _announce_build()
    changed = "app.py changed since it was compiled (run scripts/compile.py)"
    monkeypatch.setattr(unigate, "COMPILED_PROBLEM", changed)
    _announce_build()
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("INFO", f"running the per-request path compiled ({len(MODULES)} modules)"),
        ("INFO", "running every module from source (UNIGATE_COMPILED=0)"),
        (
            "WARNING",
            "running every module from source, slower: app.py changed since it was compiled "
            "(run scripts/compile.py)",
        ),
    ]


def test_no_compiled_module_awaits_in_a_finally_block() -> None:
    """compiled.py's rule: mypyc-compiled coroutines that await in a `finally` resurrect an
    exception that passed through an earlier call's."""
    import ast

    package = Path(unigate.__file__).parent
    found = []
    for module in MODULES:
        source = source_of(package, module)
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.Try | ast.TryStar):
                for part in node.finalbody:
                    found += [
                        f"{source.name}:{sub.lineno}"
                        for sub in ast.walk(part)
                        if isinstance(sub, ast.Await | ast.AsyncWith | ast.AsyncFor)
                    ]
    assert found == []
