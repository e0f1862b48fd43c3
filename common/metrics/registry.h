// The metrics registry: prometheus-cpp's registry, families and text serializer, with the
// lookups GTCO's code relies on (a family asked for twice is the same family; a histogram family
// keeps its bucket bounds for every child).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

namespace gtco::metrics {

using Labels = prometheus::Labels;
using Counter = prometheus::Counter;
using Gauge = prometheus::Gauge;
using Histogram = prometheus::Histogram;
template <typename T>
using Family = prometheus::Family<T>;

/// Content-Type of the text exposition format 0.0.4 that Registry::Serialize() writes.
inline constexpr char kTextFormatContentType[] = "text/plain; version=0.0.4; charset=utf-8";

/// A histogram family whose children all get the bucket bounds it was made with (prometheus-cpp
/// takes them per child). Thread-safe, as prometheus-cpp's families are.
class HistogramFamily {
 public:
  HistogramFamily(Family<Histogram>& family, Histogram::BucketBoundaries bounds)
      : family_(family), bounds_(std::move(bounds)) {}
  /// The child for `labels`, created on first use.
  Histogram& Add(const Labels& labels) { return family_.Add(labels, bounds_); }
  const Histogram::BucketBoundaries& bounds() const { return bounds_; }

 private:
  Family<Histogram>& family_;
  const Histogram::BucketBoundaries bounds_;
};

/// Owns a process's metric families and writes them in the Prometheus text format. Thread-safe;
/// families live as long as the registry.
///
///   Registry registry;
///   Counter& done = registry.AddCounter("gtco_trials_total", "Trials measured.")
///                       .Add({{"target", "cpu"}});
///   done.Increment();
class Registry {
 public:
  Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  /// Adds (or returns the existing) counter family. The name must be a valid metric name and
  /// not already used by a family of another type, the help one line without backslashes
  /// (checked: both come from code).
  Family<Counter>& AddCounter(const std::string& name, const std::string& help);
  /// As AddCounter, for gauges.
  Family<Gauge>& AddGauge(const std::string& name, const std::string& help);
  /// As AddCounter, for histograms; every child gets `upper_bounds` (strictly increasing,
  /// +Inf implied). An existing family keeps its own buckets.
  HistogramFamily& AddHistogram(const std::string& name, const std::string& help,
                                const std::vector<double>& upper_bounds);

  /// Every family in text exposition format 0.0.4 (prometheus-cpp's TextSerializer).
  std::string Serialize() const;

 private:
  enum class Kind { kCounter, kGauge, kHistogram };
  struct Entry {
    Kind kind;
    void* family;  ///< Family<Counter>*, Family<Gauge>* or HistogramFamily*
    std::unique_ptr<HistogramFamily> histogram;
  };
  /// The entry named `name`, made by `make` when there is none; checks its kind.
  Entry& FindOrAdd(const std::string& name, const std::string& help, Kind kind,
                   const std::function<Entry()>& make);

  std::shared_ptr<prometheus::Registry> registry_;
  std::mutex mu_;
  std::map<std::string, Entry> families_;  ///< guarded by mu_
};

}  // namespace gtco::metrics
