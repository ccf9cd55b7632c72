#!/usr/bin/env bash
# Run a benchmark script with the repository's venv, creating it (with unigate installed) when
# it is missing: bash bench/python.sh SCRIPT.py [ARGS...] (used by run.sh and tasks.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || bash scripts/setup-venv.sh
script=$1
shift
exec .venv/bin/python "bench/$script" "$@"
