// "conv_avx512_bf16/v1": a bf16 convolution whose input arrives in the zero-padded pair layout
// (ConvParams::x_pairs, ir/conv.h: per image, C/2 planes of channel pairs, each pixel one 4-byte
// word of two bf16 values) on AVX-512 BF16 (vdpbf16ps), on the padded output grid as the AMX conv
// computes it (conv_pairs.h): 16 consecutive grid pixels of one channel pair at tap (r, s) are
// one 64-byte vector read in place from the pair plane, shifted by the tap.
//
// A register block is mr output channels by nr vectors of 16 grid pixels (mr * nr f32
// accumulators). Per channel pair and tap it loads the nr vectors of pairs and, for each of the
// mr channels, takes the channel's weight pair (one 32-bit word, broadcast to every lane) into
// vdpbf16ps with each of them: every bf16 pair of the image read from memory once per block,
// every weight word once per block. The weights come pre-packed (PrepackBf16ConvWeights), per
// block of mr output channels in the order the block reads them (pair, tap, channel), so a block
// streams its weights from one contiguous range. The block's sums then go through a local buffer
// to the NCHW output through the conv epilogue (bias, residual, activation), a masked vector run
// per output row the block covers (where the grid is the output, as for an unpadded 1x1, straight
// from the registers); a grid of at least 16 * nr pixels has its last block start at
// grid - 16 * nr (the pixels it shares with the block before it computed and written twice, the
// same values), so no block reads past its image's planes.
//
// Knobs: mr (output channels per block, a divisor of K), nr (16-pixel vectors per block; mr * nr
// + nr <= 31 of the 32 vector registers), order (0: a task's blocks walk the output channels
// innermost, reusing the image's vectors from the cache; 1: the pixels innermost, reusing the
// weights'), tasks (the blocks split into that many parallel tasks of consecutive blocks), pack_b
// (2: the weights pre-packed; the only value).
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/ir/conv.h"
#include "common/kernels/cpu/conv/conv_pairs.h"
#include "common/kernels/cpu/matmul_blocked/matmul_blocked.h"
#include "common/kernels/family.h"
#include "common/kernels/registry.h"
#include "common/schedule/epilogue.h"
#include "common/util/status.h"

