#!/usr/bin/env bash
# Create or refresh ./.venv with unigate installed (editable). Usage: setup-venv.sh [extras]
# Re-installs only when pyproject.toml changed since the last install.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-}"
py="${PYTHON:-python3}"
if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "unigate needs Python >= 3.11 (found: $("$py" --version 2>&1))" >&2
    exit 1
fi
[ -x .venv/bin/python ] || "$py" -m venv .venv
stamp=".venv/.unigate-installed${extras:+-$extras}"
want="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    .venv/bin/python -m pip install -q --upgrade pip
    .venv/bin/python -m pip install -q -e ".${extras:+[$extras]}"
    echo "$want" > "$stamp"
fi
