// What every candidate measurer shares: the options that bound its timing loop, the interface
// the runner process serves candidates with, and the helpers that build results.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gtco/v1/gtco.pb.h"

namespace gtco::worker {

/// How long a measurer keeps timing one candidate.
struct MeasureOptions {
  double min_seconds = 0.05;  ///< keep repeating until this much time was measured
  int min_repeats = 5;
  int max_repeats = 10000;
  double max_seconds = 2.0;  ///< stop repeating after this long regardless
  uint64_t seed = 0;         ///< 0: random per process, so inputs are fresh each run
  /// CPU: every timed run starts with the weights, biases and the output buffer evicted from
  /// the caches, as they are in a model (the first input and residuals, activations, stay where
  /// the previous run left them); the timed span excludes it.
  bool cold_weights = true;
};

/// Measures candidates of one target inside the runner process. Not thread-safe.
class Measurer {
 public:
  virtual ~Measurer() = default;
  /// Always returns a result: failures are results with an error kind and message.
  virtual gtco::v1::MeasureResult Measure(const gtco::v1::Candidate& candidate) = 0;
  /// False once this measurer can measure nothing more (a CUDA context lost to a faulting
  /// kernel): the runner then exits after reporting the result, and its parent starts a fresh
  /// runner for the next candidate.
  virtual bool Usable() const { return true; }
};

/// A failed result of `kind` for `candidate`.
gtco::v1::MeasureResult FailedResult(const gtco::v1::Candidate& candidate, gtco::v1::ErrorKind kind,
                                     const std::string& message);

/// Sets median, min, max, (sample) stddev and repeats of `result` from `samples` (seconds;
/// at least one).
void FillStatistics(std::vector<double> samples, gtco::v1::MeasureResult* result);

}  // namespace gtco::worker
