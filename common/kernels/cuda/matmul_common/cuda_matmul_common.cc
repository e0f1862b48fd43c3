// Layouts, tilings, shape rules and default selection shared by the CUDA matmul sketches.
#include "common/kernels/cuda/matmul_common/cuda_matmul_common.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/kernels/cpu/matmul_blocked/matmul_blocked.h"
#include "common/kernels/family.h"
#include "common/util/status.h"

namespace gtco::kernels::cuda_matmul {

bool IsFloatDType(ir::DType dtype) { return dtype == ir::DType::kF32 || Is16BitFloat(dtype); }

bool Is16BitFloat(ir::DType dtype) { return dtype == ir::DType::kF16 || dtype == ir::DType::kBF16; }

int64_t Vector16Elements(ir::DType dtype) { return 16 / ir::DTypeSize(dtype); }

int64_t WidestAlignedChunk(int64_t contiguous_extent, ir::DType dtype) {
  const int64_t elem_bytes = ir::DTypeSize(dtype);
  for (int64_t chunk_bytes : {16, 8, 4}) {
    const int64_t elements = chunk_bytes / elem_bytes;
    if (elements >= 1 && contiguous_extent % elements == 0) return elements;
  }
  return 1;
}

bool TileExceeds(int64_t tile, int64_t extent, int64_t smallest) {
  return tile >= 2 * std::max(extent, smallest);
}

absl::Status CheckCudaMatMul(const ir::Workload& w) {
  if (w.anchor != ir::AnchorKind::kMatMul) {
    return absl::InvalidArgumentError("CUDA matmul kernels need a matmul workload");
  }
  GTCO_RETURN_IF_ERROR(internal::CheckMatMulShapes(w));
  const ir::MatMulParams& p = w.matmul;
  constexpr int64_t kMaxIndex = std::numeric_limits<int32_t>::max();
  if (p.m > kMaxIndex || p.n > kMaxIndex || p.k > kMaxIndex) {
    return absl::InvalidArgumentError(
        absl::StrCat("matmul ", w.Description(), " has a dimension beyond 2^31-1"));
  }
  return absl::OkStatus();
}

SimtTiling MakeSimtTiling(const KnobValues& values) {
  SimtTiling tiling;
  tiling.bm = values[kSimtBm];
  tiling.bn = values[kSimtBn];
  tiling.bk = values[kSimtBk];
  tiling.tm = values[kSimtTm];
  tiling.tn = values[kSimtTn];
  tiling.stages = static_cast<int>(values[kSimtStages]);
  tiling.vw_a = values[kSimtVwA];
  tiling.vw_b = values[kSimtVwB];
  return tiling;
}

TensorCoreTiling MakeTensorCoreTiling(const ir::Workload& w, int64_t bm, int64_t bn, int64_t bk,
                                      int64_t wm, int64_t wn, int stages, int64_t pad_k_contiguous,
                                      int64_t pad_k_strided) {
  const ir::MatMulParams& p = w.matmul;
  TensorCoreTiling tiling;
  tiling.bm = bm;
  tiling.bn = bn;
  tiling.bk = bk;
  tiling.wm = wm;
  tiling.wn = wn;
  tiling.stages = stages;
  tiling.elem_bytes = ir::DTypeSize(w.inputs[0].dtype);
  tiling.a_k_contiguous = AKContiguous(p);
  tiling.b_k_contiguous = BKContiguous(p);
  if (tiling.a_k_contiguous) {
    tiling.a_rows = bm;
    tiling.a_stride = bk + pad_k_contiguous;
  } else {
    tiling.a_rows = bk;
    tiling.a_stride = bm + pad_k_strided;
  }
  if (tiling.b_k_contiguous) {
    tiling.b_rows = bn;
    tiling.b_stride = bk + pad_k_contiguous;
  } else {
    tiling.b_rows = bk;
    tiling.b_stride = bn + pad_k_strided;
  }
  tiling.vw_a = WidestAlignedChunk(AContiguousExtent(p), w.inputs[0].dtype);
  tiling.vw_b = WidestAlignedChunk(BContiguousExtent(p), w.inputs[1].dtype);
  return tiling;
}

CudaPlan TensorCorePlan(const ir::Workload& w, const TensorCoreTiling& tiling) {
  const ir::MatMulParams& p = w.matmul;
  CudaPlan plan;
  const int64_t n_tiles = tiling.bn > 0 ? CeilDiv(p.n, tiling.bn) : 1;
  plan.grid_x = n_tiles * std::max<int64_t>(1, tiling.split);
  plan.grid_y = tiling.bm > 0 ? CeilDiv(p.m, tiling.bm) : 1;
  plan.grid_z = p.batch;
  plan.block_x = static_cast<int>(tiling.Threads());
  plan.dynamic_shared_bytes = tiling.SharedBytes();
  plan.tile_m = tiling.bm;
  plan.tile_n = tiling.bn;
  plan.tile_k = tiling.bk;
  plan.stages = tiling.stages;
  plan.vector_width = static_cast<int>(std::min(tiling.vw_a, tiling.vw_b));
  plan.tensor_core = true;
  if (tiling.split > 1) plan.arch = "sm_90";  // thread-block clusters
  return plan;
}

const char* TensorCoreShapeRule(const ir::Workload& w, const TensorCoreTiling& tiling,
                                int64_t smallest_block, int64_t smallest_bk) {
  const ir::MatMulParams& p = w.matmul;
  if (TileExceeds(tiling.bm, p.m, smallest_block) || TileExceeds(tiling.bn, p.n, smallest_block) ||
      TileExceeds(tiling.bk, p.k, smallest_bk) ||
      tiling.stages > std::max<int64_t>(2, tiling.SliceTiles(p.k))) {
    return "exceeds_shape";
  }
  // A K split whose last block would get no K tile.
  const int64_t k_tiles = CeilDiv(p.k, tiling.bk);
  if (tiling.split > 1 && (tiling.split - 1) * tiling.SliceTiles(p.k) >= k_tiles) {
    return "exceeds_shape";
  }
  if (CeilDiv(p.m, tiling.bm) > kMaxGridYZ || p.batch > kMaxGridYZ) return "grid_limit";
  return nullptr;
}

void MoveToFront(std::vector<int64_t>* values, int64_t value) {
  auto found = std::find(values->begin(), values->end(), value);
  if (found == values->end()) return;
  values->erase(found);
  values->insert(values->begin(), value);
}

void PutDefaultFirst(const std::vector<KnobValues>& preferred,
                     const std::function<bool(const KnobValues&)>& admits,
                     const std::function<int64_t(const KnobValues&)>& blocks, int64_t min_blocks,
                     std::vector<Knob>* knobs) {
  const KnobValues* chosen = nullptr;
  int64_t chosen_blocks = -1;
  for (const KnobValues& values : preferred) {
    if (values.size() != knobs->size()) continue;
    bool candidate = true;
    for (size_t knob_idx = 0; candidate && knob_idx < values.size(); ++knob_idx) {
      const std::vector<int64_t>& allowed = (*knobs)[knob_idx].values;
      candidate = std::find(allowed.begin(), allowed.end(), values[knob_idx]) != allowed.end();
    }
    if (!candidate || !admits(values)) continue;
    const int64_t launched = blocks(values);
    if (launched >= min_blocks) {
      chosen = &values;
      break;
    }
    if (launched > chosen_blocks) {
      chosen = &values;
      chosen_blocks = launched;
    }
  }
  if (chosen == nullptr) return;
  for (size_t knob_idx = 0; knob_idx < knobs->size(); ++knob_idx) {
    MoveToFront(&(*knobs)[knob_idx].values, (*chosen)[knob_idx]);
  }
}

}  // namespace gtco::kernels::cuda_matmul
