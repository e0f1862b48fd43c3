// Golden tests of the Prometheus text exposition format written by Registry::Serialize().
#include "common/metrics/text_format.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "common/metrics/registry.h"

namespace gtco::metrics {
namespace {

TEST(FormatSampleValueTest, IntegersPlainOthersShortest) {
  EXPECT_EQ(FormatSampleValue(0), "0");
  EXPECT_EQ(FormatSampleValue(-0.0), "0");
  EXPECT_EQ(FormatSampleValue(42), "42");
  EXPECT_EQ(FormatSampleValue(-3), "-3");
  EXPECT_EQ(FormatSampleValue(1e6), "1000000");
  EXPECT_EQ(FormatSampleValue(1234567890123.0), "1234567890123");
  EXPECT_EQ(FormatSampleValue(0.1), "0.1");
  EXPECT_EQ(FormatSampleValue(2.5), "2.5");
  EXPECT_EQ(FormatSampleValue(1.5e-7), "1.5e-07");
  EXPECT_EQ(FormatSampleValue(1e20), "1e+20");
  EXPECT_EQ(FormatSampleValue(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(FormatSampleValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatSampleValue(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(FormatSampleValue(std::nan("")), "NaN");
}

TEST(EscapingTest, LabelValuesAndHelp) {
  EXPECT_EQ(EscapeLabelValue(R"(a\b"c)"
                             "\n"
                             "d"),
            R"(a\\b\"c\nd)");
  EXPECT_EQ(EscapeHelp(R"(say "hi" \ )"
                       "\n"
                       "now"),
            R"(say "hi" \\ \nnow)");
}

TEST(NameValidationTest, MetricAndLabelNames) {
  EXPECT_TRUE(IsValidMetricName("gtco_trials_total"));
  EXPECT_TRUE(IsValidMetricName("ns:rule_name"));
  EXPECT_FALSE(IsValidMetricName("1abc"));
  EXPECT_FALSE(IsValidMetricName("with-dash"));
  EXPECT_FALSE(IsValidMetricName(""));
  EXPECT_TRUE(IsValidLabelName("target"));
  EXPECT_FALSE(IsValidLabelName("__reserved"));
  EXPECT_FALSE(IsValidLabelName("a:b"));
}

TEST(RegistrySerializeTest, GoldenTextForEveryType) {
  Registry registry;
  Family<Counter>& trials =
      registry.AddCounter("gtco_trials_total", "Trials measured,\nby target and \\ result.");
  trials.Add({{"target", "cpu"}, {"result", "ok"}}).Increment(3);
  trials.Add({{"target", "cpu"}, {"result", "failed"}}).Increment();
  trials.Add({{"target", "cpu"}, {"result", "ok"}}).Increment(0.5);

  Family<Gauge>& queue = registry.AddGauge("gtco_queue_depth", "Candidates waiting.");
  Gauge& depth = queue.Add({});
  depth.Set(10);
  depth.Decrement(2.5);
  queue.Add({{"path", "C:\\tmp \"x\"\nnext"}}).Increment(-4);

  Family<Histogram>& latency =
      registry.AddHistogram("gtco_measure_seconds", "Measured medians.", {0.001, 0.01, 0.1});
  Histogram& cpu_latency = latency.Add({{"target", "cpu"}});
  for (double value : {0.0005, 0.001, 0.05, 0.05, 3.0}) cpu_latency.Observe(value);
  latency.Add({{"target", "cuda"}});
  registry.AddGauge("gtco_no_help", "").Add({}).Set(1e-9);

  EXPECT_EQ(registry.Serialize(),
            "# HELP gtco_trials_total Trials measured,\\nby target and \\\\ result.\n"
            "# TYPE gtco_trials_total counter\n"
            "gtco_trials_total{result=\"failed\",target=\"cpu\"} 1\n"
            "gtco_trials_total{result=\"ok\",target=\"cpu\"} 3.5\n"
            "# HELP gtco_queue_depth Candidates waiting.\n"
            "# TYPE gtco_queue_depth gauge\n"
            "gtco_queue_depth 7.5\n"
            "gtco_queue_depth{path=\"C:\\\\tmp \\\"x\\\"\\nnext\"} -4\n"
            "# HELP gtco_measure_seconds Measured medians.\n"
            "# TYPE gtco_measure_seconds histogram\n"
            "gtco_measure_seconds_bucket{target=\"cpu\",le=\"0.001\"} 2\n"
            "gtco_measure_seconds_bucket{target=\"cpu\",le=\"0.01\"} 2\n"
            "gtco_measure_seconds_bucket{target=\"cpu\",le=\"0.1\"} 4\n"
            "gtco_measure_seconds_bucket{target=\"cpu\",le=\"+Inf\"} 5\n"
            "gtco_measure_seconds_sum{target=\"cpu\"} 3.1015\n"
            "gtco_measure_seconds_count{target=\"cpu\"} 5\n"
            "gtco_measure_seconds_bucket{target=\"cuda\",le=\"0.001\"} 0\n"
            "gtco_measure_seconds_bucket{target=\"cuda\",le=\"0.01\"} 0\n"
            "gtco_measure_seconds_bucket{target=\"cuda\",le=\"0.1\"} 0\n"
            "gtco_measure_seconds_bucket{target=\"cuda\",le=\"+Inf\"} 0\n"
            "gtco_measure_seconds_sum{target=\"cuda\"} 0\n"
            "gtco_measure_seconds_count{target=\"cuda\"} 0\n"
            "# TYPE gtco_no_help gauge\n"
            "gtco_no_help 1e-09\n");
}

TEST(RegistrySerializeTest, UnlabelledHistogramHasOnlyLe) {
  Registry registry;
  Histogram& histogram = registry.AddHistogram("h", "x", {1, 2}).Add({});
  histogram.Observe(1.5);
  EXPECT_EQ(registry.Serialize(),
            "# HELP h x\n# TYPE h histogram\n"
            "h_bucket{le=\"1\"} 0\nh_bucket{le=\"2\"} 1\nh_bucket{le=\"+Inf\"} 1\n"
            "h_sum 1.5\nh_count 1\n");
}

TEST(RegistrySerializeTest, EmptyRegistryIsEmptyText) {
  Registry registry;
  EXPECT_EQ(registry.Serialize(), "");
}

}  // namespace
}  // namespace gtco::metrics
