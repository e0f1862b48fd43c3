// Scheduling priority of a process's background threads: work that can wait (the server's
// lowering of candidates and its cost-model training, each in threads that hold no lock, so no
// request waits on them) yields the CPU to latency measurements running on the same host (a
// local farm: server and worker on one machine).
#pragma once

namespace gtco::util {

/// Gives the calling thread the lowest CPU priority (nice 19 on Linux, where it is per thread);
/// threads it starts afterwards inherit it. The CPU scheduler then runs it only on cores the
/// host's other processes leave idle: a worker timing a 2-thread kernel on a 2-core host keeps
/// both cores and the memory bandwidth (a memory-streaming process on the other core doubled a
/// 1x1 convolution's time, 213 -> 463 us; at nice 19 it measured 217). Returns false where the
/// platform refuses (the thread keeps its priority).
bool MakeCurrentThreadBackground();

/// The calling thread's nice value (0 for a normal thread), or 0 where there is none.
int CurrentThreadNice();

}  // namespace gtco::util
