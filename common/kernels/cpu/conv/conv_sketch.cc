// The implicit-GEMM convolution sketches "conv_avx512_fma/v1" and "conv_avx2_fma/v1": a conv is
// lowered as the matmul of its implicit-GEMM view (ir::ConvGemmView: per image and group, the
// weights [K/g, C/g*R*S] times the patch matrix [C/g*R*S, OH*OW]) on the register-blocked FMA
// micro-kernels of cpu/matmul_blocked. The weights are read in place (they are that matrix); the
// patch matrix is never materialized: its elements are gathered from the image (zero outside
// it) where the micro-kernel or the B-panel packing reads them, so packing B (the first value of
// the pack_b knob here) gathers each panel once per K block. The output [N, K, OH, OW] is the
// view's [N*g, K/g, OH*OW] row-major, so the epilogue (bias, residual add, ReLU) runs at the
// write-back as for matmuls.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/ir/conv.h"
#include "common/kernels/family.h"
#include "common/kernels/cpu/matmul_blocked/matmul_blocked.h"
#include "common/util/status.h"

namespace gtco::kernels {
namespace internal {
namespace {

using ir::Expr;
using ir::MakeInt;

Expr Lt(const Expr& a, const Expr& b) { return ir::MakeBinary(ir::ExprKind::kLt, a, b); }
Expr Le(const Expr& a, const Expr& b) { return ir::MakeBinary(ir::ExprKind::kLe, a, b); }
Expr And(const Expr& a, const Expr& b) { return ir::MakeBinary(ir::ExprKind::kAnd, a, b); }

/// The conv's operands as the blocked lowering reads them: batch entry b = n * groups + g.
GemmOperands ConvOperands(const ir::ConvParams& p) {
  const ir::MatMulParams view = ir::ConvGemmView(p);
  const int64_t cg = p.in_channels / p.groups, rs = p.kernel_h * p.kernel_w;
  const int64_t out_w = ir::ConvOutW(p);
  GemmOperands operands;
  operands.a = [p, view](const Expr& b, const Expr& row, const Expr& k) {
    // W [K, C/g, R, S] is the row-major [K, k] weight matrix; group g owns rows g*m .. g*m+m-1.
    const Expr group = p.groups > 1 ? b % MakeInt(p.groups) : MakeInt(0);
    return ir::MakeLoad(InputName(1), (group * MakeInt(view.m) + row) * MakeInt(view.k) + k);
  };
  operands.b = [p, cg, rs, out_w](const Expr& b, const Expr& k, const Expr& col) {
    const Expr n = p.groups > 1 ? b / MakeInt(p.groups) : b;
    const Expr group = p.groups > 1 ? b % MakeInt(p.groups) : MakeInt(0);
    const Expr channel_base = (n * MakeInt(p.in_channels) + group * MakeInt(cg));
    const bool pointwise = p.kernel_h == 1 && p.kernel_w == 1 && p.stride_h == 1 &&
                           p.stride_w == 1 && p.pad_top == 0 && p.pad_left == 0 &&
                           p.pad_bottom == 0 && p.pad_right == 0;
    if (pointwise) {
      // A 1x1, stride-1, unpadded conv: the patch matrix is the image itself, [C/g, H*W].
      return ir::MakeLoad(InputName(0),
                          (channel_base + k) * MakeInt(p.in_h * p.in_w) + col);
    }
    const Expr c = rs > 1 ? k / MakeInt(rs) : k;
    const Expr r = p.kernel_h > 1 ? (k % MakeInt(rs)) / MakeInt(p.kernel_w) : MakeInt(0);
    const Expr s = p.kernel_w > 1 ? k % MakeInt(p.kernel_w) : MakeInt(0);
    const Expr oh = col / MakeInt(out_w), ow = col % MakeInt(out_w);
    const Expr ih = oh * MakeInt(p.stride_h) - MakeInt(p.pad_top) + r * MakeInt(p.dilation_h);
    const Expr iw = ow * MakeInt(p.stride_w) - MakeInt(p.pad_left) + s * MakeInt(p.dilation_w);
    const Expr plane = (channel_base + c) * MakeInt(p.in_h * p.in_w);
    // Reads outside the image are zero: the load itself goes to a clamped (valid) address.
    const Expr inside = And(And(Le(MakeInt(0), ih), Lt(ih, MakeInt(p.in_h))),
                            And(Le(MakeInt(0), iw), Lt(iw, MakeInt(p.in_w))));
    const Expr clamped_h = ir::Max(MakeInt(0), ir::Min(ih, MakeInt(p.in_h - 1)));
    const Expr clamped_w = ir::Max(MakeInt(0), ir::Min(iw, MakeInt(p.in_w - 1)));
    const Expr value =
        ir::MakeLoad(InputName(0), plane + clamped_h * MakeInt(p.in_w) + clamped_w);
    const bool never_outside = p.pad_top == 0 && p.pad_left == 0 && p.pad_bottom == 0 &&
                               p.pad_right == 0;
    return never_outside ? ir::MakeLoad(InputName(0), plane + ih * MakeInt(p.in_w) + iw)
                         : ir::MakeSelect(inside, value, ir::MakeFloat(0.0));
  };
  return operands;
}

/// The epilogue over the view [N, K, OH*OW]: an extra input broadcasts over both spatial dims or
/// over neither (full-shape residuals, per-channel biases, scalars).
absl::StatusOr<EpilogueBuilder> ConvEpilogue(const ir::Workload& w) {
  const ir::ConvParams& p = w.conv;
  const int64_t spatial = ir::ConvOutH(p) * ir::ConvOutW(p);
  const std::vector<int64_t> out4 = ir::ConvOutShape(p);
  std::vector<std::vector<int64_t>> shapes;
  for (size_t index = 0; index < w.inputs.size(); ++index) {
    if (static_cast<int>(index) < w.num_anchor_inputs) {
      shapes.push_back({1});  // anchor inputs are read by the kernel, not the epilogue
      continue;
    }
    std::vector<int64_t> aligned;
    if (!AlignToOutput(w.inputs[index].shape, out4, &aligned)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "conv epilogue input ", index, " of shape [", absl::StrJoin(w.inputs[index].shape, ","),
          "] does not broadcast to the output"));
    }
    const bool full = aligned[2] == out4[2] && aligned[3] == out4[3];
    const bool none = aligned[2] == 1 && aligned[3] == 1;
    if (!full && !none) {
      return absl::InvalidArgumentError(absl::StrCat(
          "conv epilogue input ", index, " of shape [", absl::StrJoin(w.inputs[index].shape, ","),
          "] broadcasts over one spatial dim only; the conv family needs both or neither"));
    }
    shapes.push_back({aligned[0], aligned[1], full ? spatial : 1});
  }
  return EpilogueBuilder::Create(w, {p.batch, p.out_channels, spatial}, std::move(shapes));
}

class FmaConvSketch final : public LoopSketch {
 public:
  explicit FmaConvSketch(FmaMappingSpec spec) : spec_(std::move(spec)) {}

