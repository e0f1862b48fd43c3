// The implicit-GEMM convolution sketches "conv_avx512_fma/v1" and "conv_avx2_fma/v1": a conv is
// lowered as the matmul of its implicit-GEMM view (ir::ConvGemmView: per image and group, the
// weights [K/g, C/g*R*S] times the patch matrix [C/g*R*S, OH*OW]) on the register-blocked FMA
// micro-kernels of cpu/matmul_blocked. The weights are read in place (they are that matrix); the
// patch matrix is never materialized: its elements are gathered from the image (zero outside
// it) where the micro-kernel or the B-panel packing reads them, so packing B (the first value of
// the pack_b knob here) gathers each panel once per K block. The output [N, K, OH, OW] is the
// view's [N*g, K/g, OH*OW] row-major, so the epilogue (bias, residual add, ReLU) runs at the
// write-back as for matmuls. Pixels sit in the vector lanes, so a 7x7 plane's 49 pixels leave
// most of a 16-lane vector idle.
//
// "conv_avx512_fma_channels/v1" and "conv_avx2_fma_channels/v1" (one group) lower the transposed
// view instead: per image, pixels x output channels, the patch matrix transposed [OH*OW, C*R*S]
// times the weights transposed [C*R*S, K]. Output channels fill the vector lanes (ResNet's 64 to
// 2048 fill them all), pixels are the register tile's rows. The weights are read pre-packed
// into the micro-kernel's panels (the exporter packs the constant, the worker its random
// weights: kernels::PackInputsForTrace). A is either staged (pack_a 2, the default): per block
// of pixels and K block of whole channels, the zero-padded band of input rows those pixels read
// is copied once, and the micro-kernel broadcasts each patch element from it in place, K walked
// tap by tap over the block's channels (the weights packed in that order); or packed (pack_a 1):
// the patch rows a K row at a time for the whole block (one masked vector per output row, as
// B's panels above), R*S times the image's size; or read in place (pack_a 0, a pointwise conv's
// patches are its image). The tile goes to the NCHW output by output channel, its pixels in the
// vector lanes (contiguous; storing its column vectors scattered each lane a plane apart), and
// partial sums of K blocks stay in the kernel's own buffer.
//
// Depthwise convolutions (one input channel per group) have a K of R*S only, too short for the
// micro-kernels: "conv_dw_direct/v2" computes them directly, a (parallel) loop over the N*K
// output planes and output rows, output columns in vectors, every tap unrolled with its weight
// broadcast; each plane either read in place (reads outside the image tested) or first copied
// into a zero-padded buffer (stage=1). "/v1" (no stage knob) is kept to replay stored traces.
#include <algorithm>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/ir/conv.h"
#include "common/kernels/cpu/conv/conv_blocked.h"
#include "common/kernels/cpu/matmul_blocked/matmul_blocked.h"
#include "common/kernels/family.h"
#include "common/kernels/registry.h"
#include "common/util/status.h"

