#!/usr/bin/env bash
# unigate music task benchmark (the performance targets in docs/architecture.md: submit and fetch on SQLite):
#   bash bench/tasks.sh [--duration S] [--quick] [--connections N] [--workers N] [--profile]
exec bash "$(dirname "$0")/python.sh" tasks.py "$@"
