#!/usr/bin/env bash
# unigate benchmark (DESIGN §8): bash bench/run.sh [--duration S] [--quick] [--connections N]
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
    .venv/bin/pip install -q -e .
fi
exec .venv/bin/python bench/run.py "$@"
