// Prometheus text exposition format 0.0.4 writer.
#include "common/metrics/text_format.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace gtco::metrics {
namespace {

constexpr double kLargestExactInteger = 9007199254740992.0;  // 2^53

bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsNameChar(char c) { return IsNameStart(c) || (c >= '0' && c <= '9'); }

// `{a="x",b="y"}` with an optional extra label appended last (the histogram's `le`);
// empty when there are no labels at all.
std::string FormatLabelSet(const Labels& labels, const char* extra_name = nullptr,
                           const std::string& extra_value = "") {
  if (labels.empty() && extra_name == nullptr) return "";
  std::string text = "{";
  bool first = true;
  for (const auto& [label_name, label_value] : labels) {
    absl::StrAppend(&text, first ? "" : ",", label_name, "=\"", EscapeLabelValue(label_value),
                    "\"");
    first = false;
  }
  if (extra_name != nullptr) {
    absl::StrAppend(&text, first ? "" : ",", extra_name, "=\"", extra_value, "\"");
  }
  text += "}";
  return text;
}

void AppendLine(const std::string& name, const std::string& label_set, const std::string& value,
                std::string* out) {
  absl::StrAppend(out, name, label_set, " ", value, "\n");
}

}  // namespace

std::string FormatSampleValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == 0) return "0";  // also turns -0 into 0
  char buffer[64];
  if (std::fabs(value) < kLargestExactInteger && value == std::trunc(value)) {
    std::snprintf(buffer, sizeof(buffer), "%.0f", value);
    return buffer;
  }
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value) break;
  }
  return buffer;
}

std::string EscapeLabelValue(const std::string& value) {
  std::string escaped;
  escaped.reserve(value.size());
  for (char c : value) {
    switch (c) {
      case '\\':
        escaped += "\\\\";
        break;
      case '"':
        escaped += "\\\"";
        break;
      case '\n':
        escaped += "\\n";
        break;
      default:
        escaped += c;
    }
  }
  return escaped;
}

std::string EscapeHelp(const std::string& help) {
  std::string escaped;
  escaped.reserve(help.size());
  for (char c : help) {
    if (c == '\\') {
      escaped += "\\\\";
    } else if (c == '\n') {
      escaped += "\\n";
    } else {
      escaped += c;
    }
  }
  return escaped;
}

bool IsValidMetricName(const std::string& name) {
  if (name.empty() || !(IsNameStart(name[0]) || name[0] == ':')) return false;
  for (char c : name) {
    if (!IsNameChar(c) && c != ':') return false;
  }
  return true;
}

bool IsValidLabelName(const std::string& name) {
  if (name.empty() || !IsNameStart(name[0]) || name.rfind("__", 0) == 0) return false;
  for (char c : name) {
    if (!IsNameChar(c)) return false;
  }
  return true;
}

void AppendFamilyHeader(const std::string& name, const std::string& help, MetricType type,
                        std::string* out) {
  if (!help.empty()) absl::StrAppend(out, "# HELP ", name, " ", EscapeHelp(help), "\n");
  absl::StrAppend(out, "# TYPE ", name, " ", MetricTypeName(type), "\n");
}

void AppendSamples(const std::string& name, const Labels& labels, const Counter& counter,
                   std::string* out) {
  AppendLine(name, FormatLabelSet(labels), FormatSampleValue(counter.Value()), out);
}

void AppendSamples(const std::string& name, const Labels& labels, const Gauge& gauge,
                   std::string* out) {
  AppendLine(name, FormatLabelSet(labels), FormatSampleValue(gauge.Value()), out);
}

void AppendSamples(const std::string& name, const Labels& labels, const Histogram& histogram,
                   std::string* out) {
  const HistogramSnapshot snapshot = histogram.Snapshot();
  const std::string bucket_name = name + "_bucket";
  for (size_t bucket = 0; bucket < snapshot.cumulative_counts.size(); ++bucket) {
    const std::string upper_bound = bucket < snapshot.upper_bounds.size()
                                        ? FormatSampleValue(snapshot.upper_bounds[bucket])
                                        : "+Inf";
    AppendLine(bucket_name, FormatLabelSet(labels, "le", upper_bound),
               absl::StrCat(snapshot.cumulative_counts[bucket]), out);
  }
  const std::string label_set = FormatLabelSet(labels);
  AppendLine(name + "_sum", label_set, FormatSampleValue(snapshot.sum), out);
  AppendLine(name + "_count", label_set, absl::StrCat(snapshot.count), out);
}

}  // namespace gtco::metrics