  const FmaMappingSpec& spec() const { return spec_; }
  const char* Name() const override { return spec_.sketch_name; }
  std::vector<std::string> KnobNames() const override {
    return {"mr", "nr", "kc", "mc", "nc", "par", "unroll_k", "pack_a", "pack_b"};
  }
  bool AppliesTo(const ir::Workload& w) const override {
    return w.anchor == ir::AnchorKind::kConv;
  }

  std::vector<Knob> Knobs(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    std::vector<Knob> knobs = BlockedKnobs(spec_, ir::ConvGemmView(w.conv), hw);
    // Gathering patches once per panel is the safe default: the micro-kernel then streams B.
    knobs[kPackB].values = {1, 0};
    return knobs;
  }

  const char* PruneRule(const ir::Workload& w, const target::HardwareInfo& hw,
                        const KnobValues& values) const override {
    return BlockedPruneRule(spec_, ir::ConvGemmView(w.conv), hw, values);
  }

  bool Admits(const ir::Workload& w, const target::HardwareInfo& hw,
              const KnobValues& values) const override {
    return PruneRule(w, hw, values) == nullptr;
  }

  absl::StatusOr<ir::LoweredFunc> Lower(const ir::Workload& w, const KnobValues& values,
                                        const std::string& func_name) const override {
    GTCO_RETURN_IF_ERROR(w.Validate());
    if (w.anchor != ir::AnchorKind::kConv) {
      return absl::InvalidArgumentError("the conv sketch lowers conv workloads only");
    }
    const ir::MatMulParams view = ir::ConvGemmView(w.conv);
    GTCO_ASSIGN_OR_RETURN(const BlockedPlan plan, MakeBlockedPlan(view, values, spec_.vw));
    GTCO_ASSIGN_OR_RETURN(const EpilogueBuilder epilogue, ConvEpilogue(w));
    return ir::LoweredFunc{func_name, KernelParams(w),
                           LowerBlockedPlan(plan, epilogue, ConvOperands(w.conv))};
  }

 private:
  FmaMappingSpec spec_;
};

/// The conv mapping of one FMA spec: the spec's CPU features and f32 operands.
class FmaConvMapping final : public MappingSketch {
 public:
  FmaConvMapping(FmaMappingSpec spec, const char* sketch_name) : sketch_(Renamed(spec, sketch_name)) {}
  const char* Name() const override { return sketch_.spec().mapping; }
  const Sketch& sketch() const override { return sketch_; }
  MappingVerdict Explain(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    std::string reason = MissingCpuFeatures(hw, sketch_.spec().features);
    if (reason.empty()) reason = NonF32Operands(w);
    if (!reason.empty()) return {Name(), false, reason};
    return {Name(), true,
            absl::StrCat(absl::StrJoin(sketch_.spec().features, "+"), " present: implicit GEMM on ",
                         sketch_.spec().vw, "-lane FMA micro-kernels, patches gathered from the "
                         "image, f32 operands")};
  }

 private:
  static FmaMappingSpec Renamed(FmaMappingSpec spec, const char* sketch_name) {
    spec.sketch_name = sketch_name;
    return spec;
  }
  FmaConvSketch sketch_;
};

}  // namespace
}  // namespace internal

const MappingSketch& Avx512FmaConvMapping() {
  static const internal::FmaConvMapping* const mapping =
      new internal::FmaConvMapping(internal::Avx512FmaSpec(), "conv_avx512_fma/v1");
  return *mapping;
}

const MappingSketch& Avx2FmaConvMapping() {
  static const internal::FmaConvMapping* const mapping =
      new internal::FmaConvMapping(internal::Avx2FmaSpec(), "conv_avx2_fma/v1");
  return *mapping;
}

}  // namespace gtco::kernels