namespace gtco::kernels {
namespace internal {
namespace {

using ir::Expr;
using ir::MakeInt;

Expr Lt(const Expr& a, const Expr& b) { return ir::MakeBinary(ir::ExprKind::kLt, a, b); }
Expr Le(const Expr& a, const Expr& b) { return ir::MakeBinary(ir::ExprKind::kLe, a, b); }
Expr And(const Expr& a, const Expr& b) { return ir::MakeBinary(ir::ExprKind::kAnd, a, b); }
using ir::Stmt;

/// Windows of at most this many taps are unrolled by the direct sketch.
constexpr int64_t kMaxDirectTaps = 64;

/// Row k of batch entry b's patch matrix: the input plane it reads (n, g * C/g + c) as a flat
/// offset, and its kernel tap (r, s); k = (c * R + r) * S + s.
struct PatchRow {
  Expr plane, r, s;
};
PatchRow PatchRowOf(const ir::ConvParams& p, const Expr& b, const Expr& k) {
  const int64_t cg = p.in_channels / p.groups, rs = p.kernel_h * p.kernel_w;
  const Expr n = p.groups > 1 ? b / MakeInt(p.groups) : b;
  const Expr group = p.groups > 1 ? b % MakeInt(p.groups) : MakeInt(0);
  const Expr c = rs > 1 ? k / MakeInt(rs) : k;
  return {(n * MakeInt(p.in_channels) + group * MakeInt(cg) + c) * MakeInt(p.in_h * p.in_w),
          p.kernel_h > 1 ? (k % MakeInt(rs)) / MakeInt(p.kernel_w) : MakeInt(0),
          p.kernel_w > 1 ? k % MakeInt(p.kernel_w) : MakeInt(0)};
}

/// Packs one row k = (c, r, s) of the patch matrix, columns [j0, j0 + width): the columns of one
/// output row oh read input row ih = oh * stride - pad + r * dilation from iw = ow * stride - pad
/// + s * dilation on, an affine (mostly contiguous) run. So the packer loops over the output rows
/// the columns span and copies each run as one vector range under the lanes' masks (in this
/// output row, inside the image; zero elsewhere), instead of dividing every column into (oh, ow)
/// and gathering element by element.
std::function<Stmt(const Expr&, const Expr&, const Expr&, int64_t, bool, const std::string&,
                   const Expr&)>
PatchRowPacker(const ir::ConvParams& p) {
  return [p](const Expr& b, const Expr& k, const Expr& j0, int64_t width, bool zero_past_n,
             const std::string& buffer, const Expr& dest) -> Stmt {
    const int64_t out_w = ir::ConvOutW(p), out_h = ir::ConvOutH(p);
    const auto [plane, r, s] = PatchRowOf(p, b, k);
    const Expr first_oh = j0 / MakeInt(out_w);
    const Expr last_oh = ir::Min((j0 + MakeInt(width - 1)) / MakeInt(out_w), MakeInt(out_h - 1));
    const Expr row = ir::MakeVar("prow"), pc = ir::MakeVar("ppc");
    const Expr oh = first_oh + row;
    const Expr row_start = oh * MakeInt(out_w);
    // This output row's columns of the panel: [begin, end), at most min(width, OW) of them, so
    // a power of two at least that many lanes covers it (a 7-wide output row takes one 8-lane
    // vector, not the panel's; other lane counts legalize badly under masks).
    const Expr begin = ir::Max(j0, row_start);
    const Expr end = ir::Min(j0 + MakeInt(width), row_start + MakeInt(out_w));
    // (A 48-column panel of a 56-wide image takes 64 masked lanes, not 48: 48-lane masked
    // vectors ran such panels at a fifth of the speed.)
    const int64_t lanes = PowerOfTwoCeil(std::min(width, out_w));
    const Expr col = begin + pc;
    const Expr at = dest + (col - j0);
    const Expr ih = oh * MakeInt(p.stride_h) + (r * MakeInt(p.dilation_h) - MakeInt(p.pad_top));
    const Expr iw =
        (col - row_start) * MakeInt(p.stride_w) + (s * MakeInt(p.dilation_w) - MakeInt(p.pad_left));
    const Expr in_row = Lt(col, end);
    const Expr inside_w = And(Le(MakeInt(0), iw), Lt(iw, MakeInt(p.in_w)));
    const Expr inside_h = And(Le(MakeInt(0), ih), Lt(ih, MakeInt(p.in_h)));
    const Stmt zero = ir::MakeStore(buffer, at, ir::MakeFloat(0.0));
    const Stmt copy =
        ir::MakeStore(buffer, at, ir::MakeLoad(InputName(0), plane + ih * MakeInt(p.in_w) + iw));
    // The input row is inside the image or not (uniform); its columns are checked per lane.
    const Stmt run =
        ir::MakeIf(inside_h,
                   ir::MakeFor("ppc", MakeInt(0), MakeInt(lanes), ir::ForKind::kVectorized,
                               ir::MakeIf(in_row, ir::MakeIf(inside_w, copy, zero))),
                   ir::MakeFor("ppc", MakeInt(0), MakeInt(lanes), ir::ForKind::kVectorized,
                               ir::MakeIf(in_row, zero)));
    Stmt rows =
        ir::MakeFor("prow", MakeInt(0), last_oh - first_oh + MakeInt(1), ir::ForKind::kSerial, run);
    if (!zero_past_n) return rows;
    // The tail panel: columns past N (past the last output row) are zero; a power of two of
    // lanes here too, the ones past the panel masked off.
    const Stmt clear =
        ir::MakeFor("ppc", MakeInt(0), MakeInt(PowerOfTwoCeil(width)), ir::ForKind::kVectorized,
                    ir::MakeIf(And(Lt(pc, MakeInt(width)), Le(MakeInt(out_h * out_w), j0 + pc)),
                               ir::MakeStore(buffer, dest + pc, ir::MakeFloat(0.0))));
    return ir::MakeBlock({clear, rows});
  };
}

/// The conv's operands as the blocked lowering reads them: batch entry b = n * groups + g.
GemmOperands ConvOperands(const ir::ConvParams& p) {
  const ir::MatMulParams view = ir::ConvGemmView(p);
  const int64_t out_w = ir::ConvOutW(p);
  GemmOperands operands;
  operands.a = [p, view](const Expr& b, const Expr& row, const Expr& k) {
    // W [K, C/g, R, S] is the row-major [K, k] weight matrix; group g owns rows g*m .. g*m+m-1.
    const Expr group = p.groups > 1 ? b % MakeInt(p.groups) : MakeInt(0);
    return ir::MakeLoad(InputName(1), (group * MakeInt(view.m) + row) * MakeInt(view.k) + k);
  };
  operands.b = [p, out_w](const Expr& b, const Expr& k, const Expr& col) {
    const auto [plane, r, s] = PatchRowOf(p, b, k);
    if (ir::ConvIsPointwise(p)) return ir::MakeLoad(InputName(0), plane + col);
    const Expr oh = col / MakeInt(out_w), ow = col % MakeInt(out_w);
    const Expr ih = oh * MakeInt(p.stride_h) - MakeInt(p.pad_top) + r * MakeInt(p.dilation_h);
    const Expr iw = ow * MakeInt(p.stride_w) - MakeInt(p.pad_left) + s * MakeInt(p.dilation_w);
    // Reads outside the image are zero: the load itself goes to a clamped (valid) address.
    const Expr inside = And(And(Le(MakeInt(0), ih), Lt(ih, MakeInt(p.in_h))),
                            And(Le(MakeInt(0), iw), Lt(iw, MakeInt(p.in_w))));
    const Expr clamped_h = ir::Max(MakeInt(0), ir::Min(ih, MakeInt(p.in_h - 1)));
    const Expr clamped_w = ir::Max(MakeInt(0), ir::Min(iw, MakeInt(p.in_w - 1)));
    const Expr value = ir::MakeLoad(InputName(0), plane + clamped_h * MakeInt(p.in_w) + clamped_w);
    const bool never_outside =
        p.pad_top == 0 && p.pad_left == 0 && p.pad_bottom == 0 && p.pad_right == 0;
    return never_outside ? ir::MakeLoad(InputName(0), plane + ih * MakeInt(p.in_w) + iw)
                         : ir::MakeSelect(inside, value, ir::MakeFloat(0.0));
  };
  if (!ir::ConvIsPointwise(p)) operands.pack_b_row = PatchRowPacker(p);
  return operands;
}

using schedule::ConvEpilogue;

/// Depthwise: every group reads one input channel (C / groups == 1); K may be a multiple of C.
/// (Computed directly, RegNetY's grouped 3x3s of 8 channels per group ran at 0.6-0.8x their
/// implicit GEMM's default on AMD Zen 4, so the direct sketch stays with one channel.)
bool IsDepthwise(const ir::Workload& w) {
  return w.anchor == ir::AnchorKind::kConv && w.conv.in_channels == w.conv.groups &&
         w.conv.kernel_h * w.conv.kernel_w <= kMaxDirectTaps;
}

/// The zero-padded copy of one input plane the staged depthwise kernel reads: at most this
/// many floats (the kernel's stack; MobileNet's largest padded plane, 114x114, is 13K).
constexpr int64_t kMaxStagedPlane = int64_t{1} << 18;

/// Elements of the zero-padded copy of one input plane of `p`.
int64_t PaddedPlane(const ir::ConvParams& p) {
  return (p.in_h + p.pad_top + p.pad_bottom) * (p.in_w + p.pad_left + p.pad_right);
}

/// Output columns [lo, hi) whose every tap reads inside the image's width.
std::pair<int64_t, int64_t> InteriorColumns(const ir::ConvParams& p) {
  const int64_t out_w = ir::ConvOutW(p);
  const int64_t lo = std::min(out_w, (p.pad_left + p.stride_w - 1) / p.stride_w);
  const int64_t last_start = p.in_w - 1 - (p.kernel_w - 1) * p.dilation_w + p.pad_left;
  const int64_t hi = last_start < 0 ? lo : std::clamp(last_start / p.stride_w + 1, lo, out_w);
  return {lo, hi};
}

/// Output columns with a tap outside the image's width.
int64_t BorderColumns(const ir::ConvParams& p) {
  const auto [lo, hi] = InteriorColumns(p);
  return ir::ConvOutW(p) - (hi - lo);
}

bool IsPadded(const ir::ConvParams& p) {
  return p.pad_top > 0 || p.pad_left > 0 || p.pad_bottom > 0 || p.pad_right > 0;
}

class DirectDepthwiseSketch final : public LoopSketch {
 public:
  enum KnobIdx { kVw, kUnroll, kPar, kStage };

  /// `stage_knob`: v2, with the stage knob; v1 (replay only) reads the image in place.
  explicit DirectDepthwiseSketch(bool stage_knob) : stage_knob_(stage_knob) {}

  const char* Name() const override {
    return stage_knob_ ? "conv_dw_direct/v2" : "conv_dw_direct/v1";
  }
  std::vector<std::string> KnobNames() const override {
    if (!stage_knob_) return {"vw", "unroll", "par"};
    return {"vw", "unroll", "par", "stage"};
  }
  bool AppliesTo(const ir::Workload& w) const override { return IsDepthwise(w); }

