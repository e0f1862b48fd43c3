// Host CPU detection from /proc/cpuinfo, sysconf and sysfs.
#include "common/target/target.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "runtime/parallel.h"

namespace gtco::target {
namespace {

std::string Trim(const std::string& text) {
  size_t begin = text.find_first_not_of(" \t");
  size_t end = text.find_last_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  return text.substr(begin, end - begin + 1);
}

int64_t ReadCacheSize(int index) {
  std::ifstream file("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
  std::string text;
  if (!(file >> text) || text.empty()) return 0;
  int64_t multiplier = 1;
  char suffix = text.back();
  if (suffix == 'K') multiplier = 1024;
  if (suffix == 'M') multiplier = 1024 * 1024;
  if (multiplier != 1) text.pop_back();
  try {
    return std::stoll(text) * multiplier;
  } catch (...) {
    return 0;
  }
}

}  // namespace

absl::StatusOr<std::string> CpuIsaCap() {
  const char* value = std::getenv("GTCO_CPU_ISA");
  const std::string isa = value != nullptr ? value : "";
  if (isa.empty() || isa == "native") return std::string();
  if (isa == "avx2") return isa;
  return absl::InvalidArgumentError("GTCO_CPU_ISA='" + isa +
                                    "' is not one of native, avx2 (unset it to use the host's "
                                    "own CPU features)");
}

bool BeyondAvx2(const std::string& feature) {
  for (const char* prefix : {"avx512", "amx", "avx_vnni", "avxvnni", "avxifma", "avx_ifma"}) {
    if (feature.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

bool HardwareInfo::HasFeature(const std::string& feature) const {
  return std::find(cpu_features.begin(), cpu_features.end(), feature) != cpu_features.end();
}

int HardwareInfo::MaxFloatLanes() const {
  if (HasFeature("avx512f")) return 16;
  if (HasFeature("avx2") || HasFeature("avx")) return 8;
  return 4;
}

std::string HardwareInfo::Summary() const {
  std::ostringstream out;
  if (target == Target::kCuda) {
    out << (cpu_model.empty() ? std::string("unknown GPU") : cpu_model) << " (sm_" << SmVersion()
        << ", " << sm_count << " SMs, " << shared_bytes_per_block / 1024 << " KiB shared/block, "
        << l2_bytes / (1024 * 1024) << " MiB L2)";
    return out.str();
  }
  out << (cpu_model.empty() ? std::string("unknown CPU") : cpu_model) << " (" << cores
      << " cores";
  for (const char* feature :
       {"avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_int8", "avx2", "fma"}) {
    if (HasFeature(feature)) out << " " << feature;
  }
  out << ")";
  return out.str();
}

HardwareInfo DetectHostCpu() {
  HardwareInfo info;
  info.target = Target::kCpu;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = Trim(line.substr(0, colon));
    std::string value = Trim(line.substr(colon + 1));
    if (key == "model name" && info.cpu_model.empty()) info.cpu_model = value;
    if (key == "flags" && info.cpu_features.empty()) {
      std::istringstream flags(value);
      std::string flag;
      while (flags >> flag) info.cpu_features.push_back(flag);
      std::sort(info.cpu_features.begin(), info.cpu_features.end());
    }
  }
  // AMX counts only where Linux grants this process the tile state (asked for here, once): the
  // kernels that use it run in the process that detected it (worker, bench, tests).
  if (runtime::DropAmxUnlessUsable(&info.cpu_features)) {
    info.cpu_model += " [AMX tile state refused by the kernel]";
  }
  absl::StatusOr<std::string> cap = CpuIsaCap();
  if (cap.ok() && *cap == "avx2") {
    info.cpu_features.erase(
        std::remove_if(info.cpu_features.begin(), info.cpu_features.end(), BeyondAvx2),
        info.cpu_features.end());
    info.cpu_model += " [GTCO_CPU_ISA=avx2]";
  }
  info.cores = std::max(1u, std::thread::hardware_concurrency());
  if (int64_t l1 = ReadCacheSize(0)) info.l1d_bytes = l1;
  if (int64_t l2 = ReadCacheSize(2)) info.l2_bytes = l2;
  if (int64_t l3 = ReadCacheSize(3)) info.l3_bytes = l3;
  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page_size > 0) info.memory_bytes = static_cast<int64_t>(pages) * page_size;
  return info;
}

}  // namespace gtco::target

namespace gtco::target {

const char* TargetName(Target target) { return target == Target::kCuda ? "cuda" : "cpu"; }

absl::StatusOr<Target> ParseTarget(std::string_view name) {
  if (name == "cpu") return Target::kCpu;
  if (name == "cuda") return Target::kCuda;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown target '", std::string(name), "'; expected 'cpu' or 'cuda'"));
}

HardwareInfo CudaArchPreset(int sm) {
  HardwareInfo info;
  info.target = Target::kCuda;
  info.sm_major = sm / 10;
  info.sm_minor = sm % 10;
  info.registers_per_block = 65536;
  info.registers_per_sm = 65536;
  info.max_threads_per_block = 1024;
  info.max_threads_per_sm = 2048;
  info.max_blocks_per_sm = 32;
  info.cores = 1;
  if (sm >= 90) {
    info.cpu_model = "NVIDIA H100 SXM5 80GB (preset)";
    info.sm_count = 132;
    info.shared_bytes_per_block = 227 * 1024;
    info.shared_bytes_per_sm = 228 * 1024;
    info.l2_bytes = 50LL * 1024 * 1024;
  } else {
    info.cpu_model = "NVIDIA A100 SXM4 80GB (preset)";
    info.sm_count = 108;
    info.shared_bytes_per_block = 163 * 1024;
    info.shared_bytes_per_sm = 164 * 1024;
    info.l2_bytes = 40LL * 1024 * 1024;
  }
  info.memory_bytes = 80LL * 1024 * 1024 * 1024;
  return info;
}

}  // namespace gtco::target
