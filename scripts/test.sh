#!/usr/bin/env bash
# Set up everything the test suite needs and run all of it: lint, type check, tests.
# Installs Debian packages (PostgreSQL server) when missing and running as root.
# Extra arguments go to pytest (e.g. -k routing, -x).
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need_apt+=(postgresql)
if [ ${#need_apt[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "installing Debian packages: ${need_apt[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
    else
        echo "missing system packages: ${need_apt[*]} (install them, or run as root)" >&2
        exit 1
    fi
fi

bash scripts/setup-venv.sh test
echo "== ruff"; .venv/bin/ruff check src tests bench
echo "== mypy"; .venv/bin/mypy
echo "== pytest"
exec .venv/bin/python -m pytest -p no:cacheprovider "$@"