  std::vector<Knob> Knobs(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    const bool parallel = hw.cores > 1 && w.conv.batch * w.conv.out_channels > 1;
    // First (an untuned export runs the first values) the narrowest vector that holds a whole
    // output row, or where none does the widest: a 7-wide row in one 8-lane vector ran 1.3x
    // faster than in 4 + 3 lanes, a 14-wide one in 16 lanes 1.1-1.3x faster than in 8 + 6.
    Knob vw{"vw", VectorWidths(hw.MaxFloatLanes())};
    int64_t first = 0;
    for (int64_t width : vw.values) {
      if (width >= ir::ConvOutW(w.conv) && first == 0) first = width;
    }
    Prefer(vw, first != 0 ? first : vw.values.back());
    std::vector<Knob> knobs = {
        vw,
        {"unroll", {1, 2}},
        {"par", parallel ? std::vector<int64_t>{1, 0} : std::vector<int64_t>{0}}};
    // A padded conv may read a zero-padded copy of each plane (no tap tests a bound), first
    // where the border columns (those with a tap outside the image, run scalar in place) are an
    // eighth of the row or more: 3x faster on LRASPP's dilated 5x5 (14x14, 8 of 14 columns),
    // the same on 56x56 3x3s, 1.5x slower on 112x112 stride-2 ones, whose copy outweighs their
    // quarter-size output (bench/conv_mappings, AMD Zen 4).
    if (stage_knob_) {
      Knob stage{"stage", {0}};
      if (IsPadded(w.conv) && PaddedPlane(w.conv) <= kMaxStagedPlane) {
        stage.values = 8 * BorderColumns(w.conv) >= ir::ConvOutW(w.conv)
                           ? std::vector<int64_t>{1, 0}
                           : std::vector<int64_t>{0, 1};
      }
      knobs.push_back(stage);
    }
    return knobs;
  }

  bool Admits(const ir::Workload& w, const target::HardwareInfo& hw,
              const KnobValues& values) const override {
    if (stage_knob_ && values[kStage] == 1 &&
        (!IsPadded(w.conv) || PaddedPlane(w.conv) > kMaxStagedPlane)) {
      return false;
    }
    // Also one vector holding a whole row (no wider than twice the row).
    const int64_t out_w = ir::ConvOutW(w.conv);
    return VectorGroupFits(values[kVw], values[kUnroll], out_w, hw.MaxFloatLanes()) ||
           (values[kUnroll] == 1 && values[kVw] < 2 * out_w);
  }

  absl::StatusOr<ir::LoweredFunc> Lower(const ir::Workload& w, const KnobValues& values,
                                        const std::string& func_name) const override {
    GTCO_RETURN_IF_ERROR(CheckOneOf("vw", values[kVw], {4, 8, 16}));
    GTCO_RETURN_IF_ERROR(CheckOneOf("unroll", values[kUnroll], {1, 2}));
    GTCO_RETURN_IF_ERROR(CheckRange("par", values[kPar], 0, 1));
    const bool staged = stage_knob_ && values[kStage] == 1;
    if (stage_knob_) GTCO_RETURN_IF_ERROR(CheckRange("stage", values[kStage], 0, 1));
    GTCO_RETURN_IF_ERROR(w.Validate());
    if (staged && (!IsPadded(w.conv) || PaddedPlane(w.conv) > kMaxStagedPlane)) {
      return absl::InvalidArgumentError(
          absl::StrCat("stage=1 needs a padded conv whose padded plane has at most ",
                       kMaxStagedPlane, " elements"));
    }
    if (!IsDepthwise(w)) {
      return absl::InvalidArgumentError("conv_dw_direct lowers depthwise convolutions only");
    }
    const ir::ConvParams& p = w.conv;
    GTCO_ASSIGN_OR_RETURN(const EpilogueBuilder epilogue, ConvEpilogue(w));
    const int64_t out_h = ir::ConvOutH(p), out_w = ir::ConvOutW(p);
    const int64_t multiplier = p.out_channels / p.groups;
    const Expr plane = ir::MakeVar("plane"), oh = ir::MakeVar("oh");
    // plane = n * K + k reads input plane n * C + k / multiplier.
    const Expr in_plane = (plane / MakeInt(p.out_channels)) * MakeInt(p.in_channels) +
                          (plane % MakeInt(p.out_channels)) / MakeInt(multiplier);
    const Expr k = plane % MakeInt(p.out_channels);
    const bool pad_rows = p.pad_top > 0 || p.pad_bottom > 0;
    // Output columns whose every tap reads inside the image's width: [ow_lo, ow_hi). There the
    // taps' columns are a ramp in the vector lanes (contiguous loads, or a span and a shuffle
    // for stride 2); a row outside the image is a uniform test per (oh, r). The few border
    // columns run scalar with both tests (clamping a vector of columns made every load a
    // gather: 8 GFLOP/s on MobileNetV2's 3x3s on AMD Zen 4).
    const int64_t padded_w = p.in_w + p.pad_left + p.pad_right;
    const std::pair<int64_t, int64_t> interior = InteriorColumns(p);
    const int64_t ow_lo = interior.first, ow_hi = interior.second;
    auto columns = [&](bool check_columns) {
      return [&, check_columns](const Expr& ow, const Expr&) {
        // Taps go round-robin to a few partial sums, so that the FMAs are not one dependent
        // chain waiting on the FMA latency at each tap.
        const int64_t taps = p.kernel_h * p.kernel_w;
        std::vector<Expr> sums(std::min<int64_t>(taps, 4), ir::MakeFloat(0.0));
        int64_t tap = 0;
        for (int64_t r = 0; r < p.kernel_h; ++r) {
          const Expr ih = oh * MakeInt(p.stride_h) + MakeInt(r * p.dilation_h - p.pad_top);
          const Expr inside_h = And(Le(MakeInt(0), ih), Lt(ih, MakeInt(p.in_h)));
          const Expr row = pad_rows ? ir::Max(MakeInt(0), ir::Min(ih, MakeInt(p.in_h - 1))) : ih;
          for (int64_t s = 0; s < p.kernel_w; ++s, ++tap) {
            const Expr iw = ow * MakeInt(p.stride_w) + MakeInt(s * p.dilation_w - p.pad_left);
            const Expr weight =
                ir::MakeLoad(InputName(1), k * MakeInt(taps) + MakeInt(r * p.kernel_w + s));
            if (staged) {  // the padded copy: every tap inside it
              const Expr value =
                  ir::MakeLoad(kStagedPlane, (ih + MakeInt(p.pad_top)) * MakeInt(padded_w) + iw +
                                                 MakeInt(p.pad_left));
              Expr& sum = sums[tap % sums.size()];
              sum = sum + value * weight;
              continue;
            }
            const Expr inside_w = And(Le(MakeInt(0), iw), Lt(iw, MakeInt(p.in_w)));
            const Expr column =
                check_columns ? ir::Max(MakeInt(0), ir::Min(iw, MakeInt(p.in_w - 1))) : iw;
            Expr value = ir::MakeLoad(
                InputName(0), in_plane * MakeInt(p.in_h * p.in_w) + row * MakeInt(p.in_w) + column);
            Expr inside;
            if (pad_rows) inside = inside_h;
            if (check_columns) inside = inside ? And(inside, inside_w) : inside_w;
            if (inside) value = ir::MakeSelect(inside, value, ir::MakeFloat(0.0));
            Expr& sum = sums[tap % sums.size()];
            sum = sum + value * weight;
          }
        }
        while (sums.size() > 1) {  // pairwise
          std::vector<Expr> halves;
          for (size_t index = 0; index + 1 < sums.size(); index += 2) {
            halves.push_back(sums[index] + sums[index + 1]);
          }
          if (sums.size() % 2 == 1) halves.push_back(sums.back());
          sums = std::move(halves);
        }
        const Expr sum = sums.front();
        const Expr column = oh * MakeInt(out_w) + ow;
        return ir::MakeStore(kOutputName, plane * MakeInt(out_h * out_w) + column,
                             epilogue.Apply(sum, plane, column));
      };
    };
    std::vector<Stmt> row_parts;
    if (staged) {
      row_parts.push_back(EmitVectorRange("d", MakeInt(0), MakeInt(out_w), values[kVw],
                                          values[kUnroll], columns(false)));
    }
    if (!staged && ow_lo > 0) {
      row_parts.push_back(ir::MakeFor("dl", MakeInt(0), MakeInt(ow_lo), ir::ForKind::kSerial,
                                      columns(true)(ir::MakeVar("dl"), MakeInt(0))));
    }
    if (!staged && ow_hi > ow_lo) {
      row_parts.push_back(EmitVectorRange("d", MakeInt(ow_lo), MakeInt(ow_hi - ow_lo), values[kVw],
                                          values[kUnroll], columns(false)));
    }
    if (!staged && ow_hi < out_w) {
      row_parts.push_back(ir::MakeFor("dr", MakeInt(ow_hi), MakeInt(out_w - ow_hi),
                                      ir::ForKind::kSerial,
                                      columns(true)(ir::MakeVar("dr"), MakeInt(0))));
    }
    Stmt body = ir::MakeFor("oh", MakeInt(0), MakeInt(out_h), ir::ForKind::kSerial,
                            ir::MakeBlock(row_parts));
    if (staged) {
      // Per plane: its zero-padded copy (the padding rows, then each image row between its
      // left and right padding), then the output rows from it.
      const int64_t padded_h = p.in_h + p.pad_top + p.pad_bottom;
      const auto zero = [&](const std::string& tag, int64_t begin, int64_t length) {
        return EmitVectorRange(tag, MakeInt(begin), MakeInt(length), values[kVw], 1,
                               [](const Expr& at, const Expr&) {
                                 return ir::MakeStore(kStagedPlane, at, ir::MakeFloat(0.0));
                               });
      };
      std::vector<Stmt> stage;
      if (p.pad_top > 0) stage.push_back(zero("zt", 0, p.pad_top * padded_w));
      if (p.pad_bottom > 0) {
        stage.push_back(zero("zb", (p.pad_top + p.in_h) * padded_w, p.pad_bottom * padded_w));
      }
      const Expr ih = ir::MakeVar("sh");
      const Expr row_start = (ih + MakeInt(p.pad_top)) * MakeInt(padded_w);
      std::vector<Stmt> row;
      const auto zero_columns = [&](const std::string& tag, int64_t begin, int64_t length) {
        const Expr j = ir::MakeVar(tag);
        return ir::MakeFor(
            tag, MakeInt(0), MakeInt(length), ir::ForKind::kSerial,
            ir::MakeStore(kStagedPlane, row_start + MakeInt(begin) + j, ir::MakeFloat(0.0)));
      };
      if (p.pad_left > 0) row.push_back(zero_columns("zl", 0, p.pad_left));
      row.push_back(EmitVectorRange(
          "sc", MakeInt(0), MakeInt(p.in_w), values[kVw], 1, [&](const Expr& iw, const Expr&) {
            return ir::MakeStore(kStagedPlane, row_start + MakeInt(p.pad_left) + iw,
                                 ir::MakeLoad(InputName(0), in_plane * MakeInt(p.in_h * p.in_w) +
                                                                ih * MakeInt(p.in_w) + iw));
          }));
      if (p.pad_right > 0) row.push_back(zero_columns("zr", p.pad_left + p.in_w, p.pad_right));
      stage.push_back(
          ir::MakeFor("sh", MakeInt(0), MakeInt(p.in_h), ir::ForKind::kSerial, ir::MakeBlock(row)));
      stage.push_back(body);
      body = ir::MakeAllocate(kStagedPlane, padded_h * padded_w, ir::MakeBlock(stage));
    }
    body = ir::MakeFor("plane", MakeInt(0), MakeInt(p.batch * p.out_channels),
                       values[kPar] == 1 ? ir::ForKind::kParallel : ir::ForKind::kSerial, body);
    return ir::LoweredFunc{func_name, KernelParams(w), body};
  }

