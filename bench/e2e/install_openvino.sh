#!/bin/bash
# Installs OpenVINO (the runtime x86 users pick; its CPU plugin is built on oneDNN) for the
# benchmarks' OpenVINO columns into a dedicated venv, .deps/openvino by default (git-ignored),
# which sees the system's packages (--system-site-packages: Debian's numpy 1.x). Pinned:
# openvino 2026.4.1. Idempotent: a venv that already imports that version is left as it is.
# Bench only: nothing in the build or the tests needs it.
#
#     bench/e2e/install_openvino.sh [VENV_DIR]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${1:-$ROOT/.deps/openvino}"
OPENVINO_VERSION="2026.4.1"
PYTHON="${PYTHON:-/usr/bin/python3}"

installed() {
    "$VENV/bin/python" - "$OPENVINO_VERSION" <<'PY' >/dev/null 2>&1
import sys
from importlib.metadata import version
assert version("openvino") == sys.argv[1], version("openvino")
import numpy
assert numpy.__version__.split(".")[0] == "1", numpy.__version__
import openvino  # noqa: F401
PY
}

if [ -x "$VENV/bin/python" ] && installed; then
    echo "OpenVINO $OPENVINO_VERSION already in $VENV"
    exit 0
fi
# Debian's python3 lacks ensurepip without python3-venv.
"$PYTHON" -m venv --system-site-packages "$VENV" || {
    apt-get update -qq && apt-get install -y python3-venv &&
        "$PYTHON" -m venv --system-site-packages "$VENV"; }
"$VENV/bin/pip" install -q "openvino==$OPENVINO_VERSION" "numpy<2"
installed || { echo "OpenVINO $OPENVINO_VERSION did not import from $VENV" >&2; exit 1; }
echo "OpenVINO $OPENVINO_VERSION installed in $VENV"
