// Prometheus text exposition format 0.0.4: value formatting, escaping and sample lines.
#pragma once

#include <string>

#include "common/metrics/metric.h"

namespace gtco::metrics {

/// The Content-Type of the text format.
inline constexpr char kTextFormatContentType[] = "text/plain; version=0.0.4; charset=utf-8";

/// Formats a sample value: integers below 2^53 without exponent ("42", "-3"), other finite
/// values in the shortest form that reads back exactly ("0.1", "1.5e-07"), and "+Inf", "-Inf",
/// "NaN".
std::string FormatSampleValue(double value);

/// Escapes a label value: backslash, double quote and newline.
std::string EscapeLabelValue(const std::string& value);

/// Escapes HELP text: backslash and newline.
std::string EscapeHelp(const std::string& help);

/// True for a valid metric name: [a-zA-Z_:][a-zA-Z0-9_:]*.
bool IsValidMetricName(const std::string& name);

/// True for a valid user label name: [a-zA-Z_][a-zA-Z0-9_]* not starting with "__".
bool IsValidLabelName(const std::string& name);

/// Appends the `# HELP` (when help is not empty) and `# TYPE` lines of a family.
void AppendFamilyHeader(const std::string& name, const std::string& help, MetricType type,
                        std::string* out);

/// Appends the sample lines of one labelled child.
void AppendSamples(const std::string& name, const Labels& labels, const Counter& counter,
                   std::string* out);
void AppendSamples(const std::string& name, const Labels& labels, const Gauge& gauge,
                   std::string* out);
/// `_bucket{...,le="..."}` lines (cumulative, ending with +Inf), then `_sum` and `_count`.
void AppendSamples(const std::string& name, const Labels& labels, const Histogram& histogram,
                   std::string* out);

}  // namespace gtco::metrics
