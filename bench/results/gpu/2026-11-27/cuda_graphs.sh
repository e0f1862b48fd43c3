#!/usr/bin/env bash
# A 2026-11-27 GPU run (bench/results/gpu/README.md): CUDA graphs in the runtime (export tests on the GPU, the
# transformer block, ViT-B/16 with and without graphs).
set -u
mkdir -p /tmp/p /tmp/t && tar -C /tmp/p -xJf gpu-pack/gtco-gpu.tar.xz && tar -C /tmp/t -xJf gpu-pack/gtco-gpu-tests.tar.xz
root=$(cat /tmp/t/compiled_root); [ -e "$root" ] || { mkdir -p "$(dirname "$root")"; ln -s "$PWD" "$root"; }
export LD_LIBRARY_PATH=/tmp/t/lib:/tmp/p/lib:/usr/local/cuda/lib64
{ timeout 60 /tmp/t/build/tests/unit/export/export_model_test --gtest_filter='*Cuda*'
  timeout 60 /tmp/t/build/tests/unit/worker/worker_cuda_gpu_test; } > $OUT/gpu_tests.log 2>&1
grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) +\]|Failure|error" $OUT/gpu_tests.log | head -30
export PATH=/tmp/p/bin:$PATH GTCO_BIN_DIR=/tmp/p/bin
PYTHONUNBUFFERED=1 timeout 240 python3 bench/gpu/gpu_farm.py --out $OUT --e2e-budget 48 --skip-benchmark \
  --vit-budget 100 --vit-skeleton gpu-pack/vit_b_16.skeleton.onnx --deadline 170 > $OUT/gpu_farm.log 2>&1
grep -E "median|matches|max_abs|state|error|trials_done|failed_measurements" $OUT/gpu_farm.log | head -30
cd $OUT && tar czf all.tgz --exclude=all.tgz . ; find . -type f ! -name all.tgz ! -name vit_e2e.json -delete; ls
