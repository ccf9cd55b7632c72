#!/usr/bin/env bash
# Set up (first run only) and start unigate on its embedded defaults: SQLite in ./.unigate,
# the offline sandbox provider for every family, admin key printed once on first start.
# Extra arguments go to `unigate serve` (e.g. --port 9000, --config gateway.yaml).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-venv.sh
exec .venv/bin/unigate serve "$@"
