// What the convs of an X in the pair layout share (conv_pairs.h).
#include "common/kernels/cpu/conv/conv_pairs.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/ir/conv.h"
#include "common/kernels/family.h"

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
