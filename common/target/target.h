// Target and hardware description: what a worker reports at registration and what schedules
// and the resource model are generated against.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gtco::target {

/// Facts about one measuring machine. For CPUs: features use /proc/cpuinfo spellings
/// ("avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", ...).
struct HardwareInfo {
  std::string target = "cpu";  ///< "cpu" or "cuda"
  std::string cpu_model;
  std::vector<std::string> cpu_features;
  int cores = 1;
  int64_t l1d_bytes = 32 * 1024;
  int64_t l2_bytes = 1024 * 1024;
  int64_t l3_bytes = 32 * 1024 * 1024;
  int64_t memory_bytes = 0;

  bool HasFeature(const std::string& feature) const;
  /// Widest fp32 SIMD width in lanes: 16 with avx512f, 8 with avx/avx2, 4 otherwise.
  int MaxFloatLanes() const;
  /// One line, e.g. "AMD EPYC 9R14 (2 cores, avx512f avx2 fma)".
  std::string Summary() const;
};

/// Reads the host's CPU model, features, core count and cache sizes (from /proc/cpuinfo,
/// sysconf and /sys). Never fails: unknown facts keep their defaults.
HardwareInfo DetectHostCpu();

}  // namespace gtco::target
