#!/usr/bin/env bash
# Build the installable wheels: unigate (the gateway) and unigate-sandbox (the offline sandbox
# provider, the `sandbox` extra), into dist/ or the folder given.
#   scripts/build.sh [DIR]
# Install them into any virtualenv, pinned by the lock files:
#   pip install --require-hashes -r requirements/sandbox.txt   # or runtime.txt: no sandbox
#   pip install --no-deps DIR/unigate-*.whl DIR/unigate_sandbox-*.whl
# or unpinned, with pip resolving the dependencies: pip install --find-links DIR 'unigate[sandbox]'
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
cp -r pyproject.toml README.md src "$work/unigate/"
cp -r packages/unigate-sandbox "$work/sandbox"
find "$work" -name __pycache__ -prune -exec rm -rf {} + -o -name '*.egg-info' -prune -exec rm -rf {} +
"$py" -m pip wheel -q --no-deps --disable-pip-version-check -w "$out" "$work/unigate" "$work/sandbox"
ls "$out"/*.whl
