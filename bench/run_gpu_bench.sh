#!/usr/bin/env bash
# GPU verification and benchmark of the CUDA path, in two halves.
#
#   bench/run_gpu_bench.sh pack   here, no GPU needed: builds the CUDA-only binaries (no LLVM:
#                                 gtco-server, gtco-worker, gtco-client, gtco-run, gpu_vs_vendor) in
#                                 build-gpu/ and packs them with their non-system shared libraries
#                                 into gpu-pack/gtco-gpu.tar.xz (well under the 64 MiB a device
#                                 call may carry).
#   bench/run_gpu_bench.sh run    on the GPU machine, from the repository root, with gpu-pack/:
#                                 1. the integration test: a real gtco-server (SQLite) and a CUDA
#                                    gtco-worker tune the bundled transformer block for target
#                                    cuda (every stored time verified against the reference),
#                                    exports it for the GPU (--target cuda) and runs the artifact
#                                    with gtco-run against ONNX Runtime's output of the same input;
#                                 2. the benchmark: tunes each GEMM / row / attention workload
#                                    through the same farm, then times the best kernels beside
#                                    cuBLAS (same process) and PyTorch eager (bench/gpu/torch_eager.py).
#                                 Results go to $OUT (the device tool's folder) or bench/results/gpu/.
#
# One device call does it all:  run(command="bench/run_gpu_bench.sh run", carry=["gpu-pack"])
# Environment: GPU_BUDGET (trials per benchmark workload, default 200), GPU_E2E_BUDGET (default 300).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
mode=${1:-}

pack() {
  scripts/setup.sh --deps-only
  cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGTCO_WITH_LLVM=OFF -DGTCO_WITH_CUDA=ON \
    -DGTCO_BUILD_TESTS=OFF >/dev/null
  cmake --build build-gpu -j"$(nproc)" --target gtco-server gtco-worker gtco-client gtco-run \
    gpu_vs_vendor
  rm -rf gpu-pack && mkdir -p gpu-pack/stage/bin gpu-pack/stage/lib
  cp build-gpu/server/gtco-server build-gpu/worker/gtco-worker build-gpu/client/gtco-client \
     build-gpu/runtime/gtco-run build-gpu/bench/gpu/gpu_vs_vendor gpu-pack/stage/bin/
  strip gpu-pack/stage/bin/*
  # Every shared library they load except glibc's own, the CUDA driver and the CUDA toolkit's
  # (the GPU machine has CUDA 13 at /usr/local/cuda).
  for binary in gpu-pack/stage/bin/*; do
    ldd "$binary" | awk '$3 ~ /^\// {print $3}'
  done | sort -u | grep -v -E '/(libc|libm|libdl|librt|libpthread|ld-linux[^/]*)\.so' \
    | grep -v -E 'libcuda|libnvrtc|libcublas|libcudart' | while read -r lib; do
      cp -L "$lib" gpu-pack/stage/lib/
    done
  tar -C gpu-pack/stage -cJf gpu-pack/gtco-gpu.tar.xz bin lib
  rm -rf gpu-pack/stage
  du -h gpu-pack/gtco-gpu.tar.xz
  echo "packed; on the GPU machine: bench/run_gpu_bench.sh run (carry gpu-pack)"
}

run() {
  local out=${OUT:-$ROOT/bench/results/gpu}
  mkdir -p "$out"
  local work
  work=$(mktemp -d)
  tar -C "$work" -xJf gpu-pack/gtco-gpu.tar.xz
  export PATH="$work/bin:$PATH"
  export LD_LIBRARY_PATH="$work/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
  export GTCO_BIN_DIR="$work/bin"
  {
    echo "# GPU run $(date -u +%Y-%m-%dT%H:%MZ)"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
    nvcc --version | tail -1 || true
  } | tee "$out/machine.txt"
  PYTHONUNBUFFERED=1 python3 bench/gpu/gpu_farm.py --out "$out" \
    --e2e-budget "${GPU_E2E_BUDGET:-300}" --budget "${GPU_BUDGET:-200}" 2>&1 | tee "$out/gpu_farm.log"
}

case "$mode" in
  pack) pack ;;
  run) run ;;
  *) echo "usage: bench/run_gpu_bench.sh pack|run" >&2; exit 2 ;;
esac
