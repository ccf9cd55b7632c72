"""The per-request path's modules compiled to C by mypyc, and the guard that uses them only while
they match their source.

`MODULES` lists them, declared once: scripts/compile.py builds exactly these, the guard checks
exactly these. Compiled, a limited chat call's own layers cost about half the CPU
(`bench/overhead.py`: 15.5-16.7 → 7.3-8.5 µs) and a served call about 40% less (~67 → ~40 µs
at 64 connections): docs/benchmarks.md has the figures. The build puts each extension beside its source
(`app.cpython-311-x86_64-linux-gnu.so` beside `app.py`, and the group's shared code in
`_compiled__mypyc…so`), where Python's import system takes an extension before a source file
of the same name. A module that cannot be compiled (mypyc has no async generators, no
subclasses of most built-in types) stays out of the list; compiled code calls it as Python. So
does one whose classes are built from values nothing checked: compiled code checks annotations
at run time, and `Principal` is built from stored rows, which hand edits may have mistyped
(`keys list` shows such rows; constructing a compiled one raised TypeError).
One rule for the listed modules, which a test checks: no `await` in a `finally` block. Compiled,
a coroutine that awaited there while an exception passed leaves that exception behind, and a
later call of the same coroutine that awaits in its `finally` raises it again (a cancelled
background response's CancelledError came back in the next request). Three more differences
from running as Python, met in these modules: an attribute narrowed by a test (`x.a is not None`)
stays narrowed across an `await` and is then read with a type check, so one that can change
meanwhile is tested through a local; a dataclass's generated `__init__` runs as Python, so
objects made per call have their own `__init__`; an f-string format spec goes through
`str.format` (~750 ns for one float), so per-request text is built without one.

An extension built from older source would run the old code after an edit, silently. So the
build records every listed source's size, mtime and SHA-256 (`RECORD`), and importing `unigate`
compares (`problem`, a `stat` per module; a hash only when a stat differs, as after a `git
checkout`). When anything differs — a source edited, an extension or the record missing, another
interpreter, or `UNIGATE_COMPILED=0` — every listed module is loaded from its source
(`_SourceFinder`): all or none, because compiled modules call each other directly, so a mix would
run two copies of a class. `unigate serve` logs which of the two it runs, and why.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from importlib.machinery import EXTENSION_SUFFIXES, ModuleSpec
from importlib.util import spec_from_file_location
from pathlib import Path
from types import ModuleType

MODULES: tuple[str, ...] = (
    "unigate.app",
    "unigate.api.openai.text",
    "unigate.api.serving.relay",
    "unigate.api.serving.serve",
    "unigate.auth.authenticate",
    "unigate.auth.cache",
    "unigate.edge.access_log",
    "unigate.edge.asgi",
    "unigate.edge.client_gone",
    "unigate.edge.endpoint_table",
    "unigate.edge.h1_cycle",
    "unigate.edge.h1_head",
    "unigate.edge.h1_protocol",
    "unigate.limits.counters",
    "unigate.limits.estimate",
    "unigate.limits.key_slots",
    "unigate.limits.service",
    "unigate.limits.table_lock",
    "unigate.observability.metrics",
    "unigate.observability.request_ids",
    "unigate.providers.headers",
    "unigate.providers.http",
    "unigate.providers.openai.reply_usage",
    "unigate.providers.openai.text_relay",
    "unigate.providers.same_format",
    "unigate.routing.catalog",
    "unigate.routing.engine",
    "unigate.routing.health",
    "unigate.transport.connection",
    "unigate.transport.deadlines",
    "unigate.transport.pool",
    "unigate.transport.response",
    "unigate.usage.recorder",
    "unigate.usage.request_log",
    "unigate.write_batch",
)
GROUP = "unigate._compiled"  # the shared library's module: `_compiled__mypyc…so` in the package
RECORD = "_compiled.txt"  # what the extensions were built from, in the package directory
OFF = "UNIGATE_COMPILED"  # `0` runs every module from its source


def source_of(package_dir: Path, module: str) -> Path:
    """The source file of `module` (a name in `MODULES`) in the package at `package_dir`."""
    return package_dir.joinpath(*module.split(".")[1:]).with_suffix(".py")


def extension_of(package_dir: Path, module: str) -> Path:
    """The compiled extension of `module` for this interpreter, beside its source."""
    source = source_of(package_dir, module)
    return source.with_name(source.stem + EXTENSION_SUFFIXES[0])


def shared_library(package_dir: Path) -> Path:
    """The group's shared library, which every listed module's extension loads."""
    return package_dir / (GROUP.rsplit(".", 1)[1] + "__mypyc" + EXTENSION_SUFFIXES[0])


def record(package_dir: Path) -> str:
    """`RECORD`'s text for the sources as they stand: per module, its name, size, mtime and
    SHA-256 (written by the build, scripts/compile.py or setup.py, once it succeeded)."""
    lines = []
    for module in MODULES:
        path = source_of(package_dir, module)
        stat = path.stat()
        lines.append(f"{module} {stat.st_size} {stat.st_mtime_ns} {_digest(path)}\n")
    return "".join(lines)


def _digest(path: Path) -> str:
    import hashlib  # only when a source's stat differs from the record's

    return hashlib.sha256(path.read_bytes()).hexdigest()


def problem(package_dir: Path, environ: Mapping[str, str]) -> str | None:
    """Why the compiled modules in `package_dir` cannot be used (one phrase), or None when every
    one is built and matches its source."""
    if environ.get(OFF, "1") == "0":
        return f"{OFF}=0"
    try:
        recorded = (package_dir / RECORD).read_text().splitlines()
    except OSError:
        return "not compiled (scripts/compile.py builds them)"
    if len(recorded) != len(MODULES):
        return "compiled from another module list (run scripts/compile.py)"
    for module, line in zip(MODULES, recorded, strict=True):
        name, size, mtime, _ = [*line.split(), "", "", "", ""][:4]
        path = source_of(package_dir, module)
        if name != module or not extension_of(package_dir, module).exists():
            return f"{module} is not compiled for this Python (run scripts/compile.py)"
        stat = path.stat()
        if (str(stat.st_size), str(stat.st_mtime_ns)) != (size, mtime) and _digest(path) != line.split()[-1]:
            return f"{path.name} changed since it was compiled (run scripts/compile.py)"
    if not shared_library(package_dir).exists():
        return "the compiled modules' shared library is missing (run scripts/compile.py)"
    return None


class _SourceFinder:
    """Finds each listed module's source file, ahead of the extension beside it."""

    def __init__(self, package_dir: Path) -> None:
        self._sources = {module: source_of(package_dir, module) for module in MODULES}

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        source = self._sources.get(name)
        return None if source is None else spec_from_file_location(name, source)


def guard(package_dir: Path) -> str | None:
    """Run from `unigate/__init__.py`, before any listed module is imported: when the compiled
    modules cannot be used, load every one from its source. Returns `problem`'s answer."""
    found = problem(package_dir, os.environ)
    if found is not None:
        sys.meta_path.insert(0, _SourceFinder(package_dir))
    return found
