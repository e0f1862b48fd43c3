#!/usr/bin/env bash
# GPU verification and benchmark of the CUDA path, in two halves.
#
#   bench/run_gpu_bench.sh pack   here, no GPU needed: builds the CUDA-only binaries (no LLVM:
#                                 gtco-server, gtco-worker, gtco-client, gtco-run, gpu_vs_vendor) in
#                                 build-gpu/ and packs them with their non-system shared libraries
#                                 into gpu-pack/gtco-gpu.tar.xz (well under the 64 MiB a run on the
#                                 GPU machine may carry).
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
#   bench/run_gpu_bench.sh pack-tests  here, after the full build (build/, LLVM and NVRTC): packs the
#                                 GPU-labelled unit tests (worker_cuda_gpu_test, worker_cuda_mappings_gpu_test,
#                                 export_model_test) with gtco-worker and their shared libraries into
#                                 gpu-pack/gtco-gpu-tests.tar.xz; `run` then runs them first, with the
#                                 source and build paths they were compiled with linked to the copy there.
#
# One run on the GPU machine does it all: bench/run_gpu_bench.sh run, with gpu-pack/ copied there.
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
  # ViT-B/16's graph as this machine's PyTorch exports it, weights stripped (GPU_VIT_SKELETON).
  if /usr/bin/python3 -c "import torch, torchvision, onnx" 2>/dev/null; then
    /usr/bin/python3 bench/gpu/vit_model.py skeleton gpu-pack/vit_b_16.skeleton.onnx 2>/dev/null ||
      echo "no ViT skeleton: its export failed"
  fi
  echo "packed; on the GPU machine: bench/run_gpu_bench.sh run (carry gpu-pack)"
}

pack_tests() {
  local tests=(build/tests/unit/worker/worker_cuda_gpu_test build/tests/unit/worker/worker_cuda_mappings_gpu_test
               build/tests/unit/export/export_model_test)
  cmake --build build -j"$(nproc)" --target gtco-worker worker_cuda_gpu_test worker_cuda_mappings_gpu_test \
    export_model_test
  [ -f gpu-pack/gtco-gpu.tar.xz ] || pack
  local packed
  packed=$(tar -tJf gpu-pack/gtco-gpu.tar.xz)
  rm -rf gpu-pack/tests-stage && mkdir -p gpu-pack/tests-stage/lib
  cp --parents build/worker/gtco-worker "${tests[@]}" gpu-pack/tests-stage/
  find gpu-pack/tests-stage/build -type f -exec strip {} +
  for binary in build/worker/gtco-worker "${tests[@]}"; do
    ldd "$binary" | awk '$3 ~ /^\// {print $3}'
  done | sort -u | grep -v -E '/(libc|libm|libdl|librt|libpthread|ld-linux[^/]*)\.so' \
    | grep -v -E 'libcuda|libnvrtc|libcublas|libcudart' | while read -r lib; do
      # Libraries the CUDA-only pack already carries are taken from it on the GPU machine.
      grep -qxF "lib/$(basename "$lib")" <<<"$packed" || cp -L "$lib" gpu-pack/tests-stage/lib/
    done
  # The tests find the repository and the worker by the absolute paths they were compiled with.
  echo "$ROOT" > gpu-pack/tests-stage/compiled_root
  # With the CUDA-only pack and the repository this must stay under the 64 MiB a run on the GPU machine carries.
  tar -C gpu-pack/tests-stage -cf - . | xz -T"$(nproc)" -9e > gpu-pack/gtco-gpu-tests.tar.xz
  rm -rf gpu-pack/tests-stage
  du -h gpu-pack/gtco-gpu-tests.tar.xz
}

# The packed GPU unit tests, each under a time limit; logs and a summary line each into $1; $2 is
# where the CUDA-only pack was unpacked (the libraries both packs load).
run_tests() {
  local out=$1 packed_dir=$2 work
  [ -f gpu-pack/gtco-gpu-tests.tar.xz ] || { echo "no packed GPU tests (pack-tests)"; return 0; }
  work=$(mktemp -d)
  tar -C "$work" -xJf gpu-pack/gtco-gpu-tests.tar.xz
  local compiled_root
  compiled_root=$(cat "$work/compiled_root")
  if [ "$compiled_root" != "$ROOT" ] && [ ! -e "$compiled_root" ]; then
    mkdir -p "$(dirname "$compiled_root")" && ln -s "$ROOT" "$compiled_root"
  fi
  [ -e build/worker/gtco-worker ] || { mkdir -p build/worker && cp "$work/build/worker/gtco-worker" build/worker/; }
  # One log for all of them: the device tool returns at most 8 files.
  local test filter log="$out/gpu_tests.log" status
  : > "$log"
  for test in worker/worker_cuda_gpu_test worker/worker_cuda_mappings_gpu_test export/export_model_test; do
    filter='*'
    [ "${test##*/}" = export_model_test ] && filter='*Cuda*'
    echo "=== ${test##*/} --gtest_filter=$filter" >> "$log"
    status=0
    LD_LIBRARY_PATH="$work/lib:$packed_dir/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}" timeout "${GPU_TEST_TIMEOUT:-240}" \
      "$work/build/tests/unit/$test" --gtest_filter="$filter" >> "$log" 2>&1 || status=$?
    echo "=== ${test##*/} exit $status" >> "$log"
    echo "${test##*/}: exit $status"
  done
  grep -E '^(=== |\[ +(OK|FAILED|SKIPPED) +\])' "$log" || true
}

