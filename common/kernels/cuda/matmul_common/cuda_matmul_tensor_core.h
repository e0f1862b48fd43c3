// The sketch shape shared by the mma.sync tensor-core matmuls ("cuda_mm_tf32/v1",
// "cuda_mm_tf32_split/v1" and "cuda_mm_mma/v1"): knobs bm, bn, bk (block tile), wm, wn (warp
// tile), stages (cp.async pipeline depth), and for a split sketch split (blocks of a cluster
// sharing one output tile's K); plans from TensorCoreTiling; pruning by the GPU resource rules,
// then "exceeds_shape" and "grid_limit". The sketches differ only in their TensorCoreSpec.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/kernels/cuda/matmul_common/cuda_matmul_common.h"
#include "common/kernels/family.h"
#include "common/schedule/cuda_sketch.h"

namespace gtco::kernels::cuda_matmul {

/// What distinguishes one tensor-core matmul sketch.
struct TensorCoreSpec {
  const char* sketch_name;
  int64_t mma_m, mma_n, mma_k;        ///< the mma.sync instruction's shape
  std::vector<int64_t> bk_values;     ///< candidates, default first
  std::vector<int64_t> stage_values;  ///< candidates, default first
  int64_t pad_k_contiguous, pad_k_strided;
  /// Warp tiles' n extent must be a multiple of this (16 where ldmatrix.x4 loads two n8 tiles).
  int64_t warp_n_multiple;
  /// The family's kernel generator.
  CudaGenerator generator;
  /// Candidates of a seventh knob "split" (K split across a thread-block cluster, sm_90),
  /// default first; empty: the sketch has six knobs and no split.
  std::vector<int64_t> split_values;
};

/// A CudaSketch over TensorCoreTiling; applies to every matmul with operands A and B (the
/// mapping checks their dtypes).
class TensorCoreMatMulSketch final : public CudaSketch {
 public:
  explicit TensorCoreMatMulSketch(TensorCoreSpec spec) : spec_(std::move(spec)) {}

  const TensorCoreSpec& spec() const { return spec_; }
  const char* Name() const override { return spec_.sketch_name; }
  CudaGenerator Generator() const override { return spec_.generator; }
  std::vector<std::string> KnobNames() const override;
  bool AppliesTo(const ir::Workload& w) const override {
    return w.anchor == ir::AnchorKind::kMatMul && w.inputs.size() >= 2;
  }
  std::vector<Knob> Knobs(const ir::Workload& w, const target::HardwareInfo& hw) const override;
  CudaPlan Plan(const ir::Workload& w, const KnobValues& values) const override;
  const char* PruneRule(const ir::Workload& w, const target::HardwareInfo& hw,
                        const KnobValues& values) const override;
  bool Admits(const ir::Workload& w, const target::HardwareInfo& hw,
              const KnobValues& values) const override {
    return PruneRule(w, hw, values) == nullptr;
  }

  /// The tiling of (w, values) (no range checks).
  TensorCoreTiling Tiling(const ir::Workload& w, const KnobValues& values) const;

 private:
  TensorCoreSpec spec_;
};

}  // namespace gtco::kernels::cuda_matmul
