// What the convs of an X in the pair layout share (conv_pairs.h).
#include "common/kernels/cpu/conv/conv_pairs.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/ir/conv.h"
#include "common/kernels/cpu/matmul_blocked/matmul_blocked.h"
#include "common/kernels/family.h"
#include "common/util/status.h"

namespace gtco::kernels::internal {

using ir::Expr;
using ir::MakeInt;
using ir::ScalarType;
using ir::Stmt;

int64_t PairTapWords(const ir::ConvParams& p, int64_t r, int64_t s) {
  const int64_t phase = (r % p.stride_h) * p.stride_w + s % p.stride_w;
  const int64_t grid_w = ir::ConvPairPhaseW(p);
  return phase * ir::ConvPairPhaseH(p) * grid_w + (r / p.stride_h) * grid_w + s / p.stride_w;
}

Expr PairTapWordsExpr(const ir::ConvParams& p, const Expr& tap) {
  const Expr r = tap / MakeInt(p.kernel_w), s = tap % MakeInt(p.kernel_w);
  const Expr phase = (r % MakeInt(p.stride_h)) * MakeInt(p.stride_w) + s % MakeInt(p.stride_w);
  const int64_t grid_w = ir::ConvPairPhaseW(p);
  return phase * MakeInt(ir::ConvPairPhaseH(p) * grid_w) +
         (r / MakeInt(p.stride_h)) * MakeInt(grid_w) + s / MakeInt(p.stride_w);
}

bool PairConvWeightsOutweighImages(const ir::ConvParams& p) {
  const int64_t weight_bytes = p.out_channels * p.in_channels * p.kernel_h * p.kernel_w * 2;
  const int64_t image_bytes =
      p.batch * (p.in_channels + 2 * ir::ConvPairTailPlanes(p)) * ir::ConvPairPlane(p) * 2;
  return weight_bytes > image_bytes;
}

std::vector<int64_t> PairConvTaskChoices(const target::HardwareInfo& hw, int64_t most) {
  const int64_t cores = std::max(hw.cores, 1);
  std::vector<int64_t> tasks;
  for (int64_t per_core : {1, 2, 4, 8, 16}) {
    const int64_t value = std::min(cores * per_core, most);
    if (std::find(tasks.begin(), tasks.end(), value) == tasks.end()) tasks.push_back(value);
  }
  return tasks;
}

std::vector<ir::BufferParam> PairConvParams(const ir::Workload& w) {
  std::vector<ir::BufferParam> params = KernelParams(w);
  params[0].elem_type = params[1].elem_type = ScalarType::kBF16;
  return params;
}

Stmt PairTapSteps(const ir::ConvParams& p,
                  const std::function<Stmt(const Expr&, const Expr&)>& step) {
  constexpr int64_t kMaxUnrolledTaps = 9;
  if (p.kernel_h * p.kernel_w > kMaxUnrolledTaps) {
    const Expr tap = ir::MakeVar("tap");
    return ir::MakeFor("tap", MakeInt(0), MakeInt(p.kernel_h * p.kernel_w), ir::ForKind::kSerial,
                       step(tap, PairTapWordsExpr(p, tap)));
  }
  std::vector<Stmt> steps;
  for (int64_t r = 0; r < p.kernel_h; ++r) {
    for (int64_t s = 0; s < p.kernel_w; ++s) {
      steps.push_back(step(MakeInt(r * p.kernel_w + s), MakeInt(PairTapWords(p, r, s))));
    }
  }
  return ir::MakeBlock(steps);
}

absl::Status CheckConvWeightCount(const ir::ConvParams& p, const std::vector<float>& weights) {
  const int64_t count = p.out_channels * p.in_channels * p.kernel_h * p.kernel_w;
  if (static_cast<int64_t>(weights.size()) != count) {
    return absl::InvalidArgumentError(
        absl::StrCat("conv weights have ", weights.size(), " elements, not ", count));
  }
  return absl::OkStatus();
}

absl::StatusOr<PrepackedOperand> PackPairConvWeights(const ir::ConvParams& p,
                                                     const std::vector<float>& weights,
                                                     int64_t block, const schedule::Trace& trace) {
  GTCO_RETURN_IF_ERROR(CheckConvWeightCount(p, weights));
  const int64_t taps = p.kernel_h * p.kernel_w, pairs = p.in_channels / 2;
  PrepackedOperand packed;
  packed.trace = WithPackB(trace, kPackBPrepacked);
  packed.data.resize(weights.size());
  int64_t at = 0;
  for (int64_t k0 = 0; k0 < p.out_channels; k0 += block) {
    for (int64_t q = 0; q < pairs; ++q) {
      for (int64_t tap = 0; tap < taps; ++tap) {
        for (int64_t k = k0; k < k0 + block; ++k) {
          packed.data[at++] = weights[(k * p.in_channels + 2 * q) * taps + tap];
          packed.data[at++] = weights[(k * p.in_channels + 2 * q + 1) * taps + tap];
        }
      }
    }
  }
  packed.shape = {p.out_channels, taps * p.in_channels};
  return packed;
}

schedule::MappingVerdict PairConvVerdict(const char* mapping, const std::string& mismatch,
                                         const target::HardwareInfo& hw,
                                         const std::vector<std::string>& features,
                                         const char* applies) {
  if (!mismatch.empty()) return {mapping, false, mismatch};
  if (hw.target != target::Target::kCpu) {
    return {mapping, false,
            absl::StrCat("target '", target::TargetName(hw.target), "' is not a CPU")};
  }
  const std::string missing = MissingCpuFeatures(hw, features);
  if (!missing.empty()) return {mapping, false, missing};
  return {mapping, true, applies};
}

std::string PairConvDtypeMismatch(const ir::Workload& w, const char* kernel) {
  if (w.anchor != ir::AnchorKind::kConv || !w.conv.x_pairs) {
    return "not a conv in the pair layout";
  }
  if (w.inputs.size() < 2 || w.inputs[0].dtype != ir::DType::kBF16 ||
      w.inputs[1].dtype != ir::DType::kBF16 || w.output.dtype != ir::DType::kF32) {
    return absl::StrCat("the ", kernel, " takes bf16 X and W and writes f32");
  }
  return "";
}

Stmt PairGridWriteBack(const ir::ConvParams& p, int64_t channels, int64_t block_cols,
                       const schedule::EpilogueBuilder& epilogue, const std::string& cbuf,
                       const Expr& c_base, const Expr& n, const Expr& co0, const Expr& q0) {
  const int64_t grid_w = ir::ConvPairPhaseW(p), out_h = ir::ConvOutH(p), out_w = ir::ConvOutW(p);
  const Expr i = ir::MakeVar("wi"), row = ir::MakeVar("wrow"), lane = ir::MakeVar("wl");
  const Expr first_oh = q0 / MakeInt(grid_w);
  const Expr last_oh =
      ir::Min((q0 + MakeInt(block_cols - 1)) / MakeInt(grid_w), MakeInt(out_h - 1));
  const Expr oh = first_oh + row;
  const Expr row_start = oh * MakeInt(grid_w);
  const Expr begin = ir::Max(q0, row_start);
  const Expr end = ir::Min(q0 + MakeInt(block_cols), row_start + MakeInt(out_w));
  const Expr q = begin + lane;
  const Expr plane = n * MakeInt(p.out_channels) + co0 + i;
  const Expr column = oh * MakeInt(out_w) + (q - row_start);
  const Expr acc =
      ir::MakeTypedLoad(cbuf, c_base + i * MakeInt(block_cols) + (q - q0), ScalarType::kF32);
  const Stmt store = ir::MakeStore(kOutputName, plane * MakeInt(out_h * out_w) + column,
                                   epilogue.Apply(acc, plane, column));
  const int64_t lanes = PowerOfTwoCeil(std::min(block_cols, out_w));
  const Stmt runs =
      ir::MakeFor("wrow", MakeInt(0), last_oh - first_oh + MakeInt(1), ir::ForKind::kSerial,
                  ir::MakeFor("wl", MakeInt(0), MakeInt(lanes), ir::ForKind::kVectorized,
                              ir::MakeIf(ir::MakeBinary(ir::ExprKind::kLt, q, end), store)));
  return ir::MakeFor("wi", MakeInt(0), MakeInt(channels), ir::ForKind::kSerial, runs);
}

}  // namespace gtco::kernels::internal
