// Background threads: the lowest priority for the calling thread only, inherited by the threads
// it starts.
#include "common/util/thread_priority.h"

#include <gtest/gtest.h>

#include <thread>

namespace gtco::util {
namespace {

TEST(ThreadPriorityTest, BackgroundIsPerThreadAndInherited) {
#ifndef __linux__
  GTEST_SKIP() << "per-thread priorities are Linux's";
#endif
  const int before = CurrentThreadNice();
  int background = -100, child = -100;
  std::thread worker([&] {
    ASSERT_TRUE(MakeCurrentThreadBackground());
    background = CurrentThreadNice();
    std::thread grandchild([&] { child = CurrentThreadNice(); });
    grandchild.join();
  });
  worker.join();
  EXPECT_EQ(background, 19);
  EXPECT_EQ(child, 19);
  // The calling thread (and the rest of the process) keeps its priority.
  EXPECT_EQ(CurrentThreadNice(), before);
  int sibling = -100;
  std::thread later([&] { sibling = CurrentThreadNice(); });
  later.join();
  EXPECT_EQ(sibling, before);
}

TEST(ThreadPriorityTest, RunInBackgroundRunsTheWorkAtNice19AndReturnsAfterIt) {
#ifndef __linux__
  GTEST_SKIP() << "per-thread priorities are Linux's";
#endif
  const int before = CurrentThreadNice();
  int seen = -100;
  RunInBackground([&] { seen = CurrentThreadNice(); });
  EXPECT_EQ(seen, 19);  // written before RunInBackground returned
  EXPECT_EQ(CurrentThreadNice(), before);
}

}  // namespace
}  // namespace gtco::util
