// A metric family: one name, help text and type, with one child metric per label set.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/metrics/metric.h"
#include "common/metrics/text_format.h"
#include "common/util/status.h"

namespace gtco::metrics {

/// The type-independent part of a family, as the registry serializes it.
class FamilyBase {
 public:
  FamilyBase(std::string name, std::string help, MetricType type)
      : name_(std::move(name)), help_(std::move(help)), type_(type) {}
  virtual ~FamilyBase() = default;
  FamilyBase(const FamilyBase&) = delete;
  FamilyBase& operator=(const FamilyBase&) = delete;

  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  MetricType type() const { return type_; }

  /// Appends the family's HELP and TYPE lines and every child's samples, children ordered by
  /// label set.
  void AppendText(std::string* out) const {
    AppendFamilyHeader(name_, help_, type_, out);
    AppendChildrenText(out);
  }

 protected:
  virtual void AppendChildrenText(std::string* out) const = 0;

 private:
  const std::string name_;
  const std::string help_;
  const MetricType type_;
};

/// Children of type T (Counter, Gauge, Histogram) keyed by label set. Thread-safe; references
/// returned by Add() stay valid until that child is removed or the family destroyed.
template <typename T>
class Family final : public FamilyBase {
 public:
  using ChildFactory = std::function<std::unique_ptr<T>()>;

  /// Families are created by Registry::AddCounter / AddGauge / AddHistogram.
  Family(std::string name, std::string help, ChildFactory make_child)
      : FamilyBase(std::move(name), std::move(help), T::kType),
        make_child_(std::move(make_child)) {}

  /// The child for `labels`, created on first use. Label names must be valid Prometheus label
  /// names (and not "le" in a histogram): they come from code, so a bad one is a checked bug.
  T& Add(const Labels& labels) {
    std::lock_guard<std::mutex> lock(mu_);
    auto existing = children_.find(labels);
    if (existing != children_.end()) return *existing->second;
    for (const auto& [label_name, label_value] : labels) {
      GTCO_CHECK(IsValidLabelName(label_name), "invalid label name '", label_name, "' in metric '",
                 name(), "'");
      GTCO_CHECK(T::kType != MetricType::kHistogram || label_name != "le",
                 "label 'le' is reserved in histogram '", name(), "'");
    }
    return *children_.emplace(labels, make_child_()).first->second;
  }

  /// Drops the child for `labels` (its references become dangling). No-op when absent.
  void Remove(const Labels& labels) {
    std::lock_guard<std::mutex> lock(mu_);
    children_.erase(labels);
  }

  bool Has(const Labels& labels) const {
    std::lock_guard<std::mutex> lock(mu_);
    return children_.count(labels) > 0;
  }

  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return children_.size();
  }

 protected:
  void AppendChildrenText(std::string* out) const override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [labels, child] : children_) AppendSamples(name(), labels, *child, out);
  }

 private:
  const ChildFactory make_child_;
  mutable std::mutex mu_;
  std::map<Labels, std::unique_ptr<T>> children_;  ///< guarded by mu_
};

}  // namespace gtco::metrics
