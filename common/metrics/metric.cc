// Counter, Gauge and Histogram values.
#include "common/metrics/metric.h"

#include <algorithm>
#include <cmath>

#include "common/util/status.h"

namespace gtco::metrics {
namespace {

// fetch_add for std::atomic<double> (C++20 has it; C++17 needs the compare-exchange loop).
void AtomicAdd(std::atomic<double>& target, double delta) {
  double current = target.load(std::memory_order_relaxed);
  while (!target.compare_exchange_weak(current, current + delta, std::memory_order_relaxed)) {
  }
}

}  // namespace

const char* MetricTypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

void Counter::Increment(double value) {
  if (!(value >= 0.0)) return;
  AtomicAdd(value_, value);
}

void Gauge::Increment(double value) { AtomicAdd(value_, value); }

Histogram::Histogram(std::vector<double> upper_bounds) : upper_bounds_(std::move(upper_bounds)) {
  if (!upper_bounds_.empty() && std::isinf(upper_bounds_.back()) && upper_bounds_.back() > 0) {
    upper_bounds_.pop_back();
  }
  for (size_t index = 0; index < upper_bounds_.size(); ++index) {
    GTCO_CHECK(!std::isnan(upper_bounds_[index]), "histogram bucket bound is NaN");
    GTCO_CHECK(index == 0 || upper_bounds_[index - 1] < upper_bounds_[index],
               "histogram bucket bounds must be strictly increasing");
  }
  bucket_counts_.assign(upper_bounds_.size() + 1, 0);
}

void Histogram::Observe(double value) {
  // First bucket whose bound is >= value; NaN lands in +Inf like in the Go client.
  const size_t bucket =
      std::lower_bound(upper_bounds_.begin(), upper_bounds_.end(), value) - upper_bounds_.begin();
  std::lock_guard<std::mutex> lock(mu_);
  ++bucket_counts_[bucket];
  sum_ += value;
  ++count_;
}

HistogramSnapshot Histogram::Snapshot() const {
  HistogramSnapshot snapshot;
  snapshot.upper_bounds = upper_bounds_;
  snapshot.cumulative_counts.reserve(bucket_counts_.size());
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t running_total = 0;
  for (uint64_t bucket_count : bucket_counts_) {
    running_total += bucket_count;
    snapshot.cumulative_counts.push_back(running_total);
  }
  snapshot.sum = sum_;
  snapshot.count = count_;
  return snapshot;
}

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  GTCO_CHECK(start > 0 && factor > 1 && count >= 0, "bad exponential bucket parameters");
  std::vector<double> bounds;
  double bound = start;
  for (int index = 0; index < count; ++index, bound *= factor) bounds.push_back(bound);
  return bounds;
}

std::vector<double> LinearBuckets(double start, double width, int count) {
  GTCO_CHECK(width > 0 && count >= 0, "bad linear bucket parameters");
  std::vector<double> bounds;
  for (int index = 0; index < count; ++index) bounds.push_back(start + width * index);
  return bounds;
}

}  // namespace gtco::metrics
