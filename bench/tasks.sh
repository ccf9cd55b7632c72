#!/usr/bin/env bash
# unigate music task benchmark (DESIGN §8: submit and fetch on SQLite):
#   bash bench/tasks.sh [--duration S] [--quick] [--connections N] [--workers N] [--profile]
exec bash "$(dirname "$0")/python.sh" tasks.py "$@"
