// The parallel-for pool's thread placement: pinned pools bind the calling thread and each pool
// thread to a core of their own; free pools leave the affinity alone.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <chrono>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/parallel.h"

namespace gtco::runtime {
namespace {

std::vector<int> CoresOf(pthread_t thread) {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cores;
  if (pthread_getaffinity_np(thread, sizeof(set), &set) != 0) return cores;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cores.push_back(cpu);
  }
  return cores;
}

struct Seen {
  std::mutex mutex;
  std::map<pthread_t, std::vector<int>> cores;  ///< each participating thread's affinity
};

void Record(int64_t, void* closure) {
  auto* seen = static_cast<Seen*>(closure);
  {
    std::lock_guard<std::mutex> lock(seen->mutex);
    seen->cores[pthread_self()] = CoresOf(pthread_self());
  }
  // Long enough that the pool's thread claims iterations before the caller has run them all.
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

class ParallelPlacementTest : public ::testing::Test {
 protected:
  void SetUp() override {
    allowed_ = CoresOf(pthread_self());
    if (allowed_.size() < 2) GTEST_SKIP() << "needs 2 cores in the affinity mask";
  }
  void TearDown() override {
    SetParallelThreads(0);
    if (allowed_.empty()) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int cpu : allowed_) CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  }
  std::vector<int> allowed_;
};

TEST_F(ParallelPlacementTest, PinnedPoolsRunEachThreadOnACoreOfItsOwn) {
  SetParallelThreads(2, ThreadPlacement::kPinned);
  Seen seen;
  gtco_parallel_for(64, Record, &seen);
  ASSERT_EQ(seen.cores.size(), 2u) << "both threads take part";
  const std::vector<int> caller = CoresOf(pthread_self());
  ASSERT_EQ(caller, std::vector<int>{allowed_[0]}) << "the caller runs on the mask's first core";
  for (const auto& [thread, cores] : seen.cores) {
    ASSERT_EQ(cores.size(), 1u);
    if (!pthread_equal(thread, pthread_self())) EXPECT_EQ(cores[0], allowed_[1]);
  }
}

TEST_F(ParallelPlacementTest, FreePoolsLeaveTheAffinityAlone) {
  SetParallelThreads(2);
  Seen seen;
  gtco_parallel_for(64, Record, &seen);
  ASSERT_EQ(seen.cores.size(), 2u);
  for (const auto& [thread, cores] : seen.cores) EXPECT_EQ(cores, allowed_);
}

}  // namespace
}  // namespace gtco::runtime