 private:
  static constexpr const char* kStagedPlane = "dw_plane";
  bool stage_knob_;
};

/// The depthwise direct mapping: any CPU with vectors, f32 operands.
class DirectDepthwiseMapping final : public MappingSketch {
 public:
  const char* Name() const override { return "direct"; }
  const Sketch& sketch() const override { return sketch_; }
  MappingVerdict Explain(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    const std::string non_f32 = NonF32Operands(w);
    if (!non_f32.empty()) return {Name(), false, non_f32};
    return {Name(), true,
            absl::StrCat("depthwise: taps unrolled, output columns in up to ", hw.MaxFloatLanes(),
                         " fp32 lanes")};
  }

 private:
  DirectDepthwiseSketch sketch_{/*stage_knob=*/true};
};

class FmaConvSketch final : public BlockedConvSketch {
 public:
  using BlockedConvSketch::BlockedConvSketch;

  std::vector<Knob> Knobs(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    std::vector<Knob> knobs = BlockedKnobs(spec_, ir::ConvGemmView(w.conv), hw);
    // Gathering patches once per panel is the safe default: the micro-kernel then streams B.
    knobs[kPackB].values = {1, 0};
    // Convolutions big enough to split run on every core by default (an untuned export uses the
    // default trace; the serial one left ResNet-18 4-5x behind ONNX Runtime).
    if (knobs[kPar].values.size() == 2) knobs[kPar].values = {1, 0};
    // The register tile and K block that measured best on ResNet-50's convs (AMD Zen 5,
    // bench/conv_mappings): 8 (AVX-512) or 4 (AVX2) weight rows by 2 vectors of pixels, K in
    // blocks of ~256.
    Prefer(knobs[kMr], spec_.vw == 16 ? 8 : 4);
    Prefer(knobs[kNr], 2);
    Prefer(knobs[kKc], NearestTo(knobs[kKc].values, 256));
    Prefer(knobs[kMc], NearestTo(knobs[kMc].values, 128));
    Prefer(knobs[kNc], NearestTo(knobs[kNc].values, 256));
    return knobs;
  }

  const char* PruneRule(const ir::Workload& w, const target::HardwareInfo& hw,
                        const KnobValues& values) const override {
    return BlockedPruneRule(spec_, ir::ConvGemmView(w.conv), hw, values);
  }

