#!/usr/bin/env bash
# Regenerate the hash-pinned lock files the set-up scripts install from, after changing the
# dependencies in pyproject.toml: requirements/runtime.txt (the gateway alone),
# requirements/production.txt (with every optional feature's package: PostgreSQL, Redis,
# OpenTelemetry, S3),
# requirements/sandbox.txt (with the sandbox and its media libraries: scripts/start.sh),
# requirements/test.txt (with the test tools: scripts/test.sh), requirements/compile.txt (what
# scripts/compile.py builds with, from requirements/compile.in), and requirements/clients.txt (the
# Python clients tests/clients drives, from requirements/clients.in: scripts/setup-clients.sh).
# Uses pip-tools in a throwaway venv.
#
# pip-compile resolves for the interpreter it runs on, so run it on the oldest Python unigate
# supports, Debian 12's 3.11.2 (PYTHON=/usr/bin/python3.11 there): a lock resolved on 3.11.7
# missed redis's async-timeout (needed below 3.11.3) and pinned pymdown-extensions 13 (3.11.5 and
# up), and the quick start failed on a stock Debian 12. A lock resolved there installs on newer
# Pythons too (tests/e2e/test_install.py checks every Python 3.11+ the machine has).
set -euo pipefail
cd "$(dirname "$0")/.."
py="${PYTHON:-python3}"
if "$py" -c 'import sys; sys.exit(sys.version_info[:3] <= (3, 11, 2))'; then
    echo "lock.sh: warning: locking on $("$py" --version 2>&1), newer than the oldest supported (3.11.2): the locks may not install there; run with PYTHON=<a Python 3.11.2>" >&2
fi
tools="$(mktemp -d)"
trap 'rm -rf "$tools"' EXIT
"$py" -m venv "$tools/venv"
"$tools/venv/bin/pip" install -q pip-tools
compile() {
    "$tools/venv/bin/pip-compile" -q --generate-hashes --strip-extras --allow-unsafe --no-header \
        --resolver=backtracking "$@"
}
# An extra that names others (`production`, and `test` through it) makes the resolver pin
# unigate itself, by its path and without a hash, which hash mode refuses: the lock installs
# unigate's dependencies, and unigate is installed after them (--no-deps).
drop_self() {
    sed -i '/^# WARNING: pip install will require the following package to be hashed\./,/^    # via unigate/d' "$1"
    if grep -q '^unigate @' "$1"; then
        echo "lock.sh: $1 still pins unigate itself" >&2
        exit 1
    fi
}
echo "locking requirements/runtime.txt"
compile -o requirements/runtime.txt pyproject.toml
echo "locking requirements/production.txt"
compile --extra production -o requirements/production.txt pyproject.toml
drop_self requirements/production.txt
echo "locking requirements/sandbox.txt"
# The `sandbox` extra's own distribution, unigate-sandbox (packages/unigate-sandbox), is no
# index's package: the lock pins the rest of the extra (the sandbox's media libraries), resolved
# from a copy of pyproject.toml without it; setup-venv.sh installs the sandbox editable.
mkdir "$tools/core"
cp README.md "$tools/core/"
sed 's/"unigate-sandbox", //' pyproject.toml > "$tools/core/pyproject.toml"
compile --extra sandbox -o requirements/sandbox.txt "$tools/core/pyproject.toml"
sed -i "s#$tools/core/##" requirements/sandbox.txt
echo "locking requirements/test.txt"
compile --extra test -o requirements/test.txt pyproject.toml
drop_self requirements/test.txt
echo "locking requirements/compile.txt"
# At the test lock's versions: the constraints are its pins without their hashes.
grep -E '^[A-Za-z0-9._-]+==' requirements/test.txt | cut -d' ' -f1 > "$tools/test-pins.txt"
compile --constraint "$tools/test-pins.txt" -o requirements/compile.txt requirements/compile.in
sed -i "s#-c $tools/test-pins.txt#-c the test lock's pins#" requirements/compile.txt
echo "locking requirements/clients.txt"
compile -o requirements/clients.txt requirements/clients.in
