// Re-times one tuned case beside its baselines: our best program (JIT-compiled again), OpenBLAS,
// oneDNN and the plain C++ loop, on the same inputs, verified, then timed back to back.
#pragma once

#include "bench/bench_cases.h"
#include "bench/report.h"
#include "bench/tuner.h"
#include "common/codegen/llvm/jit.h"

namespace gtco::bench {

struct CaseTimingOptions {
  int rounds = 5;                  ///< interleaved rounds over the implementations
  double seconds_per_round = 0.06;  ///< per implementation and round (0.3 s in all by default)
  uint64_t seed = 7;               ///< input values
  int threads = 2;                 ///< threads of the cache-resident copy bandwidth measurement
};

/// The timings of `bench_case` tuned as `tuned`. Our program is compiled with `jit`. An
/// implementation whose output disagrees with the reference is timed anyway and gets a note.
CaseTiming TimeCase(const BenchCase& bench_case, const TuneResult& tuned, codegen::CpuJit& jit,
                    const CaseTimingOptions& options);

}  // namespace gtco::bench