run() {
  local out=${OUT:-$ROOT/bench/results/gpu}
  mkdir -p "$out"
  local work
  work=$(mktemp -d)
  tar -C "$work" -xJf gpu-pack/gtco-gpu.tar.xz
  run_tests "$out" "$work"
  export PATH="$work/bin:$PATH"
  export LD_LIBRARY_PATH="$work/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
  export GTCO_BIN_DIR="$work/bin"
  {
    echo "# GPU run $(date -u +%Y-%m-%dT%H:%MZ)"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
    nvcc --version | tail -1 || true
  } | tee "$out/machine.txt"
  # GPU_ONLY: a comma-separated subset of the benchmark workloads (gpu_farm.py --only); GPU_DEADLINE:
  # seconds after which no more benchmark jobs are waited for (what was found is still timed).
  # GPU_VIT_BUDGET: trials for the ViT-B/16 end-to-end run (0: skipped); GPU_RETIME: stored
  # best-trace TSVs re-timed beside cuBLAS with no tuning; GPU_SKIP_BENCH=1: no tuning benchmark;
  # GPU_SKIP_INTEGRATION=1: no transformer-block run; GPU_VIT_SKELETON: the ViT graph exported by
  # this machine's PyTorch with its weights stripped (vit_model.py skeleton), used instead of one
  # exported there (PyTorch 2.11's TorchScript exporter writes shape checks with Mod).
  if [ -z "${GPU_VIT_SKELETON:-}" ] && [ -f gpu-pack/vit_b_16.skeleton.onnx ]; then
    GPU_VIT_SKELETON=gpu-pack/vit_b_16.skeleton.onnx  # made by pack
  fi
  PYTHONUNBUFFERED=1 python3 bench/gpu/gpu_farm.py --out "$out" \
    --e2e-budget "${GPU_E2E_BUDGET:-300}" --budget "${GPU_BUDGET:-200}" \
    --vit-budget "${GPU_VIT_BUDGET:-0}" ${GPU_RETIME:+--retime "$GPU_RETIME"} \
    ${GPU_VIT_SKELETON:+--vit-skeleton "$GPU_VIT_SKELETON"} ${GPU_SKIP_INTEGRATION:+--skip-integration} \
    ${GPU_SKIP_BENCH:+--skip-benchmark} \
    ${GPU_ONLY:+--only "$GPU_ONLY"} ${GPU_DEADLINE:+--deadline "$GPU_DEADLINE"} 2>&1 | tee "$out/gpu_farm.log"
  # GPU_NCU=NAME: Nsight Compute's reading of that stored trace's kernel and of cuBLAS's for the same
  # GEMM (one launch each), into ncu.txt.
  if [ -n "${GPU_NCU:-}" ] && command -v ncu >/dev/null; then
    grep -h "^${GPU_NCU}	" bench/results/gpu/best_traces.tsv > "$work/ncu_trace.tsv" || true
    local sections="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis"
    { timeout 90 ncu --clock-control none -k regex:gtco_kernel -c 1 $sections \
        "$work/bin/gpu_vs_vendor" --traces "$work/ncu_trace.tsv"
      timeout 90 ncu --clock-control none -k 'regex:gemm|xmma|cutlass|sm90' -c 1 $sections \
        "$work/bin/gpu_vs_vendor" --traces "$work/ncu_trace.tsv"
    } > "$out/ncu.txt" 2>&1 || true
    grep -E "^  [a-z_0-9]+.*\(|Duration|Compute \(SM\) Throughput|Memory Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Issue Slots Busy|No Eligible|Dynamic Shared" "$out/ncu.txt" | head -60
  fi
}

case "$mode" in
  pack) pack ;;
  pack-tests) pack_tests ;;
  run) run ;;
  *) echo "usage: bench/run_gpu_bench.sh pack|pack-tests|run" >&2; exit 2 ;;
esac