  absl::StatusOr<ir::LoweredFunc> Lower(const ir::Workload& w, const KnobValues& values,
                                        const std::string& func_name) const override {
    GTCO_RETURN_IF_ERROR(w.Validate());
    if (w.anchor != ir::AnchorKind::kConv) {
      return absl::InvalidArgumentError("the conv sketch lowers conv workloads only");
    }
    if (values[kPackB] == kPackBPrepacked) {
      return absl::InvalidArgumentError("a conv's B (the image patches) cannot be pre-packed");
    }
    if (values[kPackA] == kPackAStaged) {
      return absl::InvalidArgumentError(
          "the pixel-vectorized conv reads its weights (A) packed "
          "(pack_a 1) or in place (0), never staged");
    }
    const ir::MatMulParams view = ir::ConvGemmView(w.conv);
    GTCO_ASSIGN_OR_RETURN(const BlockedPlan plan, MakeBlockedPlan(view, values, spec_.vw));
    GTCO_ASSIGN_OR_RETURN(const EpilogueBuilder epilogue, ConvEpilogue(w));
    return ir::LoweredFunc{func_name, KernelParams(w),
                           LowerBlockedPlan(plan, epilogue, ConvOperands(w.conv))};
  }
};

/// The divisor of `n` nearest to `want` by ratio (the larger one on a tie).
int64_t NearestDivisor(int64_t n, double want) {
  int64_t best = 1;
  double best_distance = std::numeric_limits<double>::infinity();
  for (int64_t d = 1; d <= n; ++d) {
    if (n % d != 0) continue;
    const double ratio = d > want ? d / want : want / static_cast<double>(d);
    if (ratio <= best_distance) {
      best = d;
      best_distance = ratio;
    }
  }
  return best;
}

/// The channel-vectorized view of a conv with one group: per image, pixels x output channels,
/// the transposed patch matrix [OH*OW, C*R*S] times the transposed weights [C*R*S, K].
ir::MatMulParams ChannelGemmView(const ir::ConvParams& p) {
  ir::MatMulParams view;
  view.batch = p.batch;
  view.m = ir::ConvOutH(p) * ir::ConvOutW(p);
  view.n = p.out_channels;
  view.k = p.in_channels * p.kernel_h * p.kernel_w;
  view.a_batched = true;
  return view;
}

/// The workloads the channel-vectorized sketch lowers (its mapping explains the others away).
bool IsChannelConv(const ir::Workload& w) {
  return w.anchor == ir::AnchorKind::kConv && w.conv.groups == 1;
}

/// The zero-padded band of the image that a block of `rows` consecutive output pixels reads:
/// its width (the input columns the output rows read, padding included), its height at most
/// (the input rows of every output row the block can span), and one channel's plane of it.
struct BandShape {
  int64_t width = 0, height = 0, plane = 0;
};
BandShape BandOf(const ir::ConvParams& p, int64_t rows) {
  const int64_t out_w = ir::ConvOutW(p), out_h = ir::ConvOutH(p);
  // A run of `rows` pixels starting anywhere in an output row spans at most this many rows.
  const int64_t spanned = std::min(out_h, (std::min(rows, out_h * out_w) + out_w - 2) / out_w + 1);
  BandShape band;
  band.width = (out_w - 1) * p.stride_w + (p.kernel_w - 1) * p.dilation_w + 1;
  band.height = (spanned - 1) * p.stride_h + (p.kernel_h - 1) * p.dilation_h + 1;
  band.plane = band.width * band.height;
  return band;
}

/// Floats of the staged band of a block of `rows` pixels and `kc` patch rows (whole channels).
int64_t StagedBandFloats(const ir::ConvParams& p, int64_t rows, int64_t kc) {
  const int64_t taps = p.kernel_h * p.kernel_w;
  return std::max<int64_t>(1, kc / taps) * BandOf(p, rows).plane;
}

/// The patch row (c * R*S + tap, the weights' order) of row k of the channel view when A is
/// staged: each K block of kc rows (whole channels) runs tap-major, its channels within each
/// tap. Both the weights' packing and the kernel's reads of B use this order.
int64_t StagedPatchRow(const ir::ConvParams& p, int64_t kc, int64_t k) {
  const int64_t taps = p.kernel_h * p.kernel_w, total = p.in_channels * taps;
  const int64_t k0 = k / kc * kc, channels = std::min(kc, total - k0) / taps;
  const int64_t local = k - k0;
  return (k0 / taps + local % channels) * taps + local / channels;
}
Expr StagedPatchRow(const ir::ConvParams& p, int64_t kc, const Expr& k) {
  const int64_t taps = p.kernel_h * p.kernel_w, total = p.in_channels * taps;
  const Expr k0 = k / MakeInt(kc) * MakeInt(kc);
  const Expr channels = ir::Min(MakeInt(kc), MakeInt(total) - k0) / MakeInt(taps);
  const Expr local = k - k0;
  return (k0 / MakeInt(taps) + local % channels) * MakeInt(taps) + local / channels;
}

/// A staged as the channel view reads it (pack_a = kPackAStaged): per task and K block (whole
/// channels, kc a multiple of R*S), the band of input rows the block's pixels read, for every
/// channel of the K block, zero-padded where the window leaves the image: [channel][band row]
/// [band column]. The block's K runs tap-major (StagedPatchRow): for each tap (r, s), its
/// channels. Patch element (c, r, s) of pixel (oh, ow) is at the pixel's offset ((oh - first
/// oh) * stride_h rows, ow * stride_w columns) plus r * dilation_h rows and s * dilation_w
/// columns (the tap's group) plus c planes (the step): each tap is a plain K loop over the
/// channels at a stride of one plane, the micro-kernel broadcasting in place. The band is the
/// image's size plus its halo, where packed patch rows are R*S times the image.
GemmOperands::StagedA PaddedBandStaging(const ir::ConvParams& p, const BlockedPlan& plan) {
  const BandShape band = BandOf(p, plan.row_block);
  const int64_t out_w = ir::ConvOutW(p), m = plan.p.m, row_block = plan.row_block;
  const int64_t taps = p.kernel_h * p.kernel_w;
  GemmOperands::StagedA staged;
  staged.floats = StagedBandFloats(p, row_block, plan.kc);
  staged.groups = taps;
  staged.row_offset = [p, band, out_w](const Expr& i_begin, const Expr& row) {
    const Expr first_oh = i_begin / MakeInt(out_w);
    return (row / MakeInt(out_w) - first_oh) * MakeInt(p.stride_h * band.width) +
           (row % MakeInt(out_w)) * MakeInt(p.stride_w);
  };
  staged.group_offset = [p, band](const Expr& tap) {
    Expr offset = MakeInt(0);
    if (p.kernel_h > 1) {
      offset = (tap / MakeInt(p.kernel_w)) * MakeInt(p.dilation_h * band.width);
    }
    if (p.kernel_w > 1) offset = offset + (tap % MakeInt(p.kernel_w)) * MakeInt(p.dilation_w);
    return offset;
  };
  staged.step_offset = [band](const Expr& channel) { return channel * MakeInt(band.plane); };
  staged.fill = [p, band, out_w, m, row_block, taps](const Expr& b, const Expr& k_begin,
                                                     const Expr& k_extent, const Expr& i_begin,
                                                     const std::string& buffer) -> Stmt {
    const Expr first_oh = i_begin / MakeInt(out_w);
    const Expr last_oh =
        (ir::Min(i_begin + MakeInt(row_block), MakeInt(m)) - MakeInt(1)) / MakeInt(out_w);
    const Expr height =
        (last_oh - first_oh) * MakeInt(p.stride_h) + MakeInt((p.kernel_h - 1) * p.dilation_h + 1);
    // A band row is one masked vector range (a power of two of lanes covering it), or where it
    // is wider than the code generator's 512 lanes per vector loop, ranges of 64 lanes. (64-lane
    // ranges for the stem's 229-column rows ran it at 832 us instead of 594: kept for the rows
    // that need them.)
    const int64_t lanes = band.width <= 512 ? PowerOfTwoCeil(band.width) : 64;
    const int64_t chunks = CeilDiv(band.width, lanes);
    const Expr channel = ir::MakeVar("sc"), row = ir::MakeVar("sr");
    const Expr x =
        chunks > 1 ? ir::MakeVar("sxc") * MakeInt(lanes) + ir::MakeVar("sx") : ir::MakeVar("sx");
    const Expr ih = first_oh * MakeInt(p.stride_h) - MakeInt(p.pad_top) + row;
    const Expr iw = x - MakeInt(p.pad_left);
    const Expr in_plane =
        (b * MakeInt(p.in_channels) + k_begin / MakeInt(taps) + channel) * MakeInt(p.in_h * p.in_w);
    const Expr at = channel * MakeInt(band.plane) + row * MakeInt(band.width) + x;
    const Stmt zero = ir::MakeStore(buffer, at, ir::MakeFloat(0.0));
    const Stmt copy =
        ir::MakeStore(buffer, at, ir::MakeLoad(InputName(0), in_plane + ih * MakeInt(p.in_w) + iw));
    const Expr in_band = Lt(x, MakeInt(band.width));
    const Expr inside_w = And(Le(MakeInt(0), iw), Lt(iw, MakeInt(p.in_w)));
    const Expr inside_h = And(Le(MakeInt(0), ih), Lt(ih, MakeInt(p.in_h)));
    auto ranges = [&](Stmt lane) {
      Stmt loop = ir::MakeFor("sx", MakeInt(0), MakeInt(lanes), ir::ForKind::kVectorized,
                              ir::MakeIf(in_band, std::move(lane)));
      if (chunks == 1) return loop;
      return ir::MakeFor("sxc", MakeInt(0), MakeInt(chunks), ir::ForKind::kSerial, loop);
    };
    const Stmt band_row =
        ir::MakeIf(inside_h, ranges(ir::MakeIf(inside_w, copy, zero)), ranges(zero));
    return ir::MakeFor("sc", MakeInt(0), k_extent / MakeInt(taps), ir::ForKind::kSerial,
                       ir::MakeFor("sr", MakeInt(0), height, ir::ForKind::kSerial, band_row));
  };
  return staged;
}

/// The channel view's operands: A[pixel, k] is patch element (k, pixel), packed a patch row's
/// run at a time (the pixels of a row tile are consecutive output pixels); B[k, channel] is
/// W[channel, k], which the exporter stores pre-packed (a kernel packing it at run time would
/// gather a column per vector); C[pixel, channel] is stored into the NCHW output at
/// channel * OH*OW + pixel, a column vector at a stride of one plane, the epilogue at (plane,
/// pixel) as in the pixel view.
GemmOperands ChannelOperands(const ir::ConvParams& p, const BlockedPlan& plan) {
  const GemmOperands pixel = ConvOperands(p);
  const ir::MatMulParams view = ChannelGemmView(p);
  GemmOperands operands;
  operands.a = [patch = pixel.b](const Expr& b, const Expr& row, const Expr& k) {
    return patch(b, k, row);
  };
  operands.b = [view, p, plan](const Expr&, const Expr& k, const Expr& col) {
    const Expr row = plan.staged_a ? StagedPatchRow(p, plan.kc, k) : k;
    return ir::MakeLoad(InputName(1), col * MakeInt(view.k) + row);
  };
  if (!ir::ConvIsPointwise(p)) operands.pack_a_column = PatchRowPacker(p);
  if (plan.staged_a) operands.staged_a = PaddedBandStaging(p, plan);
  operands.out = [view](const Expr& b, const Expr& row, const Expr& col) {
    const Expr plane = b * MakeInt(view.n) + col;
    return GemmOperands::Place{plane * MakeInt(view.m) + row, plane, row};
  };
  operands.write_back_by_rows = true;  // a channel's pixels are contiguous
  return operands;
}

/// Whether the A staging of a block of `mc` pixels x `kc` patch rows takes more than half of L2
/// (packed patch rows, pack_a 1, or a staged band, pack_a 2; none read in place, pack_a 0).
bool StagingExceedsL2(const ir::ConvParams& p, const ir::MatMulParams& view,
                      const target::HardwareInfo& hw, int64_t pack_a, int64_t mr, int64_t mc,
                      int64_t kc) {
  const int64_t rows = BlockRows(view, mr, mc), k = std::min(kc, view.k);
  if (pack_a == kPackAStaged) {
    const int64_t floats = StagedBandFloats(p, rows, k);
    return floats * 4 > hw.l2_bytes / 2 || floats > kMaxLocalFloats;
  }
  return pack_a == 1 && !ir::ConvIsPointwise(p) && rows * k * 4 > hw.l2_bytes / 2;
}

/// Implicit GEMM with output channels in the vector lanes and pixels in the register tile's
/// rows: every vector is full when K is a multiple of the lanes (ResNet's 64..2048), where the
/// pixel view's last vector of a 7x7 plane holds one of 16 pixels. Weights are read pre-packed.
class ChannelConvSketch final : public BlockedConvSketch {
 public:
  using BlockedConvSketch::BlockedConvSketch;

