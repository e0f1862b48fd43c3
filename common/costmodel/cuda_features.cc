// CUDA plan features.
#include "common/costmodel/cuda_features.h"

#include <algorithm>
#include <cmath>

#include "common/costmodel/features.h"
#include "common/ir/conv.h"
#include "common/util/status.h"

namespace gtco::costmodel {
namespace {

float Log2p(double value) { return static_cast<float>(std::log2(1.0 + std::max(0.0, value))); }

/// Fraction of a padded extent that is real work: extent / (ceil(extent / tile) * tile).
double TileEfficiency(int64_t extent, int64_t tile) {
  if (extent <= 0 || tile <= 0) return 1.0;
  const int64_t padded = (extent + tile - 1) / tile * tile;
  return static_cast<double>(extent) / static_cast<double>(padded);
}

}  // namespace

Features ExtractCudaFeatures(const ir::Workload& w, const schedule::CudaPlan& plan,
                             const target::HardwareInfo& hw) {
  Features features(FeatureNames().size(), 0.0f);
  const double flops = static_cast<double>(w.Flops());
  const double bytes = static_cast<double>(w.MinBytes());
  const double blocks = static_cast<double>(plan.Blocks());
  const int64_t blocks_per_sm = std::max<int64_t>(1, schedule::CudaBlocksPerSm(hw, plan));
  const double concurrent = static_cast<double>(std::max(1, hw.sm_count) * blocks_per_sm);
  const double waves = blocks / concurrent;
  const double wave_efficiency = waves <= 0 ? 0 : waves / std::ceil(waves);
  int64_t extent_m = 0, extent_n = 0, extent_k = 0;
  if (w.anchor == ir::AnchorKind::kMatMul) {
    extent_m = w.matmul.m;
    extent_n = w.matmul.n;
    extent_k = w.matmul.k;
  } else if (w.anchor == ir::AnchorKind::kSoftmax || w.anchor == ir::AnchorKind::kLayerNorm ||
             w.anchor == ir::AnchorKind::kReduceMean) {
    extent_m = w.row.rows;
    extent_n = w.row.cols;
  } else if (w.anchor == ir::AnchorKind::kConv && plan.tile_n > 0) {
    // Implicit GEMM: the plan tiles the conv's GEMM view like a matmul.
    const ir::MatMulParams view = ir::ConvGemmView(w.conv);
    extent_m = view.m;
    extent_n = view.n;
    extent_k = view.k;
  } else if (w.anchor == ir::AnchorKind::kConv || w.anchor == ir::AnchorKind::kPool) {
    // Sliding-window kernels (pooling, depthwise conv): tile_m is the outputs of one block.
    extent_m = w.output.NumElements();
  }
  const std::vector<float> values = {
      Log2p(flops),
      Log2p(bytes),
      Log2p(flops / std::max(1.0, bytes)),
      Log2p(blocks),
      Log2p(static_cast<double>(plan.Threads())),
      Log2p(static_cast<double>(plan.dynamic_shared_bytes)),
      Log2p(plan.est_registers),
      static_cast<float>(blocks_per_sm),
      Log2p(static_cast<double>(blocks_per_sm * plan.Threads() / 32)),
      Log2p(waves),
      static_cast<float>(wave_efficiency),
      Log2p(static_cast<double>(plan.tile_m)),
      Log2p(static_cast<double>(plan.tile_n)),
      Log2p(static_cast<double>(plan.tile_k)),
      static_cast<float>(plan.stages),
      static_cast<float>(plan.vector_width),
      plan.tensor_core ? 1.0f : 0.0f,
      static_cast<float>(TileEfficiency(extent_m, plan.tile_m)),
      static_cast<float>(TileEfficiency(extent_n, plan.tile_n)),
      Log2p(plan.tile_k > 0 ? static_cast<double>(extent_k) / plan.tile_k : 0),
      Log2p(flops / std::max(1.0, blocks)),
      Log2p(static_cast<double>(plan.dynamic_shared_bytes) /
            std::max(1.0, flops / std::max(1.0, blocks)) * 1e3),
      plan.arch.empty() ? 0.0f : 1.0f};
  std::copy(values.begin(), values.begin() + std::min(values.size(), features.size()),
            features.begin());
  return features;
}

}  // namespace gtco::costmodel
