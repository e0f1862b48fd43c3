// NVRTC: compiles generated CUDA C to a cubin for one architecture and reads back the resources
// the kernel uses (registers, spills, shared memory, stack) from ptxas' report. The only place
// nvrtcResult is converted to absl::Status. Available only in builds with the CUDA toolkit
// (GTCO_HAVE_NVRTC); elsewhere CompileCuda answers UNAVAILABLE.
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

/// True when this build links NVRTC.
bool NvrtcAvailable();
/// NVRTC's version as "major.minor", or "" without NVRTC.
std::string NvrtcVersion();

/// Compiles `source` for `arch` ("sm_80", "sm_90", "sm_90a", ...) with NVRTC's default optimization and
/// reports `entry`'s resource usage. INVALID_ARGUMENT with the compiler log when the source does
/// not compile; UNAVAILABLE when the build has no NVRTC. Thread-safe.
absl::StatusOr<CompiledCuda> CompileCuda(const std::string& source, const std::string& entry,
                                         const std::string& arch);

/// Parses ptxas' verbose report ("ptxas info : Used 64 registers, used 1 barriers, 16 bytes
/// stack frame, 8 bytes spill stores, ...") for function `entry`; exposed for tests.
CudaResourceUsage ParsePtxasReport(const std::string& log, const std::string& entry);

}  // namespace gtco::codegen
