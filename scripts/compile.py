"""Compile the per-request path's modules (`unigate.compiled.MODULES`) to C extensions with
mypyc, beside their sources, and record what they were built from: the gateway uses them only
while that record matches (src/unigate/compiled.py).

    .venv/bin/python scripts/compile.py [--force | --check]

Run by scripts/setup-venv.sh after an install and whenever a listed source changed (about a
minute on 2 cores). Exits 0 when built or already current; otherwise 1 with one line naming the
cause and the fix (no C compiler, no Python headers, mypy missing, a build error), and the
gateway keeps running from source.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import os
import shutil
import sys
import sysconfig
import tempfile
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from types import ModuleType

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "unigate"


def _cannot(reason: str) -> None:
    print(f"unigate compile: not compiled, the gateway runs from source: {reason}", file=sys.stderr)
    raise SystemExit(1)


def _check_tools() -> None:
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        _cannot(f"no C compiler ({compiler}); install gcc (Debian: apt-get install gcc)")
    headers = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if not headers.exists():
        _cannot(f"no Python headers ({headers}); Debian: apt-get install python3-dev")
    try:
        import mypyc.build  # noqa: F401
        import setuptools  # noqa: F401
    except ImportError as exc:
        _cannot(f"{exc.name} is not installed; pip install -r requirements/compile.txt")


def build() -> None:
    from setuptools import setup

    from unigate.compiled import RECORD, record

    extensions = _setup_module().extensions
    # A failed or half-done build must leave no extension to be used: the old ones go first,
    # with those of modules no longer listed (the package has no other extensions).
    (PACKAGE / RECORD).unlink(missing_ok=True)
    for path in PACKAGE.rglob("*" + EXTENSION_SUFFIXES[0]):
        path.unlink()
    with tempfile.TemporaryDirectory(prefix="unigate-compile-") as tmp, contextlib.chdir(SRC):
        log = io.StringIO()
        try:
            with contextlib.redirect_stdout(log):
                setup(
                    name="unigate-compiled",
                    ext_modules=extensions(tmp),
                    script_args=["-q", "build_ext", "--inplace", f"--build-temp={tmp}/o"],
                )
        except (SystemExit, Exception) as exc:
            print(log.getvalue()[-4000:], file=sys.stderr)
            _cannot(f"the build failed ({exc}); the lines above say where")
    (PACKAGE / RECORD).write_text(record(PACKAGE))


def _setup_module() -> ModuleType:
    """The repository's setup.py, which describes the build (`extensions`) once."""
    spec = importlib.util.spec_from_file_location("unigate_setup", SRC.parent / "setup.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="build even when the extensions are current")
    parser.add_argument("--check", action="store_true", help="build nothing; exit 1 if not current")
    args = parser.parse_args()
    os.environ["UNIGATE_COMPILED"] = "0"  # this process imports unigate.compiled only as source
    sys.path.insert(0, str(SRC))
    from unigate.compiled import problem

    found = problem(PACKAGE, {})
    if args.check:
        if found is not None:
            print(f"unigate compile: not current: {found}", file=sys.stderr)
        raise SystemExit(0 if found is None else 1)
    if not args.force and found is None:
        return
    _check_tools()
    build()
    left = problem(PACKAGE, {})
    if left is not None:
        _cannot(f"built, yet {left}")
    from unigate.compiled import MODULES

    print(f"unigate compile: built {len(MODULES)} modules", file=sys.stderr)


if __name__ == "__main__":
    main()
