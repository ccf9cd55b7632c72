#!/usr/bin/env bash
# unigate benchmark (DESIGN §8): bash bench/run.sh [--duration S] [--quick] [--connections N]
exec bash "$(dirname "$0")/python.sh" run.py "$@"
