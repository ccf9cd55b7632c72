#!/usr/bin/env bash
# Build the installable wheels: unigate (the gateway) and unigate-sandbox (the offline sandbox
# provider, the `sandbox` extra), into dist/ or the folder given.
#   scripts/build.sh [DIR]
# Install them into any virtualenv, pinned by the lock files:
#   pip install --require-hashes -r requirements/sandbox.txt   # production.txt: PostgreSQL, Redis, tracing, S3; runtime.txt: neither
#   pip install --no-deps DIR/unigate-*.whl DIR/unigate_sandbox-*.whl
# or unpinned, with pip resolving the dependencies: pip install --find-links DIR 'unigate[sandbox]'
# The gateway's wheel is built for this Python and platform (cp311-…-linux_x86_64) when its
# per-request path is compiled, else for any (py3-none-any).
set -euo pipefail
cd "$(dirname "$0")/.."
out="$(realpath -m "${1:-dist}")"
mkdir -p "$out"
py="${PYTHON:-python3}"
[ -x .venv/bin/python ] && py=.venv/bin/python
# Built from copies, so no build/ or egg-info folder is left in the repository.
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/unigate"
cp -r pyproject.toml setup.py README.md src "$work/unigate/"
cp -r packages/unigate-sandbox "$work/sandbox"
# Not the checkout's own compiled build (setup.py builds the wheel's).
find "$work" -name __pycache__ -prune -exec rm -rf {} + -o -name '*.egg-info' -prune -exec rm -rf {} + \
    -o -name '*.so' -exec rm -f {} + -o -name '_compiled.txt' -exec rm -f {} +
# The gateway's wheel carries its per-request path compiled (setup.py, with mypyc) when this
# Python can build it: the venv's mypy and setuptools (requirements/compile.txt), a C compiler.
# Otherwise a pure-Python wheel, whose gateway says at start that it runs from source.
if "$py" -c 'import mypyc.build, setuptools' 2>/dev/null && command -v "${CC:-gcc}" >/dev/null; then
    echo "building the gateway's wheel with its per-request path compiled (about a minute)" >&2
    "$py" -m pip wheel -q --no-deps --no-build-isolation --disable-pip-version-check -w "$out" "$work/unigate"
else
    echo "building a pure-Python wheel: no mypy or C compiler here (scripts/setup-venv.sh installs mypy)" >&2
    "$py" -m pip wheel -q --no-deps --disable-pip-version-check -w "$out" "$work/unigate"
fi
"$py" -m pip wheel -q --no-deps --disable-pip-version-check -w "$out" "$work/sandbox"
ls "$out"/*.whl
