// The metrics registry.
#include "common/metrics/registry.h"

#include "common/metrics/text_format.h"
#include "common/util/status.h"

namespace gtco::metrics {

template <typename T>
Family<T>& Registry::AddFamily(const std::string& name, const std::string& help,
                               typename Family<T>::ChildFactory make_child) {
  GTCO_CHECK(IsValidMetricName(name), "invalid metric name '", name, "'");
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::unique_ptr<FamilyBase>& family : families_) {
    if (family->name() != name) continue;
    GTCO_CHECK(family->type() == T::kType, "metric '", name, "' already registered as a ",
               MetricTypeName(family->type()));
    return static_cast<Family<T>&>(*family);
  }
  families_.push_back(std::make_unique<Family<T>>(name, help, std::move(make_child)));
  return static_cast<Family<T>&>(*families_.back());
}

Family<Counter>& Registry::AddCounter(const std::string& name, const std::string& help) {
  return AddFamily<Counter>(name, help, [] { return std::make_unique<Counter>(); });
}

Family<Gauge>& Registry::AddGauge(const std::string& name, const std::string& help) {
  return AddFamily<Gauge>(name, help, [] { return std::make_unique<Gauge>(); });
}

Family<Histogram>& Registry::AddHistogram(const std::string& name, const std::string& help,
                                          const std::vector<double>& upper_bounds) {
  // Validate the buckets now rather than at the first Add().
  Histogram validated(upper_bounds);
  return AddFamily<Histogram>(name, help,
                              [upper_bounds] { return std::make_unique<Histogram>(upper_bounds); });
}

std::string Registry::Serialize() const {
  std::string text;
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::unique_ptr<FamilyBase>& family : families_) family->AppendText(&text);
  return text;
}

}  // namespace gtco::metrics
