#!/usr/bin/env bash
# Build the documentation site (mkdocs.yml, docs/) with --strict: a broken link, a page missing
# from the navigation or any other warning fails the build. The configuration reference's tables
# are generated first from the declarations (python -m unigate.cli.reference).
#   scripts/docs.sh            build into ./site (ignored by git)
#   scripts/docs.sh DIR        build into DIR
#   scripts/docs.sh serve      preview on http://127.0.0.1:8001, rebuilt as pages change
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-venv.sh test
.venv/bin/python -m unigate.cli.reference docs/configuration.md
export NO_MKDOCS_2_WARNING=1  # mkdocs-material's banner about its successor, on every build
if [ "${1:-}" = "serve" ]; then
    exec .venv/bin/mkdocs serve --strict --dev-addr 127.0.0.1:8001
fi
exec .venv/bin/mkdocs build --strict --quiet --site-dir "$(realpath -m "${1:-site}")"
