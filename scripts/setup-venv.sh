#!/usr/bin/env bash
# Create or refresh ./.venv with unigate and its offline sandbox (packages/unigate-sandbox)
# installed editable. Usage: setup-venv.sh [sandbox|test]
# Re-installs only when pyproject.toml or the lock file changed since the last install.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-}"
py="${PYTHON:-python3}"
if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "unigate needs Python >= 3.11 (found: $("$py" --version 2>&1))" >&2
    exit 1
fi
# Progress goes to stderr (stdout stays the server's: scripts read the admin key from it).
say() { echo "unigate setup: $*" >&2; }
if [ ! -x .venv/bin/python ]; then
    say "creating ./.venv with $("$py" --version 2>&1) (first run only)"
    "$py" -m venv .venv
fi
# Dependencies come from a lock file pinned by hash (scripts/lock.sh writes them from
# pyproject.toml): the same versions on every machine, and a tampered download is refused.
lock="requirements/${extras:-runtime}.txt"
stamp=".venv/.unigate-installed${extras:+-$extras}"
shopt -s nullglob
want="$(cat pyproject.toml packages/*/pyproject.toml "$lock" requirements/compile.txt | sha256sum | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    started=$SECONDS
    say "installing unigate${extras:+[$extras]} and its dependencies into ./.venv (about a minute the first time)..."
    .venv/bin/python -m pip install -q --upgrade pip
    .venv/bin/python -m pip install -q --require-hashes -r "$lock"
    # What scripts/compile.py builds with (mypy's mypyc, setuptools), at the test lock's pins.
    .venv/bin/python -m pip install -q --require-hashes -r requirements/compile.txt
    .venv/bin/python -m pip install -q --no-deps -e .
    # The sandbox is its own distribution, found by the gateway through its entry point; its
    # media libraries (PyAV, Pillow) come with the sandbox and test locks.
    .venv/bin/python -m pip install -q --no-deps -e packages/unigate-sandbox
    if ! .venv/bin/python -m pip check >/dev/null; then
        .venv/bin/python -m pip check >&2 || true
        echo "error: $lock does not satisfy pyproject.toml; run scripts/lock.sh to refresh it" >&2
        exit 1
    fi
    # `unigate serve` runs its server under `python -OO`, whose bytecode files pip does not
    # write: written here once, instead of each start compiling the libraries again (or, with
    # PYTHONDONTWRITEBYTECODE set, every start) and leaving the compiler's garbage in memory.
    .venv/bin/python -OO -m compileall -q -j0 "$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')" >/dev/null || true
    echo "$want" > "$stamp"
    say "installed in $((SECONDS - started)) s"
fi
# The per-request path's modules compiled to C (src/unigate/compiled.py), built again whenever
# one of their sources changed (compile.py returns at once when they are current). Without a C
# compiler the gateway runs from source, as compile.py's one line says.
if ! .venv/bin/python scripts/compile.py --check 2>/dev/null; then
    say "compiling the per-request path's modules to C (about a minute)..."
    started=$SECONDS
    if .venv/bin/python scripts/compile.py; then
        say "compiled in $((SECONDS - started)) s"
    fi
fi
