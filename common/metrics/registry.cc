// Registry: GTCO's families registered in prometheus-cpp's registry.
#include "common/metrics/registry.h"

#include <exception>
#include <functional>

#include <prometheus/text_serializer.h>

#include "common/util/status.h"

namespace gtco::metrics {
namespace {

/// prometheus-cpp throws on an invalid name; names come from code, so that is a bug.
template <typename Build>
auto Registered(const std::string& name, Build build) -> decltype(build()) {
  try {
    return build();
  } catch (const std::exception& error) {
    GTCO_CHECK(false, "cannot register metric '", name, "': ", error.what());
  }
  __builtin_unreachable();
}

}  // namespace

Registry::Registry() : registry_(std::make_shared<prometheus::Registry>()) {}

Registry::Entry& Registry::FindOrAdd(const std::string& name, const std::string& help, Kind kind,
                                     const std::function<Entry()>& make) {
  // prometheus-cpp 1.0 writes HELP text as it is: a newline would end the line mid-text and a
  // backslash start an escape, and the scrape would fail. Help comes from code.
  GTCO_CHECK(help.find_first_of("\\\n") == std::string::npos, "the help of metric '", name,
             "' must be one line without backslashes");
  std::lock_guard<std::mutex> lock(mu_);
  auto found = families_.find(name);
  if (found == families_.end()) found = families_.emplace(name, make()).first;
  GTCO_CHECK(found->second.kind == kind, "metric '", name,
             "' is already registered with another type");
  return found->second;
}

Family<Counter>& Registry::AddCounter(const std::string& name, const std::string& help) {
  Entry& entry = FindOrAdd(name, help, Kind::kCounter, [&] {
    Family<Counter>& family = Registered(name, [&]() -> Family<Counter>& {
      return prometheus::BuildCounter().Name(name).Help(help).Register(*registry_);
    });
    return Entry{Kind::kCounter, &family, nullptr};
  });
  return *static_cast<Family<Counter>*>(entry.family);
}

Family<Gauge>& Registry::AddGauge(const std::string& name, const std::string& help) {
  Entry& entry = FindOrAdd(name, help, Kind::kGauge, [&] {
    Family<Gauge>& family = Registered(name, [&]() -> Family<Gauge>& {
      return prometheus::BuildGauge().Name(name).Help(help).Register(*registry_);
    });
    return Entry{Kind::kGauge, &family, nullptr};
  });
  return *static_cast<Family<Gauge>*>(entry.family);
}

HistogramFamily& Registry::AddHistogram(const std::string& name, const std::string& help,
                                        const std::vector<double>& upper_bounds) {
  Entry& entry = FindOrAdd(name, help, Kind::kHistogram, [&] {
    for (size_t index = 1; index < upper_bounds.size(); ++index) {
      GTCO_CHECK(upper_bounds[index - 1] < upper_bounds[index], "histogram '", name,
                 "' needs strictly increasing bucket bounds");
    }
    Family<Histogram>& family = Registered(name, [&]() -> Family<Histogram>& {
      return prometheus::BuildHistogram().Name(name).Help(help).Register(*registry_);
    });
    auto histogram = std::make_unique<HistogramFamily>(family, upper_bounds);
    HistogramFamily* pointer = histogram.get();
    return Entry{Kind::kHistogram, pointer, std::move(histogram)};
  });
  return *static_cast<HistogramFamily*>(entry.family);
}

std::string Registry::Serialize() const {
  return prometheus::TextSerializer().Serialize(registry_->Collect());
}

}  // namespace gtco::metrics
