"""The C extensions of the per-request path's modules (src/unigate/compiled.py lists them), built
by mypyc: `extensions` is the one description of that build, used in place by
scripts/compile.py and in a wheel built where mypyc can be imported (scripts/build.sh builds it
so, without pip's isolated build environment, when it can), with the record of the sources they
were built from. Everything else about the package is in pyproject.toml.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

SRC = Path(__file__).resolve().parent / "src"


def extensions(target_dir: str) -> list[Any]:
    """mypyc's extensions for every listed module (its C written under `target_dir`), run from
    `SRC`: one shared library in the package and one small module beside each source."""
    from mypyc.build import mypycify

    from unigate.compiled import GROUP, MODULES, source_of

    paths = [str(source_of(SRC / "unigate", m).relative_to(SRC)) for m in MODULES]
    built = mypycify(
        [f"--cache-dir={target_dir}/mypy", "--config-file=", *paths],
        opt_level="3",
        group_name=GROUP,
        target_dir=f"{target_dir}/c",
        multi_file=True,
    )
    # The group's headers are written under its package (c/unigate/), which mypyc leaves off
    # the shared library's include path when the group name is dotted.
    built[0].include_dirs.append(f"{target_dir}/c/{GROUP.rsplit('.', 1)[0].replace('.', '/')}")
    return list(built)


def _wheel_extensions() -> list[Any]:
    # pip runs this file for the wheel's metadata first, and for editable installs, which need
    # no extensions; in its isolated build environment mypyc is absent: a pure-Python wheel.
    if not {"bdist_wheel", "build_ext"} & set(sys.argv) or importlib.util.find_spec("mypyc") is None:
        return []
    from unigate.compiled import RECORD, record

    os.chdir(SRC)  # mypyc names the modules by their paths from here
    built = extensions(str(SRC.parent / "build" / "mypyc"))
    package = SRC / "unigate"
    (package / RECORD).write_text(record(package))
    os.chdir(SRC.parent)
    return built


if __name__ == "__main__":
    os.environ["UNIGATE_COMPILED"] = "0"  # unigate.compiled is read as source here
    sys.path.insert(0, str(SRC))
    from setuptools import setup

    setup(ext_modules=_wheel_extensions())
