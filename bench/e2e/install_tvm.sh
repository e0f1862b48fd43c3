#!/bin/bash
# Installs TVM (Relax, MetaSchedule) for bench/e2e/run_e2e.py's third system into a dedicated
# venv, .deps/tvm by default (git-ignored), which sees the system's packages
# (--system-site-packages). Pinned: apache-tvm 0.27.0.post1 with apache-tvm-ffi 0.1.14.post0.
#  - numpy stays below 2 (so ml_dtypes < 0.6): Debian's scipy (which xgboost loads) and torch are
#    built against numpy 1.x.
#  - onnx 1.23.2 with its own protobuf: TVM's ONNX frontend needs onnx >= 1.13
#    (onnx.helper.tensor_dtype_to_np_dtype); Debian 12 has 1.12, and onnx 1.17 beside Debian's
#    protobuf 4.21 did not import (onnx.onnx_pb without IR_VERSION_2021_7_30).
#  - xgboost-cpu 3.2.0 (MetaSchedule's default cost model; the xgboost module without the CUDA
#    wheels; the newest for Python 3.11), cloudpickle and psutil (its process pools).
# Idempotent: a venv that already imports the pinned versions is left as it is. Bench only:
# nothing in the build or the tests needs it.
#
#     bench/e2e/install_tvm.sh [VENV_DIR]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${1:-$ROOT/.deps/tvm}"
TVM_VERSION="0.27.0.post1"
TVM_FFI_VERSION="0.1.14.post0"
PYTHON="${PYTHON:-/usr/bin/python3}"

installed() {
    "$VENV/bin/python" - "$TVM_VERSION" "$TVM_FFI_VERSION" <<'EOF' >/dev/null 2>&1
import sys
sys.modules["torch"] = None  # tvm.relax would try to JIT a torch extension otherwise
from importlib.metadata import version
assert version("apache-tvm") == sys.argv[1], version("apache-tvm")
assert version("apache-tvm-ffi") == sys.argv[2], version("apache-tvm-ffi")
import numpy
assert numpy.__version__.split(".")[0] == "1", numpy.__version__
assert version("onnx") == "1.23.2", version("onnx")
assert version("xgboost-cpu") == "3.2.0", version("xgboost-cpu")
import cloudpickle, psutil, xgboost  # noqa: F401
import tvm, tvm.relax.frontend.onnx, tvm.s_tir.meta_schedule  # noqa: F401
EOF
}

if [ -x "$VENV/bin/python" ] && installed; then
    echo "TVM $TVM_VERSION already in $VENV"
    exit 0
fi
if [ ! -x "$VENV/bin/python" ]; then
    # Debian's python3 lacks ensurepip without python3-venv.
    "$PYTHON" -m venv --system-site-packages "$VENV" || {
        apt-get install -y python3-venv && "$PYTHON" -m venv --system-site-packages "$VENV"; }
fi
"$VENV/bin/python" -m pip install --disable-pip-version-check -q \
    "apache-tvm==$TVM_VERSION" "apache-tvm-ffi==$TVM_FFI_VERSION" \
    "numpy<2" "ml_dtypes<0.6" "onnx==1.23.2" "xgboost-cpu==3.2.0" cloudpickle psutil
installed || { echo "TVM in $VENV does not import; see above" >&2; exit 1; }
echo "TVM $TVM_VERSION in $VENV: $VENV/bin/python"
