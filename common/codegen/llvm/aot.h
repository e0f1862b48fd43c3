// Ahead-of-time compilation of generated CPU kernels into one shared object (what an exported
// artifact carries): the kernels' modules linked into one, optimized at O3 for a named x86-64
// level, emitted as a position-independent object and linked by the system's C compiler driver.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gtco::codegen {

/// What the code is compiled for: an x86-64 micro-architecture level and the CPU features
/// (cpuinfo spellings) a host needs to run it.
struct AotTarget {
  std::string cpu;                    ///< LLVM CPU name: "x86-64-v2", "x86-64-v3", "x86-64-v4"
  std::vector<std::string> features;  ///< cpuinfo spellings, sorted (e.g. "avx2", "fma")
  std::vector<std::string> extra_llvm_features;  ///< e.g. "+avx512bf16" for low-precision kernels
  /// LLVM CPU whose scheduling model and tuning the code follows ("tune-cpu"; "" or "generic":
  /// the level's generic tuning). It changes no instruction the code may use, only their order
  /// and choice among equivalents.
  std::string tune_cpu;
};

/// This host's CPU as LLVM names it (llvm::sys::getHostCPUName, e.g. "znver3"): what the farm's
/// JIT (CpuJit) tunes the kernels it measures for; "generic" where LLVM does not know it.
std::string HostTuneCpu();

/// The highest level every feature of which `host_features` (cpuinfo spellings) has, capped at
/// `cap` ("" = none; else one of the level names or "avx2"/"avx512" as aliases of v3/v4).
/// INVALID_ARGUMENT for an unknown cap.
absl::StatusOr<AotTarget> AotTargetFor(const std::vector<std::string>& host_features,
                                       const std::string& cap);

/// The cpuinfo features of level `isa` (a level name or "avx2"/"avx512"); INVALID_ARGUMENT for
/// an unknown one.
absl::StatusOr<std::vector<std::string>> LevelFeatures(const std::string& isa);

/// Links `modules` (LLVM bitcode or text from EmitLlvmBitcode / EmitLlvmIr; their entry names
/// must differ) into one shared object for `target` and returns its bytes. Parallel loops call
/// through the exported pointer `gtco_rt_parallel_for`, which the loader sets (runtime/model.cc).
/// INVALID_ARGUMENT for unparsable modules or clashing entries; FAILED_PRECONDITION when no C
/// compiler driver (cc) is there to link.
absl::StatusOr<std::string> CompileSharedObject(const std::vector<std::string>& modules,
                                                const AotTarget& target);

}  // namespace gtco::codegen