  std::vector<Knob> Knobs(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    const ir::MatMulParams view = ChannelGemmView(w.conv);
    std::vector<Knob> knobs = BlockedKnobs(spec_, view, hw);
    // The weights arrive pre-packed (the exporter packs them, the worker packs its random
    // ones: PackInputsForTrace); 1 (packed at run time) only replays where they cannot be.
    knobs[kPackB].values = {kPackBPrepacked};
    // All of K in one block too (its partial sums never leave the registers), and K blocks of
    // whole channels near the usual targets (a staged band needs them), a number of channels
    // dividing C: equal blocks, the per-tap channel loop a whole number of LLVM's 8-way
    // unrolled steps for 16 to 64 channels (ResNet-50's 3x3 convs in blocks of 32 or 64
    // channels: 0.88-0.96 of the time in the even splits of before, 26-43 channels; the two
    // alternated 200 times in one process, bench/results/conv_kc_divisors.md).
    const int64_t taps = w.conv.kernel_h * w.conv.kernel_w;
    std::vector<int64_t> channel_kc;
    for (int64_t target : {128, 256, 384, 512}) {
      channel_kc.push_back(std::min(
          view.k, taps * NearestDivisor(w.conv.in_channels, static_cast<double>(target) / taps)));
    }
    channel_kc.push_back(view.k);
    for (int64_t kc : channel_kc) {
      if (std::find(knobs[kKc].values.begin(), knobs[kKc].values.end(), kc) ==
          knobs[kKc].values.end()) {
        knobs[kKc].values.push_back(kc);
      }
    }
    std::sort(knobs[kKc].values.begin(), knobs[kKc].values.end());
    // A staged band of the image (read in place), patch rows packed, or A read in place.
    knobs[kPackA].values = {0, 1, kPackAStaged};
    // The default trace (each knob's first value) is what measured best on ResNet-50's convs
    // (AMD Zen 5, bench/conv_mappings): the widest register tile the ISA holds with 4
    // (AVX-512) or 3 (AVX2) vectors of channels, K blocks of whole channels near 384, the pixels
    // split over the cores, the image band staged (a pointwise conv reads its input in place:
    // its patch matrix is the image).
    const int64_t mr = spec_.vw == 16 ? 6 : 4;
    Prefer(knobs[kMr], mr);
    Prefer(knobs[kNr], spec_.nr_choices.back());
    const int64_t pack_a = ir::ConvIsPointwise(w.conv) ? 0 : kPackAStaged;
    Prefer(knobs[kPackA], pack_a);
    const int64_t kc = NearestTo(channel_kc, 384);
    Prefer(knobs[kKc], kc);
    // The pixel blocks whose staging fits the L2 rule (PruneRule) that load the busiest core
    // least (196 pixels in blocks of 98 on two cores, not 128 + 68: 487 vs 647 us), the
    // largest of those.
    const int64_t cores = std::max(hw.cores, 1);
    int64_t mc = *std::min_element(knobs[kMc].values.begin(), knobs[kMc].values.end());
    auto busiest = [&](int64_t value) {
      return CeilDiv(CeilDiv(view.m, value), cores) * std::min(value, view.m);
    };
    for (int64_t value : knobs[kMc].values) {
      if (StagingExceedsL2(w.conv, view, hw, pack_a, mr, value, kc)) continue;
      if (busiest(value) < busiest(mc) || (busiest(value) == busiest(mc) && value > mc)) {
        mc = value;
      }
    }
    Prefer(knobs[kMc], mc);
    Prefer(knobs[kNc], view.n);
    Prefer(knobs[kPar], 1);
    return knobs;
  }

