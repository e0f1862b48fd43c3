// The TF32 tensor-core matmul sketch "cuda_mm_tf32/v1" and its mapping "tf32_mma": f32 operands
// rounded to TF32 (cvt.rna) and multiplied by mma.sync.m16n8k8 with f32 accumulation, fed by a
// cp.async multistage pipeline (sm_80+); and "cuda_mm_tf32_split/v1" ("tf32_mma_split", sm_90),
// the same kernel with K split across a thread-block cluster. Kernels: generator.cc.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/kernels/cuda/matmul_common/cuda_matmul_tensor_core.h"
#include "common/kernels/cuda/matmul_tf32/generator.h"
#include "common/kernels/family.h"

namespace gtco::kernels {
namespace {

/// Candidates of bk, smallest last: a K of one such tile leaves nothing to split.
constexpr int64_t kSmallestBk = 16;

/// "tf32_mma" (`split` false, sm_80+) or "tf32_mma_split" (sm_90): the same kernel with K split
/// across a thread-block cluster, for matmuls with too few output tiles to fill the GPU (a batch-1
/// transformer's 197 rows): `split` blocks share one output tile, each summing a slice of K, and
/// add their partial tiles through distributed shared memory before the epilogue. One kernel, no
/// workspace, no atomics: the sum's order is fixed.
class Tf32MatMulMapping final : public CudaMappingSketch {
 public:
  explicit Tf32MatMulMapping(bool split)
      : split_(split),
        sketch_({split ? "cuda_mm_tf32_split/v1" : "cuda_mm_tf32/v1",
                 /*mma_m=*/16,
                 /*mma_n=*/8,
                 /*mma_k=*/8,
                 /*bk_values=*/{32, kSmallestBk},
                 /*stage_values=*/{3, 2, 4}, cuda_matmul::kTf32PadKContiguous,
                 cuda_matmul::kTf32PadKStrided,
                 /*warp_n_multiple=*/8, &GenerateTf32MatMul,
                 /*split_values=*/split ? std::vector<int64_t>{4, 2, 8} : std::vector<int64_t>{}}) {}

  const char* Name() const override { return split_ ? "tf32_mma_split" : "tf32_mma"; }
  const CudaSketch& cuda_sketch() const override { return sketch_; }
  MappingVerdict Explain(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    std::string reason = MissingCudaArch(hw, split_ ? 90 : 80);
    if (reason.empty()) reason = NonF32Operands(w);
    if (!reason.empty()) return {Name(), false, reason};
    if (!split_) {
      return {Name(), true,
              absl::StrCat("sm_", hw.SmVersion(),
                           " tensor cores: f32 operands rounded to TF32, mma.sync m16n8k8 with f32 "
                           "accumulation")};
    }
    // Two K tiles of the smallest bk at least, else every split would leave a block idle.
    if (w.matmul.k <= kSmallestBk) {
      return {Name(), false,
              absl::StrCat("K = ", w.matmul.k, " is one K tile (", kSmallestBk,
                           "): nothing to split across a cluster")};
    }
    return {Name(), true,
            absl::StrCat("sm_", hw.SmVersion(),
                         " tensor cores (TF32 mma.sync m16n8k8), K split across a thread-block "
                         "cluster whose blocks add their partial tiles in distributed shared "
                         "memory")};
  }

 private:
  bool split_;
  cuda_matmul::TensorCoreMatMulSketch sketch_;
};

}  // namespace

const MappingSketch& CudaTf32MatMulMapping() {
  static const Tf32MatMulMapping* const mapping = new Tf32MatMulMapping(/*split=*/false);
  return *mapping;
}

const MappingSketch& CudaTf32SplitMatMulMapping() {
  static const Tf32MatMulMapping* const mapping = new Tf32MatMulMapping(/*split=*/true);
  return *mapping;
}

}  // namespace gtco::kernels
