#!/usr/bin/env bash
# unigate music task benchmark (DESIGN §8: submit and fetch on SQLite):
#   bash bench/tasks.sh [--duration S] [--quick] [--connections N] [--workers N] [--profile]
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
    .venv/bin/pip install -q -e .
fi
exec .venv/bin/python bench/tasks.py "$@"