  /// Two other register tiles at the default's other knobs: the next narrower row count, and
  /// half the vectors of channels. The default's widest tile is what measured best on most of
  /// ResNet-50's convs, but not on the stem (3 channels, 7x7 stride 2, K = 147 in one block):
  /// 6x4 ran at 814-860 µs there, 4x4 at 516-527 and 6x2 at 524-545 (AMD Zen 5,
  /// bench/conv_mappings, the same kc and mc), 5x4 at 529 and 7x4 at 843. Judged on its default
  /// and a few random samples, the mapping lost the stem to the pixel-vectorized one (626-636
  /// µs) in the two farm runs before the seeds (48 and 96 trials per task: 6 and 7 of its trials).
  ///
  /// A third where a register tile's row count divides the pixels and none of the usual ones
  /// does (DividingTileRows: 7 rows for layer 4's 7x7 planes), with as many vectors of channels
  /// as the registers hold and the default's N block holds whole: with warm weights 7 x 3 ran
  /// 2048->512 in 0.77x the time of the farm's best 4 x 4 tile, 7 x 2 in 0.91x, 3x3 512 in 0.95x;
  /// with the weights evicted (as the farm measures) 7 x 3 in 0.96x (Emerald Rapids VM,
  /// bench/conv_mappings).
  std::vector<KnobValues> Seeds(const ir::Workload& w, const target::HardwareInfo& hw,
                                const KnobValues& defaults) const override {
    std::vector<KnobValues> seeds;
    if (const int64_t rows = DividingTileRows(spec_, ChannelGemmView(w.conv).m); rows > 0) {
      // The widest vector count the space admits with these rows (the registers, whole tiles
      // in the default's N block, ...).
      for (auto nr = spec_.nr_choices.rbegin(); nr != spec_.nr_choices.rend(); ++nr) {
        KnobValues seed = defaults;
        seed[kMr] = rows;
        seed[kNr] = *nr;
        if (PruneRule(w, hw, seed) == nullptr) {
          seeds.push_back(std::move(seed));
          break;
        }
      }
    }
    int64_t narrower = 0;
    for (int64_t mr : spec_.mr_choices) {
      if (mr < defaults[kMr]) narrower = std::max(narrower, mr);
    }
    if (narrower > 0) {
      seeds.push_back(defaults);
      seeds.back()[kMr] = narrower;
    }
    if (defaults[kNr] > 1) {
      seeds.push_back(defaults);
      seeds.back()[kNr] = std::max<int64_t>(1, defaults[kNr] / 2);
    }
    return seeds;
  }

  const char* PruneRule(const ir::Workload& w, const target::HardwareInfo& hw,
                        const KnobValues& values) const override {
    const ir::MatMulParams view = ChannelGemmView(w.conv);
    const int64_t taps = w.conv.kernel_h * w.conv.kernel_w;
    if (values[kPackA] == kPackAStaged && values[kKc] < view.k && values[kKc] % taps != 0) {
      return "staged_channels";  // a staged band holds whole channels
    }
    // The packed patches (or the staged band) are written, then read by every column tile: a
    // patch block past L2 ran at 60 % of its isolated speed inside ResNet-50 (the stride-2 3x3
    // of layer 2: 950 us in the model for 569 us measured alone, at 784 pixels x 1152; 606 us at
    // 392 x 232).
    if (StagingExceedsL2(w.conv, view, hw, values[kPackA], values[kMr], values[kMc], values[kKc])) {
      return values[kPackA] == kPackAStaged ? "l2_band" : "l2_patch_block";
    }
    // K blocks keep their partial sums in a task-local [mc][nc + lanes] buffer, which must be
    // a legal allocation.
    if (values[kKc] < view.k &&
        std::min(values[kMc], view.m) * (std::min(values[kNc], view.n) + spec_.vw) >
            kMaxLocalFloats) {
      return "partials_buffer";
    }
    // A whole-K B panel streams from L2 (the micro-kernel reads each of its vectors once per
    // row tile, in order): the micro-panel rule then holds it to half of L2, not to L1.
    target::HardwareInfo judged = hw;
    if (values[kKc] >= view.k) judged.l1d_bytes = std::max(hw.l1d_bytes, hw.l2_bytes / 8);
    // A staged band is what the M block of A holds in cache (a fraction of mc x kc).
    const int64_t a_block =
        values[kPackA] == kPackAStaged
            ? StagedBandFloats(w.conv, BlockRows(view, values[kMr], values[kMc]),
                               std::min(values[kKc], view.k))
            : -1;
    return BlockedPruneRule(spec_, view, judged, values, a_block);
  }

