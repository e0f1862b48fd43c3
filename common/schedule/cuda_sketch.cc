// The GPU resource model: occupancy from threads, shared memory and registers.
#include "common/schedule/cuda_sketch.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/util/status.h"

namespace gtco::schedule {
namespace {

constexpr int kWarpSize = 32;
constexpr int kMaxRegistersPerThread = 255;
constexpr int64_t kMinResidentWarps = 4;
/// Registers are allocated per warp in units of 256.
constexpr int64_t kRegisterAllocationUnit = 256;

int64_t RegistersPerWarp(int registers_per_thread) {
  int64_t per_warp = int64_t{registers_per_thread} * kWarpSize;
  return (per_warp + kRegisterAllocationUnit - 1) / kRegisterAllocationUnit *
         kRegisterAllocationUnit;
}

}  // namespace

int64_t CudaBlocksPerSm(const target::HardwareInfo& hw, const CudaPlan& plan) {
  const int64_t threads = plan.Threads();
  if (threads <= 0) return 0;
  const int64_t warps = (threads + kWarpSize - 1) / kWarpSize;
  int64_t blocks = hw.max_blocks_per_sm > 0 ? hw.max_blocks_per_sm : 32;
  if (hw.max_threads_per_sm > 0) blocks = std::min(blocks, hw.max_threads_per_sm / threads);
  if (plan.dynamic_shared_bytes > 0 && hw.shared_bytes_per_sm > 0) {
    // Each resident block also reserves 1 KiB of shared memory for the system.
    blocks = std::min(blocks, hw.shared_bytes_per_sm / (plan.dynamic_shared_bytes + 1024));
  }
  if (hw.registers_per_sm > 0) {
    blocks = std::min(blocks, hw.registers_per_sm / (warps * RegistersPerWarp(plan.est_registers)));
  }
  return std::max<int64_t>(0, blocks);
}

const char* CudaResourceRule(const target::HardwareInfo& hw, const CudaPlan& plan) {
  const int64_t threads = plan.Threads();
  const int max_threads = hw.max_threads_per_block > 0 ? hw.max_threads_per_block : 1024;
  if (threads <= 0 || threads > max_threads || threads % kWarpSize != 0) {
    return "threads_per_block";
  }
  if (hw.shared_bytes_per_block > 0 && plan.dynamic_shared_bytes > hw.shared_bytes_per_block) {
    return "shared_memory";
  }
  const int64_t warps = threads / kWarpSize;
  if (plan.est_registers > kMaxRegistersPerThread ||
      (hw.registers_per_block > 0 &&
       warps * RegistersPerWarp(plan.est_registers) > hw.registers_per_block)) {
    return "register_file";
  }
  if (CudaBlocksPerSm(hw, plan) * warps < kMinResidentWarps) return "occupancy";
  return nullptr;
}

std::string MissingCudaArch(const target::HardwareInfo& hw, int min_sm) {
  if (hw.target != target::Target::kCuda) return "needs an NVIDIA GPU (target cuda)";
  if (hw.SmVersion() < min_sm) {
    return absl::StrCat("needs compute capability ", min_sm / 10, ".", min_sm % 10,
                        " or newer (device: ", hw.sm_major, ".", hw.sm_minor, ")");
  }
  return "";
}

}  // namespace gtco::schedule
