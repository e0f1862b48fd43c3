#!/usr/bin/env bash
# The main job: a local farm on the embedded default (SQLite file + one CPU worker) tunes the
# bundled transformer block, shows the result and exports the tuned model (.farm/model.gtco),
# which scripts/run-exported.sh then runs beside ONNX Runtime.
#   scripts/run-local-farm.sh [MODEL.onnx] [BUDGET]
# Environment: GTCO_PORT (default 7070), GTCO_METRICS_PORT (default 9464), GTCO_FARM_DIR
# (default .farm/, where the database and logs go).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

model=${1:-tests/data/transformer_block.onnx}
budget=${2:-300}
port=${GTCO_PORT:-7070}
metrics_port=${GTCO_METRICS_PORT:-9464}
farm=${GTCO_FARM_DIR:-.farm}
mkdir -p "$farm"
server_address=127.0.0.1:$port
export GTCO_SERVER=$server_address

pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

echo "== starting gtco-server on $server_address (database $farm/gtco.db, metrics :$metrics_port)"
echo "   dashboard: http://127.0.0.1:$metrics_port/ (live tuning curves while the job runs)"
# A single-user farm on loopback: no tokens (--no-auth is refused on any other address).
build/server/gtco-server --listen "$server_address" --db "$farm/gtco.db" --no-auth \
  --metrics-port "$metrics_port" >"$farm/server.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do
  grep -q "listening" "$farm/server.log" 2>/dev/null && break
  kill -0 "${pids[0]}" 2>/dev/null || { cat "$farm/server.log"; exit 1; }
  sleep 0.2
done
echo "== starting one CPU worker"
build/worker/gtco-worker --target cpu >"$farm/worker.log" 2>&1 &
pids+=($!)

echo "== submitting $model (budget $budget trials)"
build/client/gtco-client submit "$model" --target cpu --budget "$budget" --team demo --watch
echo
echo "== best program per subgraph (gtco-client query --model $model)"
build/client/gtco-client query --model "$model" --target cpu
echo
echo "== the tuned model as one artifact (gtco-client export $model -o $farm/model.gtco)"
build/client/gtco-client export "$model" -o "$farm/model.gtco"
echo
echo "schedule database: $(realpath "$farm/gtco.db")  (logs: $farm/server.log, $farm/worker.log)"
echo "next: scripts/run-exported.sh   (runs $farm/model.gtco with gtco-run beside ONNX Runtime)"
