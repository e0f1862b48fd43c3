// Scheduling priority of a process's background threads: work that can wait (the server's
// searches, its lowering of candidates and its cost-model training, each in threads that hold no
// lock, so no request waits on them) yields the CPU to latency measurements running on the same
// host (a local farm: server and worker on one machine).
#pragma once

#include <functional>

namespace gtco::util {

/// Gives the calling thread the lowest CPU priority (nice 19 on Linux, where it is per thread);
/// threads it starts afterwards inherit it. A worker timing a 2-thread kernel on a 2-core host
/// then keeps both cores, provided its kernel threads are pinned (runtime::ThreadPlacement):
/// unpinned, a busy nice-19 process still made a 1x1 conv measure 628 µs instead of 224 (pinned,
/// 223). Returns false where the platform refuses (the thread keeps its priority).
bool MakeCurrentThreadBackground();

/// Runs `work` to completion in a new thread of the lowest priority (MakeCurrentThreadBackground)
/// and returns after it. For work the caller would do itself but that can wait; it must hold no
/// lock a request could wait on.
void RunInBackground(const std::function<void()>& work);

/// The calling thread's nice value (0 for a normal thread), or 0 where there is none.
int CurrentThreadNice();

}  // namespace gtco::util
