// Target and hardware description: what a worker reports at registration and what schedules
// and the resource model are generated against.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace gtco::target {

/// What a program is generated for and measured on. Spelled "cpu" / "cuda" on the command line,
/// in the protocol and in the database; a Target everywhere inside.
enum class Target { kCpu, kCuda };

/// "cpu" | "cuda".
const char* TargetName(Target target);
/// Parses "cpu" or "cuda". INVALID_ARGUMENT "unknown target 'X'; expected 'cpu' or 'cuda'".
absl::StatusOr<Target> ParseTarget(std::string_view name);

/// Facts about one measuring machine. For CPUs: features use /proc/cpuinfo spellings
/// ("avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", ...). For NVIDIA GPUs (target
/// "cuda") the gpu_* fields hold the device's attributes as the CUDA driver reports them
/// (l2_bytes and memory_bytes then describe the GPU); they are zero on CPU workers.
struct HardwareInfo {
  Target target = Target::kCpu;
  std::string cpu_model;       ///< for "cuda": the GPU's name, e.g. "NVIDIA H100 80GB HBM3"
  std::vector<std::string> cpu_features;
  int cores = 1;
  int64_t l1d_bytes = 32 * 1024;
  int64_t l2_bytes = 1024 * 1024;
  int64_t l3_bytes = 32 * 1024 * 1024;
  int64_t memory_bytes = 0;

  // ---- GPU facts (target "cuda") ----
  int sm_major = 0, sm_minor = 0;      ///< compute capability, e.g. 9.0
  int sm_count = 0;                    ///< streaming multiprocessors
  int64_t shared_bytes_per_block = 0;  ///< most shared memory one block may use (opt-in maximum)
  int64_t shared_bytes_per_sm = 0;
  int64_t registers_per_block = 0;     ///< 32-bit registers
  int64_t registers_per_sm = 0;
  int max_threads_per_block = 0;
  int max_threads_per_sm = 0;
  int max_blocks_per_sm = 0;

  /// Compute capability as one number: 80 for 8.0, 90 for 9.0 (0 on CPUs).
  int SmVersion() const { return sm_major * 10 + sm_minor; }
  bool HasFeature(const std::string& feature) const;
  /// Widest fp32 SIMD width in lanes: 16 with avx512f, 8 with avx/avx2, 4 otherwise.
  int MaxFloatLanes() const;
  /// One line, e.g. "AMD EPYC 9R14 (2 cores, avx512f avx2 fma)".
  std::string Summary() const;
};

/// Reads the host's CPU model, features, core count and cache sizes (from /proc/cpuinfo,
/// sysconf and /sys), with the features capped by GTCO_CPU_ISA (CpuIsaCap; an invalid value is
/// left to CpuIsaCap's callers to report). Never fails: unknown facts keep their defaults.
HardwareInfo DetectHostCpu();

/// The ISA cap from the environment variable GTCO_CPU_ISA: "" (unset or "native": the host's
/// own features) or "avx2": the host is treated as one with AVX2 + FMA only (no AVX-512, AMX or
/// AVX-VNNI) by feature detection (hence mappings and a worker's registration) and by the JIT's
/// code generation alike: for tuning for an AVX2-only deployment target on a bigger host, or
/// checking the AVX2 path there. INVALID_ARGUMENT for any other value.
absl::StatusOr<std::string> CpuIsaCap();

/// Whether `feature` (a /proc/cpuinfo or an LLVM spelling) is beyond AVX2 + FMA.
bool BeyondAvx2(const std::string& feature);

/// The published limits of a data-center GPU of compute capability `sm` (80: A100-SXM4-80GB,
/// 90: H100-SXM5-80GB), for generating and checking CUDA code where no GPU is at hand (CI, the
/// server before any CUDA worker registered). INVALID_ARGUMENT-free: an unknown `sm` gets the
/// sm_80 limits with its own compute capability.
HardwareInfo CudaArchPreset(int sm);

}  // namespace gtco::target