namespace gtco::kernels {
namespace internal {
namespace {

using ir::Expr;
using ir::MakeInt;
using ir::MakeVar;
using ir::ScalarType;
using ir::Stmt;

constexpr int64_t kLanes = 16;    ///< f32 accumulators (grid pixels) per vector
constexpr int64_t kMaxRegs = 31;  ///< mr * nr accumulators + nr image vectors, of 32

enum KnobIdx { kMr, kNr, kOrder, kTasks, kPackB };

/// Every size of one (workload, decisions) pair.
struct Bf16ConvPlan {
  ir::ConvParams p;
  int64_t mr = 1, nr = 1, order = 0, tasks = 1;
  int64_t taps = 1;          ///< R * S
  int64_t pairs = 1;         ///< C / 2
  int64_t image_planes = 1;  ///< planes of one image: pairs + ConvPairTailPlanes
  int64_t plane = 1;         ///< ConvPairPlane: words of a pair plane
  int64_t grid = 1;          ///< OH * Wq: pixels of the padded output grid
  int64_t block_cols = 16, row_blocks = 1, col_blocks = 1, items = 1, per_task = 1;
  bool clamp = false;  ///< grid >= block_cols: the last block starts at grid - block_cols
  /// The grid is the output (Wq = OW: no columns dropped, as for an unpadded unit-stride 1x1):
  /// the write-back goes from the registers, with no local buffer.
  bool direct = false;
};

absl::StatusOr<Bf16ConvPlan> MakePlan(const ir::Workload& w, const KnobValues& values) {
  if (values.size() != 5u) return absl::InvalidArgumentError("conv_avx512_bf16 takes 5 knobs");
  if (const std::string why = Bf16ConvMismatch(w); !why.empty()) {
    return absl::InvalidArgumentError(why);
  }
  const ir::ConvParams& p = w.conv;
  GTCO_RETURN_IF_ERROR(CheckRange("mr", values[kMr], 1, 16));
  GTCO_RETURN_IF_ERROR(CheckRange("nr", values[kNr], 1, 8));
  GTCO_RETURN_IF_ERROR(CheckRange("order", values[kOrder], 0, 1));
  GTCO_RETURN_IF_ERROR(CheckRange("tasks", values[kTasks], 1, int64_t{1} << 20));
  if (values[kPackB] != kPackBPrepacked) {
    return absl::InvalidArgumentError(
        "conv_avx512_bf16 reads its weights pre-packed (pack_b 2) only");
  }
  Bf16ConvPlan plan;
  plan.p = p;
  plan.mr = values[kMr];
  plan.nr = values[kNr];
  plan.order = values[kOrder];
  if (p.out_channels % plan.mr != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("mr ", plan.mr, " must divide the ", p.out_channels, " output channels"));
  }
  if (plan.mr * plan.nr + plan.nr > kMaxRegs) {
    return absl::InvalidArgumentError(
        absl::StrCat("mr ", plan.mr, " x nr ", plan.nr, " takes more than 32 vector registers"));
  }
  plan.taps = p.kernel_h * p.kernel_w;
  plan.pairs = p.in_channels / 2;
  plan.image_planes = plan.pairs + ir::ConvPairTailPlanes(p);
  plan.plane = ir::ConvPairPlane(p);
  plan.grid = ir::ConvOutH(p) * ir::ConvPairPhaseW(p);
  plan.block_cols = kLanes * plan.nr;
  if (plan.block_cols > ir::kConvPairTail && plan.block_cols > plan.grid) {
    return absl::InvalidArgumentError(absl::StrCat("nr ", plan.nr, ": blocks of ", plan.block_cols,
                                                   " pixels on a grid of ", plan.grid,
                                                   " would read past the image"));
  }
  plan.clamp = plan.grid >= plan.block_cols;
  plan.direct = ir::ConvPairPhaseW(p) == ir::ConvOutW(p);  // then the grid is OH x OW
  plan.row_blocks = p.out_channels / plan.mr;
  plan.col_blocks = CeilDiv(plan.grid, plan.block_cols);
  plan.items = p.batch * plan.row_blocks * plan.col_blocks;
  plan.tasks = std::min(values[kTasks], plan.items);
  plan.per_task = CeilDiv(plan.items, plan.tasks);
  plan.tasks = CeilDiv(plan.items, plan.per_task);
  return plan;
}

/// The kernel of `plan`: tasks of consecutive blocks (image, row block, column block), each
/// block's sums in registers over every channel pair and tap, then its write-back.
Stmt LowerBlocks(const Bf16ConvPlan& plan, const schedule::EpilogueBuilder& epilogue) {
  const ir::ConvParams& p = plan.p;
  const Expr item = ir::MakeVar("item");
  const Expr per_image = MakeInt(plan.row_blocks * plan.col_blocks);
  const Expr n = item / per_image, in_image = item % per_image;
  const Expr rb =
      plan.order == 0 ? in_image % MakeInt(plan.row_blocks) : in_image / MakeInt(plan.col_blocks);
  const Expr cb =
      plan.order == 0 ? in_image / MakeInt(plan.row_blocks) : in_image % MakeInt(plan.col_blocks);
  Expr q0 = cb * MakeInt(plan.block_cols);
  if (plan.clamp) q0 = ir::Min(q0, MakeInt(plan.grid - plan.block_cols));
  const Expr co0 = rb * MakeInt(plan.mr);
  const std::string acc = "acc", cbuf = "cblock";
  const Expr r = MakeVar("tr"), c = MakeVar("tc"), v = MakeVar("tv");
  const Expr slot = (r * MakeInt(plan.nr) + c) * MakeInt(kLanes) + v;

  // The register block's loops: mr channels by nr vectors of 16 lanes.
  auto tile = [&](const Stmt& body) {
    return ir::MakeFor("tr", MakeInt(0), MakeInt(plan.mr), ir::ForKind::kUnrolled,
                       ir::MakeFor("tc", MakeInt(0), MakeInt(plan.nr), ir::ForKind::kUnrolled,
                                   ir::MakeFor("tv", MakeInt(0), MakeInt(kLanes),
                                               ir::ForKind::kVectorized, body)));
  };
  const Stmt zero = tile(ir::MakeStore(acc, slot, ir::MakeFloat(0.0)));

  // One (pair, tap) step: image word (pair cp, grid pixel q0 + 16 c + v shifted by the tap) by
  // the weight word of channel co0 + r, pair cp, tap t (PrepackBf16ConvWeights' order).
  const Expr cp = MakeVar("cp");
  auto step = [&](const Expr& tap, const Expr& tap_words) {
    const Expr x_word = (n * MakeInt(plan.image_planes) + cp) * MakeInt(plan.plane) + q0 +
                        tap_words + c * MakeInt(kLanes) + v;
    const Expr w_word =
        ((rb * MakeInt(plan.pairs) + cp) * MakeInt(plan.taps) + tap) * MakeInt(plan.mr) + r;
    const Expr x = ir::MakeTypedLoad(InputName(0), x_word * MakeInt(2), ScalarType::kI32);
    const Expr wt = ir::MakeTypedLoad(InputName(1), w_word * MakeInt(2), ScalarType::kI32);
    const Expr sum = ir::MakeTypedLoad(acc, slot, ScalarType::kF32);
    return tile(
        ir::MakeStore(acc, slot, ir::MakeTypedCall("dot_bf16x2", ScalarType::kF32, {sum, x, wt})));
  };
  const Stmt taps = PairTapSteps(p, step);
  const Stmt reduce =
      ir::MakeFor("cp", MakeInt(0), MakeInt(plan.pairs), ir::ForKind::kSerial, taps);
  Stmt finish;
  if (plan.direct) {
    // Every grid pixel is an output pixel (column q): the sums go from the registers through the
    // epilogue to the output, one vector a (channel, vector); past the grid only when unclamped.
    const Expr plane = n * MakeInt(p.out_channels) + co0 + r;
    const Expr q = q0 + c * MakeInt(kLanes) + v;
    Stmt store =
        ir::MakeStore(kOutputName, plane * MakeInt(plan.grid) + q,
                      epilogue.Apply(ir::MakeTypedLoad(acc, slot, ScalarType::kF32), plane, q));
    if (!plan.clamp)
      store = ir::MakeIf(ir::MakeBinary(ir::ExprKind::kLt, q, MakeInt(plan.grid)), store);
    finish = tile(store);
  } else {
    const Stmt spill =
        tile(ir::MakeStore(cbuf, r * MakeInt(plan.block_cols) + c * MakeInt(kLanes) + v,
                           ir::MakeTypedLoad(acc, slot, ScalarType::kF32)));
    finish = ir::MakeBlock({spill, PairGridWriteBack(p, plan.mr, plan.block_cols, epilogue, cbuf,
                                                     MakeInt(0), n, co0, q0)});
  }
  const Stmt block = ir::MakeBlock({zero, reduce, finish});

  const Expr task = MakeVar("task");
  const Expr first = task * MakeInt(plan.per_task);
  const Stmt items =
      ir::MakeFor("item", first, ir::Min(MakeInt(plan.per_task), MakeInt(plan.items) - first),
                  ir::ForKind::kSerial, block);
  const Stmt buffers = ir::MakeTypedAllocate(
      acc, plan.mr * plan.nr * kLanes, ScalarType::kF32,
      plan.direct
          ? items
          : ir::MakeTypedAllocate(cbuf, plan.mr * plan.block_cols, ScalarType::kF32, items));
  return ir::MakeFor("task", MakeInt(0), MakeInt(plan.tasks),
                     plan.tasks > 1 ? ir::ForKind::kParallel : ir::ForKind::kSerial, buffers);
}

class Bf16ConvSketch final : public LoopSketch {
 public:
  const char* Name() const override { return kBf16ConvSketchName; }
  std::vector<std::string> KnobNames() const override {
    return {"mr", "nr", "order", "tasks", "pack_b"};
  }
  bool AppliesTo(const ir::Workload& w) const override {
    return w.anchor == ir::AnchorKind::kConv && w.conv.x_pairs;
  }

