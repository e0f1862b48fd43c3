// Runtime support called by generated CPU kernels, in the JIT (worker) and in exported
// artifacts (runtime/): the process-wide parallel-for thread pool. Depends on nothing of the farm.
#pragma once

#include <cstdint>

/// Called by generated code for ForKind::kParallel loops: runs body(i, closure) for i in [0, n)
/// on a process-wide thread pool (static contiguous partition, the calling thread takes the
/// first share) and returns when all are done. Calls made from inside a running body (nested
/// parallel loops) and calls while another thread's parallel-for is running wait or run
/// serially; they never deadlock. Registered in every CpuJit as an absolute symbol named
/// "gtco_parallel_for".
extern "C" void gtco_parallel_for(int64_t n, void (*body)(int64_t, void*), void* closure);

namespace gtco::runtime {

/// Sets the number of threads parallel loops use, the caller included (<= 0: the hardware
/// concurrency, the default). Do not call while kernels are running.
void SetParallelThreads(int threads);

/// The number of threads parallel loops currently use.
int ParallelThreads();

}  // namespace gtco::runtime
