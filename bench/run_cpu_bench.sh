#!/usr/bin/env bash
# Builds and runs the CPU-vs-vendor benchmark, writing bench/results/{cpu_vs_vendor.md,
# tuned_traces.tsv,tuning_curve.csv,tuning_curve.png} and the OMP_WAIT_POLICY=PASSIVE re-timing
# bench/results/omp_passive/cpu_vs_vendor.md. Arguments go to cpu_vs_vendor, e.g.
#   bench/run_cpu_bench.sh                 # full run: 1000 trials per task (long)
#   bench/run_cpu_bench.sh --quick         # smoke run: 100 trials, a subset of the cases
#   bench/run_cpu_bench.sh --shapes mm512,vit_qkv --trials 300
# Environment: BUILD_DIR (default build), RESULTS_DIR (default bench/results); GTCO_CPU_ISA=avx2
# tunes AVX2 + FMA code only (an AVX2-only target on a bigger host) and caps the vendors the same
# way (ONEDNN_MAX_CPU_ISA=AVX2, OPENBLAS_CORETYPE=Haswell) unless those are set already.
# Needs: libopenblas-dev libdnnl-dev python3-matplotlib (and the project's own build deps).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$repo/build}"
results="${RESULTS_DIR:-$repo/bench/results}"

if [[ ! -f "$build/CMakeCache.txt" ]]; then
  cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release
fi
if [[ "${GTCO_CPU_ISA:-}" == avx2 ]]; then
  export ONEDNN_MAX_CPU_ISA="${ONEDNN_MAX_CPU_ISA:-AVX2}" OPENBLAS_CORETYPE="${OPENBLAS_CORETYPE:-Haswell}"
fi
cmake --build "$build" --target cpu_vs_vendor -j"$(nproc)"
mkdir -p "$results"
"$build/bench/cpu_vs_vendor" --out-dir "$results" "$@"
# oneDNN (OpenMP) under libgomp's default spin-wait showed per-call stalls proportional to
# GOMP_SPINCOUNT on the shared 2-core machine; re-time the same tuned programs with sleeping
# OpenMP waits as a second, stall-free view of the vendors (no re-tuning).
mkdir -p "$results/omp_passive"
OMP_WAIT_POLICY=PASSIVE "$build/bench/cpu_vs_vendor" --out-dir "$results/omp_passive" \
  --retime "$results/tuned_traces.tsv" "$@"
if [[ -f "$results/tuning_curve.csv" ]]; then
  task="$(sed -n 's/^## Tuning curve (\(.*\))$/\1/p' "$results/cpu_vs_vendor.md")"
  /usr/bin/python3 "$repo/bench/plot_tuning_curve.py" "$results/tuning_curve.csv" \
    "$results/tuning_curve.png" "Best latency vs trials: ${task:-tuning task}"
  /usr/bin/python3 "$repo/bench/plot_tuning_curve.py" --summary "$results/tuning_curve.csv" \
    "$results/cpu_vs_vendor.md"
fi
