// Prometheus metric values: Counter, Gauge and Histogram, each one labelled child of a family.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace gtco::metrics {

/// A label set (name -> value); ordered by name, as it is serialized.
using Labels = std::map<std::string, std::string>;

enum class MetricType { kCounter, kGauge, kHistogram };

/// The `# TYPE` word: "counter", "gauge" or "histogram".
const char* MetricTypeName(MetricType type);

/// A monotonically increasing value. Thread-safe (lock-free).
class Counter {
 public:
  static constexpr MetricType kType = MetricType::kCounter;

  /// Adds `value`; negative or NaN increments are ignored, as in prometheus-cpp.
  void Increment(double value = 1.0);
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

/// A value that goes up and down. Thread-safe (lock-free).
class Gauge {
 public:
  static constexpr MetricType kType = MetricType::kGauge;

  void Set(double value) { value_.store(value, std::memory_order_relaxed); }
  void Increment(double value = 1.0);
  void Decrement(double value = 1.0) { Increment(-value); }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

/// A consistent copy of a histogram's state.
struct HistogramSnapshot {
  std::vector<double> upper_bounds;         ///< finite bucket bounds, increasing
  std::vector<uint64_t> cumulative_counts;  ///< one per bound plus the +Inf bucket
  double sum = 0;
  uint64_t count = 0;
};

/// Observations counted into buckets `value <= upper_bound`, plus an implicit +Inf bucket.
/// Thread-safe (a mutex keeps buckets, sum and count consistent with each other).
class Histogram {
 public:
  static constexpr MetricType kType = MetricType::kHistogram;

  /// `upper_bounds` must be strictly increasing (a bug otherwise: checked); a trailing +Inf is
  /// dropped since that bucket always exists.
  explicit Histogram(std::vector<double> upper_bounds);

  void Observe(double value);
  HistogramSnapshot Snapshot() const;

 private:
  std::vector<double> upper_bounds_;
  mutable std::mutex mu_;
  std::vector<uint64_t> bucket_counts_;  ///< non-cumulative; last is +Inf; guarded by mu_
  double sum_ = 0;                       ///< guarded by mu_
  uint64_t count_ = 0;                   ///< guarded by mu_
};

/// `count` bounds start, start*factor, start*factor^2, ... (start > 0, factor > 1).
std::vector<double> ExponentialBuckets(double start, double factor, int count);
/// `count` bounds start, start+width, ... (width > 0).
std::vector<double> LinearBuckets(double start, double width, int count);

}  // namespace gtco::metrics
