// Tests of the registry over prometheus-cpp: one family per name, the type checked, histogram
// bounds kept per family, the text format it serializes, and updates racing scrapes.
#include "common/metrics/registry.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace gtco::metrics {
namespace {

TEST(RegistryTest, SameNameAndTypeReturnsSameFamily) {
  Registry registry;
  Family<Gauge>& first = registry.AddGauge("g", "help");
  EXPECT_EQ(&registry.AddGauge("g", "other help"), &first);
  HistogramFamily& histogram = registry.AddHistogram("h", "help", {1, 2});
  EXPECT_EQ(&registry.AddHistogram("h", "help", {5}), &histogram);
  EXPECT_EQ(histogram.bounds(), (std::vector<double>{1, 2}));  // an existing family keeps its own
}

TEST(RegistryDeathTest, NameReusedWithAnotherTypeIsABug) {
  Registry registry;
  registry.AddGauge("g", "help");
  EXPECT_DEATH(registry.AddCounter("g", "help"), "already registered with another type");
}

TEST(RegistryDeathTest, InvalidNamesAndBucketsAreBugs) {
  Registry registry;
  EXPECT_DEATH(registry.AddCounter("bad-name", "help"), "cannot register metric 'bad-name'");
  EXPECT_DEATH(registry.AddHistogram("h", "help", {2, 1}), "strictly increasing");
  EXPECT_DEATH(registry.AddGauge("g", "two\nlines"), "one line without backslashes");
}

TEST(RegistryTest, SerializesTheTextFormat) {
  Registry registry;
  registry.AddCounter("gtco_test_total", "Trials \"measured\".")
      .Add({{"target", "cpu"}, {"path", "C:\\x \"y\"\nz"}})
      .Increment(3);
  registry.AddGauge("gtco_test_ratio", "A fraction.").Add({}).Set(0.125);
  Histogram& seconds = registry.AddHistogram("gtco_test_seconds", "Latencies.", {0.1, 1}).Add({});
  for (double value : {0.05, 0.5, 0.5, 7.0}) seconds.Observe(value);
  const std::string text = registry.Serialize();
  EXPECT_NE(text.find("# TYPE gtco_test_total counter\n"), std::string::npos) << text;
  EXPECT_NE(text.find("gtco_test_total{path=\"C:\\\\x \\\"y\\\"\\nz\",target=\"cpu\"} 3"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("gtco_test_ratio 0.125"), std::string::npos) << text;
  EXPECT_NE(text.find("gtco_test_seconds_bucket{le=\"0.1\"} 1"), std::string::npos) << text;
  EXPECT_NE(text.find("gtco_test_seconds_bucket{le=\"1\"} 3"), std::string::npos) << text;
  EXPECT_NE(text.find("gtco_test_seconds_bucket{le=\"+Inf\"} 4"), std::string::npos) << text;
  EXPECT_NE(text.find("gtco_test_seconds_count 4"), std::string::npos) << text;
  EXPECT_NE(text.find("gtco_test_seconds_sum 8.05"), std::string::npos) << text;
}

TEST(RegistryTest, ConcurrentUpdatesAndScrapesLoseNothing) {
  Registry registry;
  Family<Counter>& counters = registry.AddCounter("events_total", "Events.");
  HistogramFamily& histograms = registry.AddHistogram("sizes", "Sizes.", {10, 100});
  constexpr int kThreads = 4;
  constexpr int kEventsPerThread = 5000;
  std::vector<std::thread> threads;
  for (int thread_index = 0; thread_index < kThreads; ++thread_index) {
    threads.emplace_back([&, thread_index] {
      for (int event = 0; event < kEventsPerThread; ++event) {
        counters.Add({{"shard", std::to_string(event % 3)}}).Increment();
        histograms.Add({}).Observe(event % 200);
        if (event % 1000 == thread_index) (void)registry.Serialize();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  double total = 0;
  for (int shard = 0; shard < 3; ++shard) {
    total += counters.Add({{"shard", std::to_string(shard)}}).Value();
  }
  EXPECT_DOUBLE_EQ(total, kThreads * kEventsPerThread);
  EXPECT_NE(registry.Serialize().find("sizes_count " + std::to_string(kThreads * kEventsPerThread)),
            std::string::npos);
}

}  // namespace
}  // namespace gtco::metrics
