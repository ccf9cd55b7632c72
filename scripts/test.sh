#!/usr/bin/env bash
# Set up everything the test suite needs and run all of it: lint, type check, every test.
#   scripts/test.sh          the whole suite, every marker (pyproject.toml lists them)
#   scripts/test.sh --fast   lint and the default suite only (what plain `pytest` runs: the
#                            gateway in-process, no service, browser or real client)
# Installs Debian packages (PostgreSQL server, Tesseract OCR with English data, Chromium, Redis,
# nginx) when missing and running as root (--fast: Tesseract only).
# Extra arguments go to pytest (e.g. -k routing, -x).
set -euo pipefail
cd "$(dirname "$0")/.."
fast=0
if [ "${1:-}" = "--fast" ]; then
    fast=1
    shift
fi

need_apt=()
{ command -v tesseract >/dev/null && tesseract --list-langs 2>/dev/null | grep -x eng >/dev/null; } \
    || need_apt+=(tesseract-ocr tesseract-ocr-eng)
command -v curl >/dev/null || need_apt+=(curl)  # the documented curl examples are run as written
command -v gcc >/dev/null || need_apt+=(gcc)  # scripts/compile.py builds the compiled modules with it
if [ "$fast" = 0 ]; then
    ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need_apt+=(postgresql)
    # The dashboard's browser test drives Debian's chromium through Playwright (no browser download).
    [ -x /usr/bin/chromium ] || need_apt+=(chromium)
    # The scale-out tests: replicas share a Redis and sit behind Debian's nginx.
    command -v redis-server >/dev/null || need_apt+=(redis-server)
    [ -x /usr/sbin/nginx ] || need_apt+=(nginx)
fi
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
# The suite tests what users run: the per-request path compiled (src/unigate/compiled.py), which
# setup-venv.sh has just built if a source changed. A build that failed stops here, saying why.
.venv/bin/python scripts/compile.py --check || { echo "error: the compiled modules are not current (above)" >&2; exit 1; }
# google-genai 3.x refuses `generate_videos` on the Gemini API before sending anything; the
# Veo test drives the gateway with 2.34.0, the last release that sends it, from its own venv.
if [ ! -x .venv-genai2/bin/python ] || ! .venv-genai2/bin/python -c 'import google.genai' 2>/dev/null; then
    echo "setting up .venv-genai2 (google-genai 2.34.0 for the Veo test)"
    "${PYTHON:-python3}" -m venv .venv-genai2
    .venv-genai2/bin/python -m pip install -q google-genai==2.34.0
fi
echo "== ruff"; .venv/bin/ruff check src packages tests bench
if [ "$fast" = 1 ]; then
    echo "== pytest (default suite)"
    exec .venv/bin/python -m pytest -p no:cacheprovider --durations=15 "$@"
fi
# The real clients tests/clients drives (marker `clients`): Claude Code, Codex, Gemini CLI, the
# AI SDK, the OpenAI, Anthropic and Google Gen AI Node SDKs, LangChain, the OpenAI Agents SDK,
# LiteLLM, pinned by their lock files.
bash scripts/setup-clients.sh
echo "== mypy"; .venv/bin/mypy
# Every marker, in two runs: the tests that measure time or throughput against the machine
# (soak, cluster, the fuzz corpora with their latency probes) alone, one after the other; all
# the others spread over the worker processes. The slowest tests are listed at the end of
# each, to keep the suite's time in view.
timed="soak or cluster or fuzz"
echo "== pytest (every marker but $timed, in parallel)"
# Both runs go to the end (a failure in the first must not hide one in the second); the
# suite fails if either did.
status=0
.venv/bin/python -m pytest -p no:cacheprovider -m "not ($timed)" --durations=20 "$@" || status=$?
echo "== pytest ($timed, one at a time)"
.venv/bin/python -m pytest -p no:cacheprovider -m "$timed" -n 0 --durations=20 "$@" || status=$?
exit "$status"
