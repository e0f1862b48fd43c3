// NVRTC: compiles generated CUDA C to a cubin for one architecture and reads back the resources
// the kernel uses (registers, spills, shared memory, stack) from ptxas' report. The only place
// nvrtcResult is converted to absl::Status. libnvrtc is loaded at run time (dlopen), from the
// CUDA toolkit or the `nvidia-cuda-nvrtc` Python wheel, so no GPU and no toolkit are needed to
// compile; a build configured with -DGTCO_WITH_CUDA=OFF has no NVRTC at all.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace gtco::codegen {

/// Resources of one compiled kernel as ptxas reports them.
struct CudaResourceUsage {
  int registers = 0;             ///< per thread
  int64_t static_shared_bytes = 0;
  int64_t spill_store_bytes = 0;
  int64_t spill_load_bytes = 0;
  int64_t stack_bytes = 0;
};

struct CompiledCuda {
  std::string cubin;  ///< SASS for exactly `arch`
  std::string log;    ///< compiler and ptxas messages
  CudaResourceUsage usage;  ///< of the kernel named at compile time
  double compile_seconds = 0;
};

/// True unless this build was configured with -DGTCO_WITH_CUDA=OFF.
bool NvrtcBuilt();
/// OK when libnvrtc is loaded (the first call loads it; thread-safe). Otherwise UNAVAILABLE with
/// every place it looked and how to install it (or, in a build without CUDA, that it was
/// configured off).
absl::Status NvrtcLoadStatus();
/// True when NvrtcLoadStatus() is OK.
bool NvrtcAvailable();
/// The file libnvrtc was loaded from, or "" when it is not loaded.
std::string NvrtcLibraryPath();
/// NVRTC's version as "major.minor", or "" without NVRTC.
std::string NvrtcVersion();
/// How many kernels CompileCuda has compiled in this process so far.
int64_t NvrtcCompiledCount();

/// Compiles `source` for `arch` ("sm_80", "sm_90", "sm_90a", ...) with NVRTC's default optimization and
/// reports `entry`'s resource usage. INVALID_ARGUMENT with the compiler log when the source does
/// not compile; UNAVAILABLE (NvrtcLoadStatus()'s message) when libnvrtc cannot be loaded.
/// Thread-safe.
absl::StatusOr<CompiledCuda> CompileCuda(const std::string& source, const std::string& entry,
                                         const std::string& arch);

/// Parses ptxas' verbose report ("ptxas info : Used 64 registers, used 1 barriers, 16 bytes
/// stack frame, 8 bytes spill stores, ...") for function `entry`; exposed for tests.
CudaResourceUsage ParsePtxasReport(const std::string& log, const std::string& entry);

}  // namespace gtco::codegen
