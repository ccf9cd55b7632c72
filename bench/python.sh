#!/usr/bin/env bash
# Run a benchmark script with the repository's venv, creating it (with unigate and the test
# dependencies installed) when it is missing: bash bench/python.sh SCRIPT.py [ARGS...] (used by run.sh and tasks.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
# The test lock: the bare proxy the benchmark compares against is an aiohttp app, and aiohttp is
# a test dependency, not the gateway's.
[ -x .venv/bin/python ] && .venv/bin/python -c "import aiohttp" 2>/dev/null || bash scripts/setup-venv.sh test
script=$1
shift
exec .venv/bin/python "bench/$script" "$@"
