#!/usr/bin/env bash
# Runs an exported model with gtco-run and the same ONNX model with ONNX Runtime, 2 threads each,
# and prints both latencies (median of 50 runs after warm-up) and whether the outputs match.
#   scripts/run-exported.sh [MODEL.onnx] [ARTIFACT.gtco]
# Defaults: what scripts/run-local-farm.sh tuned and exported (tests/data/transformer_block.onnx,
# .farm/model.gtco). Installs ONNX Runtime (pinned, into .deps/python) when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:-tests/data/transformer_block.onnx}
artifact=${2:-${GTCO_FARM_DIR:-.farm}/model.gtco}
[[ -f $artifact ]] || { echo "no $artifact: run scripts/run-local-farm.sh first" >&2; exit 2; }
[[ -x build/runtime/gtco-run ]] || scripts/setup.sh
dpkg-query -W -f='${Status}' python3-numpy 2>/dev/null | grep -q "install ok installed" || {
  as_root=(); [[ $(id -u) -ne 0 ]] && as_root=(sudo)
  "${as_root[@]}" apt-get update -q && "${as_root[@]}" apt-get install -y -q python3-numpy; }
py_dir=.deps/python
if ! PYTHONPATH=$py_dir /usr/bin/python3 -c "import onnxruntime" 2>/dev/null; then
  echo "== installing ONNX Runtime into $py_dir"
  /usr/bin/python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
    --no-deps --target "$py_dir" onnxruntime==1.20.1 coloredlogs==15.0.1 flatbuffers==25.12.19 \
    humanfriendly==10.0 mpmath==1.3.0 packaging==26.4 protobuf==7.36.2 sympy==1.14.0
fi
PYTHONPATH=$py_dir /usr/bin/python3 bench/e2e/run_exported.py "$model" "$artifact"
