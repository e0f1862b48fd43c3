// One timing harness for every implementation the benchmarks compare (ours and the vendors'),
// and a STREAM-like memory bandwidth measurement.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace gtco::bench {

/// Latency statistics of repeated runs, in seconds.
struct TimingStats {
  double median = 0, p10 = 0, p90 = 0, min = 0;
  int repeats = 0;
  /// (p90 - p10) / median: the relative spread of the samples.
  double Spread() const { return median > 0 ? (p90 - p10) / median : 0; }
};

/// Statistics of `samples` (which must not be empty).
TimingStats Summarize(std::vector<double> samples);

/// Runs `run` once to warm up, then repeatedly until at least `min_seconds` were measured and
/// at least `min_repeats` runs were made; appends each run's seconds to `samples`.
void CollectSamples(const std::function<void()>& run, double min_seconds, int min_repeats,
                    std::vector<double>* samples);

/// Several implementations of one operation timed back to back: `rounds` rounds, each timing
/// every implementation in turn for `min_seconds_per_round` (after a pause that lets the
/// previous library's spinning worker threads go to sleep), samples pooled per implementation.
std::vector<TimingStats> TimeBackToBack(const std::vector<std::function<void()>>& runs,
                                        int rounds, double min_seconds_per_round);

/// Sustained memory bandwidth in GB/s (1e9 bytes/s) of STREAM's copy (a[i] = b[i], 2 arrays
/// moved) and triad (a[i] = b[i] + s * c[i], 3 arrays), on `threads` threads, best of `repeats`.
/// Arrays much smaller than 64 MiB are passed over repeatedly within each timed region (each
/// thread re-reads its own share, so this measures the cache level the arrays fit in).
struct StreamBandwidth {
  int64_t array_bytes = 0;
  int threads = 0;
  double copy_gbps = 0, triad_gbps = 0;
};
StreamBandwidth MeasureStreamBandwidth(int64_t array_bytes, int threads, int repeats);

}  // namespace gtco::bench
