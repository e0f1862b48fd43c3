#!/usr/bin/env bash
# Every test: installs what is missing, builds, runs ctest (unit + integration), then each
# libFuzzer target for a bounded time in a clang ASan/UBSan build (build-fuzz/; GTCO_FUZZ_SECONDS
# per fuzzer, default 15; GTCO_SKIP_FUZZ=1 skips them).
set -euo pipefail
cd "$(dirname "$0")/.."
# A clean clone grows to ~1.5 GB (packages in .deps, build/, build-fuzz/); the tests write their
# scratch (exported models, farm databases) under $TMPDIR and remove it as each test exits.
for dir in . "${TMPDIR:-/tmp}"; do
  free_gib=$(df -Pk "$dir" | awk 'NR == 2 {print int($4 / 1048576)}')
  if (( free_gib < 4 )); then
    echo "error: $(realpath "$dir") has ${free_gib} GiB free; the build and the tests need about 4 GiB" \
      "(left-over scratch of earlier runs: ls -d \${TMPDIR:-/tmp}/gtco-*)" >&2
    exit 1
  fi
done
scripts/setup.sh --tests
# In tiers, each failing fast: the format check and the unit tests; then the integration tests
# (real processes on loopback); then the slow ones (soak, browser, Kubernetes) and the fuzzers.
# Arguments, if any, go to one ctest run instead (e.g. -R export).
scripts/check-format
kernels=0
run_ctest() {
  # --test-output-truncation head: a passed test's log keeps its last lines (the NVRTC count).
  (cd build && ctest --output-on-failure --test-output-truncation head -j2 --timeout 900 "$@")
  # Every test program that compiled CUDA with NVRTC printed "[ nvrtc ] N CUDA kernels compiled".
  local count
  count=$({ grep -h '^\[ nvrtc \] [0-9]* CUDA kernels compiled' build/Testing/Temporary/LastTest.log ||
    true; } | awk '{total += $4} END {print total + 0}')
  kernels=$((kernels + count))
}
if (( $# > 0 )); then
  run_ctest "$@"
else
  echo "== tier 1: unit tests"
  run_ctest -L unit
  echo "== tier 2: integration tests"
  run_ctest -LE 'unit|slow'
  echo "== tier 3: soak, browser and Kubernetes tests"
  run_ctest -L slow
fi
echo "== NVRTC compiled $kernels generated CUDA kernels in this test run (PTX/SASS for sm_80/sm_90, no GPU)"
if [[ -z "${GTCO_SKIP_FUZZ:-}" && $# -eq 0 ]]; then
  echo "== tier 3: fuzzers"
  GTCO_FUZZ_BUILD_DIR="$PWD/build-fuzz" tests/fuzz/run_fuzzers.sh "${GTCO_FUZZ_SECONDS:-15}"
fi
