// Tests of metric values, families and the registry's bookkeeping.
#include "common/metrics/registry.h"

#include <gtest/gtest.h>

#include <cmath>
#include <thread>
#include <vector>

namespace gtco::metrics {
namespace {

TEST(CounterTest, IgnoresNegativeAndNaNIncrements) {
  Counter counter;
  counter.Increment();
  counter.Increment(2.5);
  counter.Increment(-10);
  counter.Increment(std::nan(""));
  EXPECT_DOUBLE_EQ(counter.Value(), 3.5);
}

TEST(GaugeTest, SetIncrementDecrement) {
  Gauge gauge;
  gauge.Set(5);
  gauge.Increment();
  gauge.Decrement(3);
  EXPECT_DOUBLE_EQ(gauge.Value(), 3);
}

TEST(HistogramTest, CumulativeBucketsWithUpperBoundInclusive) {
  Histogram histogram({1, 2, 4, std::numeric_limits<double>::infinity()});
  for (double value : {0.5, 1.0, 1.5, 4.0, 4.5, 100.0}) histogram.Observe(value);
  const HistogramSnapshot snapshot = histogram.Snapshot();
  EXPECT_EQ(snapshot.upper_bounds, (std::vector<double>{1, 2, 4}));  // +Inf dropped
  EXPECT_EQ(snapshot.cumulative_counts, (std::vector<uint64_t>{2, 3, 4, 6}));
  EXPECT_EQ(snapshot.count, 6u);
  EXPECT_DOUBLE_EQ(snapshot.sum, 111.5);
}

TEST(HistogramTest, BucketHelpers) {
  EXPECT_EQ(ExponentialBuckets(0.001, 10, 3), (std::vector<double>{0.001, 0.01, 0.1}));
  EXPECT_EQ(LinearBuckets(1, 2, 3), (std::vector<double>{1, 3, 5}));
}

TEST(HistogramDeathTest, UnsortedBoundsAreABug) {
  EXPECT_DEATH(Histogram({2, 1}), "strictly increasing");
}

TEST(FamilyTest, AddReturnsStableChildPerLabelSet) {
  Registry registry;
  Family<Counter>& family = registry.AddCounter("requests_total", "Requests.");
  Counter& first = family.Add({{"method", "get"}});
  Counter& other = family.Add({{"method", "put"}});
  for (int index = 0; index < 100; ++index) family.Add({{"method", std::to_string(index)}});
  EXPECT_EQ(&family.Add({{"method", "get"}}), &first);
  EXPECT_NE(&first, &other);
  EXPECT_EQ(family.size(), 102u);
  EXPECT_TRUE(family.Has({{"method", "put"}}));
  family.Remove({{"method", "put"}});
  EXPECT_FALSE(family.Has({{"method", "put"}}));
}

TEST(RegistryTest, SameNameAndTypeReturnsSameFamily) {
  Registry registry;
  Family<Gauge>& first = registry.AddGauge("g", "help");
  EXPECT_EQ(&registry.AddGauge("g", "other help"), &first);
}

TEST(RegistryDeathTest, NameReusedWithAnotherTypeIsABug) {
  Registry registry;
  registry.AddGauge("g", "help");
  EXPECT_DEATH(registry.AddCounter("g", "help"), "already registered as a gauge");
}

TEST(RegistryDeathTest, InvalidNamesAreBugs) {
  Registry registry;
  EXPECT_DEATH(registry.AddCounter("bad-name", "help"), "invalid metric name");
  Family<Histogram>& histogram = registry.AddHistogram("h", "help", {1});
  EXPECT_DEATH(histogram.Add({{"le", "1"}}), "reserved");
  Family<Counter>& counter = registry.AddCounter("c", "help");
  EXPECT_DEATH(counter.Add({{"__name__", "x"}}), "invalid label name");
}

TEST(RegistryTest, ConcurrentUpdatesAndScrapesLoseNothing) {
  Registry registry;
  Family<Counter>& counters = registry.AddCounter("events_total", "Events.");
  Family<Histogram>& histograms = registry.AddHistogram("sizes", "Sizes.", {10, 100});
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
  const HistogramSnapshot snapshot = histograms.Add({}).Snapshot();
  EXPECT_EQ(snapshot.count, static_cast<uint64_t>(kThreads * kEventsPerThread));
  EXPECT_EQ(snapshot.cumulative_counts.back(), snapshot.count);
}

}  // namespace
}  // namespace gtco::metrics
