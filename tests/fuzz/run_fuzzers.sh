#!/usr/bin/env bash
# Configures the clang fuzz build (ASan + UBSan + libFuzzer), builds every fuzz target and runs
# each for a bounded time on its seed corpus through ctest (label "fuzz"). Exits non-zero when a
# fuzzer crashes, reports a sanitizer error, times out on an input or fails to build.
#
# Usage: tests/fuzz/run_fuzzers.sh [seconds per fuzzer, default 20]
# Environment: GTCO_FUZZ_BUILD_DIR (default <repo>/build-fuzz), CC/CXX (default clang-14 and
# clang++-14), GTCO_FUZZ_JOBS (build parallelism, default 2). Crash inputs are left under
# <build dir>/tests/fuzz/scratch/<fuzzer>/artifacts/.
set -euo pipefail

seconds="${1:-20}"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${GTCO_FUZZ_BUILD_DIR:-${repo}/build-fuzz}"
jobs="${GTCO_FUZZ_JOBS:-2}"
export CC="${CC:-clang-14}" CXX="${CXX:-clang++-14}"

cmake -S "${repo}" -B "${build}" -DGTCO_BUILD_FUZZERS=ON -DGTCO_BUILD_TESTS=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGTCO_FUZZ_SECONDS="${seconds}"
cmake --build "${build}" --target gtco_fuzzers -j "${jobs}"
# One fuzzer at a time: each already uses a core, and timings stay comparable.
ctest --test-dir "${build}/tests/fuzz" -L fuzz --output-on-failure