  std::vector<Knob> Knobs(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    const ir::ConvParams& p = w.conv;
    const int64_t grid = ir::ConvOutH(p) * ir::ConvPairPhaseW(p);
    // 8 x 3 first (24 accumulators, 3 image vectors), then the other wide blocks.
    std::vector<int64_t> mr;
    for (int64_t value : {8, 6, 4, 12, 2, 1}) {
      if (p.out_channels % value == 0) mr.push_back(value);
    }
    // 3 vectors first, 4 or 2 where the grid wastes fewer pixels on them (a 7 x 7 image's
    // 63-pixel grid: one block of 64, not two of 48); 1 last.
    std::vector<int64_t> nr = {3, 4, 2};
    auto computed = [&](int64_t value) { return RoundUp(grid, kLanes * value); };
    std::stable_sort(nr.begin(), nr.end(),
                     [&](int64_t a, int64_t b) { return computed(a) < computed(b); });
    nr.push_back(1);
    // As the AMX conv: the weights reused from the cache (order 1) where they outweigh the image.
    std::vector<int64_t> order =
        PairConvWeightsOutweighImages(p) ? std::vector<int64_t>{1, 0} : std::vector<int64_t>{0, 1};
    const std::vector<int64_t> tasks =
        PairConvTaskChoices(hw, p.batch * p.out_channels * CeilDiv(grid, kLanes));
    return {
        {"mr", mr}, {"nr", nr}, {"order", order}, {"tasks", tasks}, {"pack_b", {kPackBPrepacked}}};
  }