  absl::StatusOr<ir::LoweredFunc> Lower(const ir::Workload& w, const KnobValues& values,
                                        const std::string& func_name) const override {
    GTCO_RETURN_IF_ERROR(w.Validate());
    if (!IsChannelConv(w)) {
      return absl::InvalidArgumentError(
          "the channel-vectorized conv sketch lowers convs with one group only");
    }
    if (values.size() == kNumBlockedKnobs && values[kPackB] == 0) {
      return absl::InvalidArgumentError(
          "the channel-vectorized conv reads its weights packed (pack_b 1 or 2), not in place");
    }
    GTCO_ASSIGN_OR_RETURN(const BlockedPlan plan,
                          MakeBlockedPlan(ChannelGemmView(w.conv), values, spec_.vw));
    const int64_t taps = w.conv.kernel_h * w.conv.kernel_w;
    if (plan.staged_a && plan.kc % taps != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("a staged image band needs K blocks of whole channels: kc ", plan.kc,
                       " is not a multiple of the kernel's ", taps, " taps"));
    }
    if (plan.staged_a && StagedBandFloats(w.conv, plan.row_block, plan.kc) > kMaxLocalFloats) {
      return absl::InvalidArgumentError(
          "the staged image band of a block exceeds the 4 MiB local buffer limit");
    }
    GTCO_ASSIGN_OR_RETURN(const EpilogueBuilder epilogue, ConvEpilogue(w));
    return ir::LoweredFunc{func_name, KernelParams(w),
                           LowerBlockedPlan(plan, epilogue, ChannelOperands(w.conv, plan))};
  }
};

/// The channel-vectorized conv mapping of one FMA spec.
class ChannelConvMapping final : public MappingSketch {
 public:
  explicit ChannelConvMapping(FmaMappingSpec spec) : sketch_(std::move(spec)) {}
  const char* Name() const override { return sketch_.spec().mapping; }
  const Sketch& sketch() const override { return sketch_; }
  MappingVerdict Explain(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    if (w.anchor == ir::AnchorKind::kConv && w.conv.groups != 1) {
      return {Name(), false,
              absl::StrCat(w.conv.groups, " groups: its GEMM view spans all ",
                           "channels of an image (one group only)")};
    }
    return FmaVerdict(Name(), sketch_.spec(), w, hw,
                      absl::StrCat("implicit GEMM, output channels in ", sketch_.spec().vw,
                                   "-lane vectors, pixels in registers, weights pre-packed"));
  }
  /// Ahead of the pixel mappings where its default ran faster (bench/conv_mappings --defaults,
  /// AMD Zen 4, AVX-512 and AVX2 alike): convs with taps and 32+ output channels (ResNet's 3x3s:
  /// 1.3-1.6x; DenseNet's 32-channel ones: 1.5-2.2x), and pointwise ones of 32+ output channels
  /// on planes of at most 28x28 (7x7: 1.2-1.8x). Pointwise convs on larger planes stay with
  /// pixels in the lanes (56x56: 1.1-1.5x the other way), as do convs of fewer output channels
  /// (a tile's vectors would idle).
  int Rank(const ir::Workload& w, const target::HardwareInfo&) const override {
    if (w.anchor != ir::AnchorKind::kConv) return 0;
    const ir::ConvParams& p = w.conv;
    const bool pointwise = p.kernel_h * p.kernel_w == 1;
    const int64_t pixels = ir::ConvOutH(p) * ir::ConvOutW(p);
    return p.out_channels >= 32 && (!pointwise || pixels <= 28 * 28) ? -1 : 0;
  }

 private:
  ChannelConvSketch sketch_;
};

/// The conv mapping of one FMA spec: the spec's CPU features and f32 operands.
class FmaConvMapping final : public MappingSketch {
 public:
  explicit FmaConvMapping(FmaMappingSpec spec) : sketch_(std::move(spec)) {}
  const char* Name() const override { return sketch_.spec().mapping; }
  const Sketch& sketch() const override { return sketch_; }
  MappingVerdict Explain(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    return FmaVerdict(Name(), sketch_.spec(), w, hw,
                      absl::StrCat("implicit GEMM on ", sketch_.spec().vw,
                                   "-lane FMA micro-kernels, patches gathered from the image"));
  }

 private:
  FmaConvSketch sketch_;
};

}  // namespace

FmaMappingSpec Renamed(FmaMappingSpec spec, const char* sketch_name, const char* mapping) {
  spec.sketch_name = sketch_name;
  spec.mapping = mapping;
  return spec;
}

absl::StatusOr<std::optional<PrepackedOperand>> PrepackChannelConvWeights(
    const ir::Workload& w, const schedule::Trace& t, const std::vector<float>& weights) {
  int64_t vw = 0;
  for (const MappingSketch* mapping :
       {&Avx512FmaChannelConvMapping(), &Avx2FmaChannelConvMapping()}) {
    if (t.sketch == mapping->sketch().Name()) {
      vw = static_cast<const ChannelConvSketch&>(mapping->sketch()).spec().vw;
    }
  }
  if (vw == 0 || w.anchor != ir::AnchorKind::kConv) return std::optional<PrepackedOperand>();
  GTCO_RETURN_IF_ERROR(w.Validate());
  const ir::MatMulParams view = ChannelGemmView(w.conv);
  if (static_cast<int64_t>(weights.size()) != view.n * view.k) {
    return absl::InvalidArgumentError(absl::StrCat("conv weights have ", weights.size(),
                                                   " elements, not ", view.n, " x ", view.k));
  }
  // W [K, C*R*S] row-major is B transposed; PrepackB reads B [C*R*S, K] row-major, its rows in
  // the view's order (tap-major within each K block when A is staged).
  GTCO_ASSIGN_OR_RETURN(const KnobValues values, BlockedTraceValues(w, t));
  const bool staged = values[kPackA] == kPackAStaged;
  const int64_t kc = std::min(values[kKc], view.k);
  if (staged && kc % (w.conv.kernel_h * w.conv.kernel_w) != 0) {
    return absl::InvalidArgumentError("a staged conv trace needs K blocks of whole channels");
  }
  std::vector<float> transposed(weights.size());
  for (int64_t k = 0; k < view.k; ++k) {
    const int64_t row = staged ? StagedPatchRow(w.conv, kc, k) : k;
    for (int64_t channel = 0; channel < view.n; ++channel) {
      transposed[k * view.n + channel] = weights[channel * view.k + row];
    }
  }
  GTCO_ASSIGN_OR_RETURN(PrepackedOperand prepacked,
                        PrepackForView(t, values, view, vw, transposed.data()));
  return std::optional<PrepackedOperand>(std::move(prepacked));
}

}  // namespace internal

const schedule::Sketch& DirectDepthwiseConvSketchV1() {
  static const internal::DirectDepthwiseSketch* const sketch =
      new internal::DirectDepthwiseSketch(/*stage_knob=*/false);
  return *sketch;
}

const MappingSketch& DirectDepthwiseConvMapping() {
  static const internal::DirectDepthwiseMapping* const mapping =
      new internal::DirectDepthwiseMapping();
  return *mapping;
}

const MappingSketch& Avx512FmaConvMapping() {
  static const internal::FmaConvMapping* const mapping = new internal::FmaConvMapping(
      internal::Renamed(internal::Avx512FmaSpec(), "conv_avx512_fma/v1", "avx512_fma"));
  return *mapping;
}

const MappingSketch& Avx512FmaChannelConvMapping() {
  static const internal::ChannelConvMapping* const mapping =
      new internal::ChannelConvMapping(internal::Renamed(
          internal::Avx512FmaSpec(), "conv_avx512_fma_channels/v1", "avx512_fma_channels"));
  return *mapping;
}

const MappingSketch& Avx2FmaChannelConvMapping() {
  static const internal::ChannelConvMapping* const mapping = new internal::ChannelConvMapping(
      internal::Renamed(internal::Avx2FmaSpec(), "conv_avx2_fma_channels/v1", "avx2_fma_channels"));
  return *mapping;
}

const MappingSketch& Avx2FmaConvMapping() {
  static const internal::FmaConvMapping* const mapping = new internal::FmaConvMapping(
      internal::Renamed(internal::Avx2FmaSpec(), "conv_avx2_fma/v1", "avx2_fma"));
  return *mapping;
}

}  // namespace gtco::kernels
