#!/usr/bin/env bash
# Every test: installs what is missing, builds, runs ctest (unit + integration).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --tests
cd build
ctest --output-on-failure -j2 --timeout 900 "$@"
