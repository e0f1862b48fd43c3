// Timing harness and STREAM-like bandwidth measurement.
#include "bench/timing.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

namespace gtco::bench {
namespace {

using Clock = std::chrono::steady_clock;

// OpenBLAS, libgomp and our runtime all spin briefly after a parallel call; this pause lets the
// previous implementation's threads go idle before the next one is timed on the same cores.
constexpr auto kPauseBetweenImplementations = std::chrono::milliseconds(200);

double Percentile(const std::vector<double>& sorted, double fraction) {
  size_t index = static_cast<size_t>(fraction * (sorted.size() - 1) + 0.5);
  return sorted[std::min(index, sorted.size() - 1)];
}

/// Runs body(begin, end) `inner` times over each thread's contiguous share of [0, n), all inside
/// one OpenMP parallel region, so that waking the team is paid once, not once per pass.
template <typename Body>
void ParallelRepeat(int64_t n, int threads, int inner, const Body& body) {
  const int64_t share = (n + threads - 1) / threads;
#pragma omp parallel for num_threads(threads) schedule(static, 1)
  for (int worker = 0; worker < threads; ++worker) {
    const int64_t begin = std::min(n, worker * share);
    for (int pass = 0; pass < inner; ++pass) body(begin, std::min(n, begin + share));
  }
}

}  // namespace

TimingStats Summarize(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  TimingStats stats;
  stats.repeats = static_cast<int>(samples.size());
  stats.min = samples.front();
  stats.median = Percentile(samples, 0.5);
  stats.p10 = Percentile(samples, 0.1);
  stats.p90 = Percentile(samples, 0.9);
  return stats;
}

void CollectSamples(const std::function<void()>& run, double min_seconds, int min_repeats,
                    std::vector<double>* samples) {
  run();
  double measured = 0;
  int repeats = 0;
  while (measured < min_seconds || repeats < min_repeats) {
    auto start = Clock::now();
    run();
    double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    samples->push_back(seconds);
    measured += seconds;
    ++repeats;
  }
}

std::vector<TimingStats> TimeBackToBack(const std::vector<std::function<void()>>& runs,
                                        int rounds, double min_seconds_per_round) {
  std::vector<std::vector<double>> samples(runs.size());
  for (int round = 0; round < rounds; ++round) {
    for (size_t index = 0; index < runs.size(); ++index) {
      std::this_thread::sleep_for(kPauseBetweenImplementations);
      CollectSamples(runs[index], min_seconds_per_round, 5, &samples[index]);
    }
  }
  std::vector<TimingStats> stats;
  for (auto& implementation_samples : samples) {
    stats.push_back(Summarize(std::move(implementation_samples)));
  }
  return stats;
}

StreamBandwidth MeasureStreamBandwidth(int64_t array_bytes, int threads, int repeats) {
  const int64_t n = array_bytes / static_cast<int64_t>(sizeof(double));
  std::unique_ptr<double[]> a(new double[n]), b(new double[n]), c(new double[n]);
  // First touch on the measuring threads, so the pages are mapped before timing.
  ParallelRepeat(n, threads, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      a[i] = 1.0;
      b[i] = 2.0;
      c[i] = 0.5;
    }
  });
  // Small (cache-resident) arrays are copied many times per timed region.
  const int inner = static_cast<int>(std::max<int64_t>(1, (int64_t{64} << 20) / array_bytes));
  auto best_seconds = [&](const auto& kernel) {
    double best = 0;
    for (int repeat = 0; repeat < repeats; ++repeat) {
      auto start = Clock::now();
      ParallelRepeat(n, threads, inner, kernel);
      double seconds = std::chrono::duration<double>(Clock::now() - start).count() / inner;
      if (best == 0 || seconds < best) best = seconds;
    }
    return best;
  };
  double* a_data = a.get();
  const double* b_data = b.get();
  const double* c_data = c.get();
  double copy = best_seconds([=](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) a_data[i] = b_data[i];
  });
  const double scalar = 3.0;
  double triad = best_seconds([=](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) a_data[i] = b_data[i] + scalar * c_data[i];
  });
  StreamBandwidth bandwidth;
  bandwidth.array_bytes = n * static_cast<int64_t>(sizeof(double));
  bandwidth.threads = threads;
  bandwidth.copy_gbps = 2.0 * bandwidth.array_bytes / copy * 1e-9;
  bandwidth.triad_gbps = 3.0 * bandwidth.array_bytes / triad * 1e-9;
  return bandwidth;
}

}  // namespace gtco::bench
