#!/usr/bin/env bash
# unigate benchmark (the performance targets in docs/architecture.md): bash bench/run.sh [--duration S] [--quick] [--connections N]
exec bash "$(dirname "$0")/python.sh" run.py "$@"