  bool Admits(const ir::Workload& w, const target::HardwareInfo&,
              const KnobValues& values) const override {
    const ir::ConvParams& p = w.conv;
    const int64_t grid = ir::ConvOutH(p) * ir::ConvPairPhaseW(p);
    const int64_t mr = values[kMr], nr = values[kNr];
    return mr * nr + nr <= kMaxRegs && (nr == 1 || kLanes * nr <= grid);
  }

  absl::StatusOr<ir::LoweredFunc> Lower(const ir::Workload& w, const KnobValues& values,
                                        const std::string& func_name) const override {
    GTCO_RETURN_IF_ERROR(w.Validate());
    GTCO_ASSIGN_OR_RETURN(const Bf16ConvPlan plan, MakePlan(w, values));
    GTCO_ASSIGN_OR_RETURN(const schedule::EpilogueBuilder epilogue, schedule::ConvEpilogue(w));
    return ir::LoweredFunc{func_name, PairConvParams(w), LowerBlocks(plan, epilogue)};
  }
};

const Bf16ConvSketch& Sketch() {
  static const Bf16ConvSketch* const sketch = new Bf16ConvSketch();
  return *sketch;
}

class Bf16ConvMapping final : public MappingSketch {
 public:
  const char* Name() const override { return "avx512_bf16"; }
  const schedule::Sketch& sketch() const override { return Sketch(); }
  MappingVerdict Explain(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    return PairConvVerdict(
        Name(), Bf16ConvMismatch(w), hw, {"avx512f", "avx512_bf16"},
        "bf16 conv in the pair layout, avx512_bf16 present: vdpbf16ps on 16-pixel vectors of "
        "the padded image read in place, one per tap, weight pairs broadcast, pre-packed");
  }
  /// After the AMX conv where both apply (AMX hosts).
  int Rank(const ir::Workload&, const target::HardwareInfo&) const override { return 1; }
};

}  // namespace

std::string Bf16ConvMismatch(const ir::Workload& w) {
  return PairConvDtypeMismatch(w, "bf16 conv");
}

absl::StatusOr<std::optional<PrepackedOperand>> PrepackBf16ConvWeights(
    const ir::Workload& w, const schedule::Trace& t, const std::vector<float>& weights) {
  if (t.sketch != kBf16ConvSketchName) return std::optional<PrepackedOperand>();
  GTCO_RETURN_IF_ERROR(w.Validate());
  const ir::ConvParams& p = w.conv;
  const std::optional<int64_t> mr = t.Get("mr");
  if (!mr.has_value() || *mr < 1 || p.out_channels % *mr != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a conv_avx512_bf16 trace needs an mr dividing the ", p.out_channels, " output channels"));
  }
  GTCO_ASSIGN_OR_RETURN(PrepackedOperand packed, PackPairConvWeights(p, weights, *mr, t));
  return std::optional<PrepackedOperand>(std::move(packed));
}

}  // namespace internal

const schedule::Sketch& ConvAvx512Bf16Sketch() { return internal::Sketch(); }

const MappingSketch& Avx512Bf16ConvMapping() {
  static const internal::Bf16ConvMapping* const mapping = new internal::Bf16ConvMapping();
  return *mapping;
}

}  // namespace gtco::kernels
