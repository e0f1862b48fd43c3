// The metrics registry: every metric family of a process, serialized for /metrics.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/metrics/family.h"
#include "common/metrics/metric.h"

namespace gtco::metrics {

/// Owns metric families and writes them in the Prometheus text format. Thread-safe; families
/// live as long as the registry and are serialized in the order they were added.
///
///   Registry registry;
///   Counter& done = registry.AddCounter("gtco_trials_total", "Trials measured.")
///                       .Add({{"target", "cpu"}});
///   done.Increment();
class Registry {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  /// Adds (or returns the existing) counter family. The name must be a valid metric name and
  /// not already used by a family of another type (checked: names come from code).
  Family<Counter>& AddCounter(const std::string& name, const std::string& help);
  /// As AddCounter, for gauges.
  Family<Gauge>& AddGauge(const std::string& name, const std::string& help);
  /// As AddCounter, for histograms; every child gets `upper_bounds` (strictly increasing,
  /// +Inf implied). An existing family keeps its own buckets.
  Family<Histogram>& AddHistogram(const std::string& name, const std::string& help,
                                  const std::vector<double>& upper_bounds);

  /// Every family in text exposition format 0.0.4.
  std::string Serialize() const;

 private:
  template <typename T>
  Family<T>& AddFamily(const std::string& name, const std::string& help,
                       typename Family<T>::ChildFactory make_child);

  mutable std::mutex mu_;
  std::vector<std::unique_ptr<FamilyBase>> families_;  ///< guarded by mu_
};

}  // namespace gtco::metrics
