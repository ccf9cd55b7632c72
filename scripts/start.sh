#!/usr/bin/env bash
# Set up (first run only) and start unigate on its embedded defaults: SQLite in ./.unigate,
# the offline sandbox provider for every family, admin key printed once on first start.
# Extra arguments go to `unigate serve` (e.g. --port 9000, --config gateway.yaml).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-venv.sh sandbox  # with the sandbox's media libraries
# The sandbox's OCR (/api/tasks/document/ocr) runs Tesseract; everything else works without it.
# System packages are installed only with consent: asked at a terminal, or UNIGATE_INSTALL_OCR=1
# (0 never asks).
if ! command -v tesseract >/dev/null; then
    hint="the sandbox's OCR needs Tesseract (apt-get install tesseract-ocr tesseract-ocr-eng, or UNIGATE_INSTALL_OCR=1 $0 as root); other endpoints work without it"
    consent="${UNIGATE_INSTALL_OCR:-}"
    if [ -z "$consent" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && [ -t 0 ]; then
        read -r -p "unigate setup: install Tesseract (Debian packages tesseract-ocr, tesseract-ocr-eng) for the sandbox's OCR? [y/N] " answer || answer=
        case "$answer" in [yY]*) consent=1 ;; *) consent=0 ;; esac
    fi
    if [ "$consent" = 1 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "unigate setup: installing Tesseract for the sandbox's OCR" >&2
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            tesseract-ocr tesseract-ocr-eng >/dev/null || echo "Tesseract could not be installed; sandbox OCR tasks will fail" >&2
    else
        echo "note: $hint" >&2
    fi
fi
echo "unigate: starting the gateway (Ctrl-C stops it). Leave it running: once it prints" \
     "'unigate listening on ...', open a second terminal in $PWD for the next commands." >&2
exec .venv/bin/unigate serve "$@"
