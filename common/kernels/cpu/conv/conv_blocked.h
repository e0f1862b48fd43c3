// Internal to cpu/conv: what the conv sketches on the register-blocked FMA micro-kernels share
// (the implicit-GEMM ones in conv_sketch.cc, Winograd's in conv_winograd_sketch.cc): an FMA spec
// and the blocked sketch's knobs over f32 conv workloads.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/kernels/cpu/matmul_blocked/matmul_blocked.h"
#include "common/kernels/family.h"

namespace gtco::kernels::internal {

/// Floats a kernel's local buffer may hold (the code generator's 4 MiB stack limit).
inline constexpr int64_t kMaxLocalFloats = int64_t{1} << 20;

/// The rows of an M block as the plan makes them (MakeBlockedPlan: mc rounded up to whole
/// register tiles, all of M in one block when that covers it).
inline int64_t BlockRows(const ir::MatMulParams& view, int64_t mr, int64_t mc) {
  return std::min(RoundUp(mc, std::min(mr, view.m)), view.m);
}

/// A conv sketch whose knobs are the blocked sketch's; each subclass says how it views the conv
/// as GEMMs (its Knobs, PruneRule and Lower).
class BlockedConvSketch : public LoopSketch {
 public:
  explicit BlockedConvSketch(FmaMappingSpec spec) : spec_(std::move(spec)) {}

  const FmaMappingSpec& spec() const { return spec_; }
  const char* Name() const override { return spec_.sketch_name; }
  std::vector<std::string> KnobNames() const override {
    return {"mr", "nr", "kc", "mc", "nc", "par", "unroll_k", "pack_a", "pack_b"};
  }
  /// Every f32 conv (a mapping explains the shapes its sketch does not lower away).
  bool AppliesTo(const ir::Workload& w) const override {
    return w.anchor == ir::AnchorKind::kConv && !w.conv.x_pairs;
  }
  bool Admits(const ir::Workload& w, const target::HardwareInfo& hw,
              const KnobValues& values) const override {
    return PruneRule(w, hw, values) == nullptr;
  }

 protected:
  FmaMappingSpec spec_;
};

}  // namespace gtco::kernels::internal
