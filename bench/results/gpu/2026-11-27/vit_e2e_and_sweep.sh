#!/usr/bin/env bash
# A 2026-11-27 GPU run (bench/results/gpu/README.md): ViT-B/16 end to end (skeleton graph), then a wgmma schedule sweep.
export GPU_SKIP_INTEGRATION=1 GPU_SKIP_BENCH=1 GPU_VIT_BUDGET=300 GPU_VIT_SKELETON=gpu-pack/vit_b_16.skeleton.onnx GPU_DEADLINE=280
timeout 300 bench/run_gpu_bench.sh run
mkdir -p /tmp/p && tar -C /tmp/p -xJf gpu-pack/gtco-gpu.tar.xz
for s in qkv fc2; do
  grep "^vit32_${s}_f16:" gpu-pack/sweep_traces.tsv > /tmp/sweep_$s.tsv
  LD_LIBRARY_PATH=/tmp/p/lib:/usr/local/cuda/lib64 timeout 75 /tmp/p/bin/gpu_vs_vendor --traces /tmp/sweep_$s.tsv --markdown $OUT/sweep_$s.md > $OUT/sweep_$s.log 2>&1
  sort -t'|' -k4 -g $OUT/sweep_$s.md | head -3
done
cd $OUT && tar czf all.tgz --exclude=all.tgz . ; find . -type f ! -name all.tgz ! -name vit_e2e.json -delete; ls
