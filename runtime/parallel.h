// Runtime support called by generated CPU kernels, in the JIT (worker) and in exported
// artifacts (runtime/): the process-wide parallel-for thread pool, and the AMX tile state the
// process must ask Linux for. Depends on nothing of the farm.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

/// Called by generated code for ForKind::kParallel loops: runs body(i, closure) for i in [0, n)
/// on a process-wide thread pool (the iterations cut into chunks that the calling thread and the
/// pool's threads claim as they come free) and returns when all are done. Calls made from inside a
/// running body (nested parallel loops) and calls while another thread's parallel-for is running
/// wait or run serially; they never deadlock. Registered in every CpuJit as an absolute symbol
/// named "gtco_parallel_for".
extern "C" void gtco_parallel_for(int64_t n, void (*body)(int64_t, void*), void* closure);

namespace gtco::runtime {

/// Where the pool's threads run.
enum class ThreadPlacement {
  kFree,  ///< wherever the OS schedules them (the default)
  /// Each on its own core of the process's affinity mask: the thread that runs a parallel loop
  /// on the first core (bound when it first runs one on this pool, and left bound), the pool's
  /// thread i on the i-th (round robin past the mask's size). For a process that times kernels
  /// beside other work: unbound, the scheduler can stack both threads of a 2-thread loop on one
  /// core while another process holds the other, even one of the lowest priority (nice 19 or
  /// SCHED_IDLE), and a kernel then measures 2-3x slower than it runs.
  kPinned,
};

/// Sets the number of threads parallel loops use, the caller included (<= 0: the hardware
/// concurrency, the default), and where they run. Do not call while kernels are running.
void SetParallelThreads(int threads, ThreadPlacement placement = ThreadPlacement::kFree);

/// The number of threads parallel loops currently use.
int ParallelThreads();

/// Asks Linux, once per process, for the AMX tile data state (arch_prctl(ARCH_REQ_XCOMP_PERM,
/// XFEATURE_XTILEDATA), Linux 5.16+); without it the first tile instruction kills the process
/// with SIGILL. True when granted (every thread of the process may then use the tiles), false
/// on a CPU or kernel without AMX. Thread-safe; later calls return the first answer.
bool AmxTileStateUsable();

/// Removes the amx* flags (cpuinfo spellings) from `flags` when amx_tile is among them and
/// AmxTileStateUsable() is false; true when it removed them.
bool DropAmxUnlessUsable(std::vector<std::string>* flags);

}  // namespace gtco::runtime
