// "conv_amx_bf16/v2" (and "/v1", without the kc knob): a bf16 convolution whose input arrives in
// the zero-padded pair layout (ConvParams::x_pairs, ir/conv.h: per image, C/2 planes of channel
// pairs, each pixel of the padded image one 4-byte word of two bf16 values) on Intel AMX tiles,
// with no gather and no packing of the image at run time.
//
// The conv is computed on the padded output grid: output pixel q = oh * Wp + ow (Wp the padded
// width; the columns ow >= OW of that grid are computed and dropped). For tap (r, s) the input
// pixel of q is q + r * Wp + s of the padded plane, so 16 consecutive grid pixels of 16 channel
// pairs are one B tile read in place from the pair layout: 16 rows (pairs) a plane apart, each
// 64 contiguous bytes. A strided conv's plane holds the padded image's stride phases (ir/conv.h),
// each Wq = ceil(Wp / stride_w) wide: the grid is OH x Wq and tap (r, s) reads pixel q + (r /
// stride_h) * Wq + s / stride_w of phase (r % stride_h, s % stride_w), again in place. One
// TileMatMul per tile block walks every tap (its B tap offsets) and every channel (the K steps),
// A being the weights stored pre-packed [K, R, S, C] (the exporter packs the constant, the
// worker its random weights: kernels::PackInputsForTrace), so a row of an A tile is 32 channels
// of one tap and the taps follow each other along K. The C block (mr x 16 output channels by nr
// x 16 grid pixels) goes to the NCHW output through the conv epilogue, a masked vector run per
// output row it covers.
//
// Knobs: mr (A tiles: 16-channel row tiles per block), nr (B tiles: 16-pixel column tiles),
// order (0: a task's blocks walk the output channels innermost, reusing the image's tiles from
// the cache; 1: the pixels innermost, reusing the weights'), tasks (the blocks split into that
// many parallel tasks of consecutive blocks), pack_b (2: the weights pre-packed; the only
// value: their [K, C, R, S] layout has no tile rows), and in "/v2" kc: 0, every tap and channel
// of a block in one TileMatMul (as "/v1", kept so that its stored traces replay); else K in
// passes of kc 64-byte steps within one tap: per task's row block (mr x 16 output channels) and
// its group of column blocks, each pass runs over every column block of the group, accumulating
// into the group's C blocks (f32, in a buffer), so that the pass's A tiles (mr x kc KiB of
// weights) stay in L1 across the column blocks instead of streaming from L2 once per block;
// the write-back follows the last pass. Tasks then split (image, row block, column group).
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/ir/conv.h"
#include "common/kernels/cpu/conv/conv_amx.h"
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
using ir::ScalarType;
using ir::Stmt;

constexpr int64_t kTile = 16;  ///< rows of an AMX tile; pixels (4-byte words) per tile row
constexpr int64_t kMaxPassBytes = 256 << 10;  ///< kc > 0: C blocks of one column group

enum KnobIdx { kMr, kNr, kOrder, kTasks, kPackB, kKc };

/// Every size of one (workload, decisions) pair.
struct AmxConvPlan {
  ir::ConvParams p;
  int64_t mr = 1, nr = 1, order = 0, tasks = 1;
  int64_t taps = 1;    ///< R * S
  int64_t grid_w = 1;  ///< Wq: the padded width, per stride phase
  int64_t plane = 1;   ///< ConvPairPlane: elements of a pair plane (in words)
  int64_t out_h = 1, out_w = 1;
  int64_t grid = 1;  ///< OH * Wq: pixels of the padded output grid
  int64_t block_cols = 16, row_blocks = 1, col_blocks = 1, items = 1, per_task = 1;
  int64_t k_steps = 1;       ///< C / 32: 64-byte steps along the channels of one tap
  int64_t kc = 0;            ///< steps per pass (0: one pass of every tap and step)
  int64_t col_groups = 1;    ///< with kc: column groups per (image, row block)
  int64_t group_blocks = 1;  ///< with kc: column blocks per group (the last may hold fewer)
};

absl::StatusOr<AmxConvPlan> MakePlan(const ir::Workload& w, const KnobValues& values, bool passes) {
  if (values.size() != (passes ? 6u : 5u)) {
    return absl::InvalidArgumentError(
        absl::StrCat("conv_amx_bf16 takes ", passes ? 6 : 5, " knobs"));
  }
  if (const std::string why = AmxConvMismatch(w); !why.empty()) {
    return absl::InvalidArgumentError(why);
  }
  GTCO_RETURN_IF_ERROR(CheckOneOf("mr", values[kMr], {1, 2}));
  GTCO_RETURN_IF_ERROR(CheckOneOf("nr", values[kNr], {1, 2, 3}));
  GTCO_RETURN_IF_ERROR(CheckRange("order", values[kOrder], 0, 1));
  GTCO_RETURN_IF_ERROR(CheckRange("tasks", values[kTasks], 1, int64_t{1} << 20));
  if (values[kPackB] != kPackBPrepacked) {
    return absl::InvalidArgumentError(
        "conv_amx_bf16 reads its weights pre-packed [K, R, S, C] (pack_b 2) only");
  }
  AmxConvPlan plan;
  plan.p = w.conv;
  const ir::ConvParams& p = plan.p;
  plan.mr = values[kMr];
  plan.nr = values[kNr];
  plan.order = values[kOrder];
  plan.taps = p.kernel_h * p.kernel_w;
  plan.grid_w = ir::ConvPairPhaseW(p);
  plan.plane = ir::ConvPairPlane(p);
  plan.out_h = ir::ConvOutH(p);
  plan.out_w = ir::ConvOutW(p);
  plan.grid = plan.out_h * plan.grid_w;
  plan.block_cols = kTile * plan.nr;
  if ((p.out_channels / kTile) % plan.mr != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mr ", plan.mr, " must divide the ", p.out_channels / kTile, " 16-channel row tiles"));
  }
  plan.row_blocks = p.out_channels / (kTile * plan.mr);
  plan.col_blocks = CeilDiv(plan.grid, plan.block_cols);
  plan.k_steps = p.in_channels / 32;
  plan.kc = passes ? values[kKc] : 0;
  if (plan.kc < 0 || (plan.kc > 0 && plan.k_steps % plan.kc != 0)) {
    return absl::InvalidArgumentError(absl::StrCat("kc ", plan.kc, " must be 0 or divide the ",
                                                   plan.k_steps, " K steps of a tap"));
  }
  if (plan.kc == 0) {
    plan.items = p.batch * plan.row_blocks * plan.col_blocks;
  } else {
    // Enough column groups per (image, row block) for the tasks asked for.
    const int64_t rows = p.batch * plan.row_blocks;
    plan.col_groups = std::clamp<int64_t>(CeilDiv(values[kTasks], rows), 1, plan.col_blocks);
    // A group's C blocks (a task's stack buffer) at most kMaxPassBytes.
    const int64_t block_bytes = kTile * plan.mr * plan.block_cols * 4;
    plan.group_blocks = std::min(CeilDiv(plan.col_blocks, plan.col_groups),
                                 std::max<int64_t>(1, kMaxPassBytes / block_bytes));
    plan.col_groups = CeilDiv(plan.col_blocks, plan.group_blocks);
    plan.items = rows * plan.col_groups;
  }
  plan.tasks = std::min(values[kTasks], plan.items);
  plan.per_task = CeilDiv(plan.items, plan.tasks);
  plan.tasks = CeilDiv(plan.items, plan.per_task);
  return plan;
}

/// The TileMatMul arguments every block shares: the instruction, the A tiles' and B's strides.
ir::TileMatMulArgs BaseArgs(const AmxConvPlan& plan) {
  ir::TileMatMulArgs args;
  args.instruction = "tdpbf16ps";
  args.nr = plan.nr;
  args.a_stride = plan.taps * plan.p.in_channels * 2;  // one output channel's weights
  args.b_col_stride = kTile * 4;
  args.b_row_stride = plan.plane * 4;
  return args;
}

/// Where item `item` of a task's range lies: its image, row block and column unit (a column
/// block, or a group of them with kc), from `columns` units per row block; order 0 walks the
/// row blocks innermost.
struct ItemCoords {
  Expr n, rb, column;
};
ItemCoords ItemAt(const AmxConvPlan& plan, const Expr& item, int64_t columns) {
  const Expr per_image = MakeInt(plan.row_blocks * columns);
  const Expr in_image = item % per_image;
  if (plan.order == 0) {
    return {item / per_image, in_image % MakeInt(plan.row_blocks),
            in_image / MakeInt(plan.row_blocks)};
  }
  return {item / per_image, in_image / MakeInt(columns), in_image % MakeInt(columns)};
}

/// The tasks (parallel when more than one), each over its consecutive items with `body`, and
/// `cbuf` (`floats` f32) allocated per task.
Stmt TaskLoop(const AmxConvPlan& plan, const std::string& cbuf, int64_t floats, Stmt body) {
  const Expr task = ir::MakeVar("task");
  const Expr first = task * MakeInt(plan.per_task);
  const Stmt items =
      ir::MakeFor("item", first, ir::Min(MakeInt(plan.per_task), MakeInt(plan.items) - first),
                  ir::ForKind::kSerial, std::move(body));
  return ir::MakeFor("task", MakeInt(0), MakeInt(plan.tasks),
                     plan.tasks > 1 ? ir::ForKind::kParallel : ir::ForKind::kSerial,
                     ir::MakeTypedAllocate(cbuf, floats, ScalarType::kF32, items));
}

/// kc 0: the tile blocks of one task, each a TileMatMul over every tap and channel then the
/// write-back of its C block (in `cbuf`, mr x 16 rows by block_cols f32).
Stmt LowerOnePass(const AmxConvPlan& plan, const schedule::EpilogueBuilder& epilogue) {
  const ir::ConvParams& p = plan.p;
  const ItemCoords at = ItemAt(plan, ir::MakeVar("item"), plan.col_blocks);
  const Expr& n = at.n;
  const Expr q0 = at.column * MakeInt(plan.block_cols);
  const Expr co0 = at.rb * MakeInt(kTile * plan.mr);
  const std::string cbuf = "cblock";

  ir::TileMatMulArgs args = BaseArgs(plan);
  args.c = ir::MakeTypedLoad(cbuf, MakeInt(0), ScalarType::kF32);
  // Pair 0 of image n, grid pixel q0, in bf16 elements (two per word).
  const int64_t image_planes = p.in_channels / 2 + ir::ConvPairTailPlanes(p);
  args.b = ir::MakeTypedLoad(
      InputName(0), (n * MakeInt(image_planes * plan.plane) + q0) * MakeInt(2), ScalarType::kBF16);
  const int64_t a_row = plan.taps * p.in_channels;  // bf16 elements of one output channel
  for (int64_t t = 0; t < plan.mr; ++t) {
    args.a.push_back(ir::MakeTypedLoad(InputName(1), (co0 + MakeInt(t * kTile)) * MakeInt(a_row),
                                       ScalarType::kBF16));
  }
  args.k_steps = plan.k_steps;
  if (plan.taps > 1) {
    for (int64_t r = 0; r < p.kernel_h; ++r) {
      for (int64_t s = 0; s < p.kernel_w; ++s)
        args.b_taps.push_back(4 * PairTapWords(plan.p, r, s));
    }
  }
  const Stmt product = ir::MakeTileMatMul(args);
  const Stmt write_back = PairGridWriteBack(plan.p, kTile * plan.mr, plan.block_cols, epilogue,
                                            cbuf, MakeInt(0), n, co0, q0);
  return TaskLoop(plan, cbuf, kTile * plan.mr * plan.block_cols,
                  ir::MakeBlock({product, write_back}));
}

/// kc > 0: per task's items (image, row block, column group), K in passes of kc steps within
/// one tap (pass = tap * chunks + chunk), each over every column block of the group into its C
/// block in `cbuf` (the first pass from zero, the others accumulating), then the write-backs.
Stmt LowerPasses(const AmxConvPlan& plan, const schedule::EpilogueBuilder& epilogue) {
  const ir::ConvParams& p = plan.p;
  const Expr pass = ir::MakeVar("pass"), block = ir::MakeVar("cbl");
  const ItemCoords at = ItemAt(plan, ir::MakeVar("item"), plan.col_groups);
  const Expr &n = at.n, &rb = at.rb;
  const Expr first_block = at.column * MakeInt(plan.group_blocks);
  const Expr blocks_here =
      ir::Min(MakeInt(plan.group_blocks), MakeInt(plan.col_blocks) - first_block);
  const Expr q0 = (first_block + block) * MakeInt(plan.block_cols);
  const Expr co0 = rb * MakeInt(kTile * plan.mr);
  const int64_t block_floats = kTile * plan.mr * plan.block_cols;
  const Expr c_base = block * MakeInt(block_floats);
  const std::string cbuf = "cblocks";
  const int64_t chunks = plan.k_steps / plan.kc;
  const int64_t image_planes = p.in_channels / 2 + ir::ConvPairTailPlanes(p);
  const int64_t a_row = plan.taps * p.in_channels;

  // The TileMatMul of pass `at` (an expression) on column block `block` of the group.
  auto product = [&](const Expr& at, bool accumulate) {
    const Expr tap = at / MakeInt(chunks), chunk = at % MakeInt(chunks);
    ir::TileMatMulArgs args = BaseArgs(plan);
    args.c = ir::MakeTypedLoad(cbuf, c_base, ScalarType::kF32);
    // Pair chunk * kc * 16 of image n at grid pixel q0, shifted by the tap, in bf16 elements.
    args.b = ir::MakeTypedLoad(InputName(0),
                               (n * MakeInt(image_planes * plan.plane) + q0 +
                                chunk * MakeInt(plan.kc * kTile * plan.plane)) *
                                       MakeInt(2) +
                                   PairTapWordsExpr(plan.p, tap) * MakeInt(2),
                               ScalarType::kBF16);
    for (int64_t t = 0; t < plan.mr; ++t) {
      args.a.push_back(ir::MakeTypedLoad(
          InputName(1),
          (co0 + MakeInt(t * kTile)) * MakeInt(a_row) +
              (tap * MakeInt(plan.k_steps) + chunk * MakeInt(plan.kc)) * MakeInt(32),
          ScalarType::kBF16));
    }
    args.k_steps = plan.kc;
    args.accumulate = accumulate;
    return ir::MakeFor("cbl", MakeInt(0), blocks_here, ir::ForKind::kSerial,
                       ir::MakeTileMatMul(args));
  };
  const Stmt first_pass = product(MakeInt(0), false);
  const Stmt other_passes = ir::MakeFor("pass", MakeInt(1), MakeInt(plan.taps * chunks - 1),
                                        ir::ForKind::kSerial, product(pass, true));
  const Stmt write_backs = ir::MakeFor("cbl", MakeInt(0), blocks_here, ir::ForKind::kSerial,
                                       PairGridWriteBack(plan.p, kTile * plan.mr, plan.block_cols,
                                                         epilogue, cbuf, c_base, n, co0, q0));
  std::vector<Stmt> body = {first_pass};
  if (plan.taps * chunks > 1) body.push_back(other_passes);
  body.push_back(write_backs);
  return TaskLoop(plan, cbuf, plan.group_blocks * block_floats, ir::MakeBlock(body));
}

class AmxConvSketch final : public LoopSketch {
 public:
  /// `passes`: "/v2" with the kc knob (else "/v1", one pass; kept so that its traces replay).
  explicit AmxConvSketch(bool passes) : passes_(passes) {}
  const char* Name() const override { return passes_ ? kAmxConvSketchName : kAmxConvSketchNameV1; }
  std::vector<std::string> KnobNames() const override {
    if (passes_) return {"mr", "nr", "order", "tasks", "pack_b", "kc"};
    return {"mr", "nr", "order", "tasks", "pack_b"};
  }
  bool AppliesTo(const ir::Workload& w) const override {
    return w.anchor == ir::AnchorKind::kConv && w.conv.x_pairs;
  }

  std::vector<Knob> Knobs(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    const ir::ConvParams& p = w.conv;
    const int64_t row_tiles = std::max<int64_t>(p.out_channels / kTile, 1);
    const int64_t grid = ir::ConvOutH(p) * ir::ConvPairPhaseW(p);
    // 2 x 2 tiles (four C tiles, two A and two B: 8 registers) first, the widest register
    // block; 1 x 3 and the others after.
    std::vector<int64_t> mr =
        row_tiles % 2 == 0 ? std::vector<int64_t>{2, 1} : std::vector<int64_t>{1};
    std::vector<int64_t> nr = {2, 3, 1};
    // Weights larger than the image's tiles are reused from the cache with the pixels
    // innermost (order 1): ResNet's last stages; the image's otherwise (its first stages).
    std::vector<int64_t> order =
        PairConvWeightsOutweighImages(p) ? std::vector<int64_t>{1, 0} : std::vector<int64_t>{0, 1};
    const std::vector<int64_t> tasks =
        PairConvTaskChoices(hw, p.batch * row_tiles * CeilDiv(grid, kTile));
    std::vector<Knob> knobs = {
        {"mr", mr}, {"nr", nr}, {"order", order}, {"tasks", tasks}, {"pack_b", {kPackBPrepacked}}};
    if (passes_) {
      // Passes of about 2 to 16 steps (2 to 16 KiB of weights per A tile: L1-resident beside
      // the image's tiles; which wins varies with the shape), then one pass of everything; each
      // a divisor of a tap's steps.
      const int64_t k_steps = p.in_channels / 32;
      std::vector<int64_t> kc;
      for (int64_t target : {4, 8, 2, 16}) {
        int64_t value = std::min(target, k_steps);
        while (value > 1 && k_steps % value != 0) --value;
        const bool whole = value == k_steps && p.kernel_h * p.kernel_w == 1;  // = one pass
        if (!whole && std::find(kc.begin(), kc.end(), value) == kc.end()) {
          kc.push_back(value);
        }
      }
      kc.push_back(0);
      knobs.push_back({"kc", kc});
    }
    return knobs;
  }

  bool Admits(const ir::Workload& w, const target::HardwareInfo&,
              const KnobValues& values) const override {
    // Tiles of 16 * nr grid pixels, at most the grid (a 7 x 7 image's 63-pixel grid takes
    // column blocks of up to 48).
    const ir::ConvParams& p = w.conv;
    const int64_t grid = ir::ConvOutH(p) * ir::ConvPairPhaseW(p);
    const int64_t mr = values[kMr], nr = values[kNr];
    return mr * nr + mr + nr <= 8 && (nr == 1 || kTile * nr <= grid);
  }

  absl::StatusOr<ir::LoweredFunc> Lower(const ir::Workload& w, const KnobValues& values,
                                        const std::string& func_name) const override {
    GTCO_RETURN_IF_ERROR(w.Validate());
    GTCO_ASSIGN_OR_RETURN(const AmxConvPlan plan, MakePlan(w, values, passes_));
    GTCO_ASSIGN_OR_RETURN(const schedule::EpilogueBuilder epilogue, schedule::ConvEpilogue(w));
    return ir::LoweredFunc{
        func_name, PairConvParams(w),
        plan.kc > 0 ? LowerPasses(plan, epilogue) : LowerOnePass(plan, epilogue)};
  }

 private:
  bool passes_;
};

const AmxConvSketch& Sketch() {
  static const AmxConvSketch* const sketch = new AmxConvSketch(/*passes=*/true);
  return *sketch;
}

const AmxConvSketch& SketchV1() {
  static const AmxConvSketch* const sketch = new AmxConvSketch(/*passes=*/false);
  return *sketch;
}

class AmxConvMapping final : public MappingSketch {
 public:
  const char* Name() const override { return "amx_bf16"; }
  const schedule::Sketch& sketch() const override { return Sketch(); }
  MappingVerdict Explain(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    return PairConvVerdict(Name(), AmxConvMismatch(w), hw, {"avx512f", "amx_tile", "amx_bf16"},
                           "bf16 conv in the pair layout, AMX present: tdpbf16ps on 16-pixel "
                           "tiles of the padded image read in place, one per tap, weights "
                           "pre-packed");
  }
};

}  // namespace

std::string AmxConvMismatch(const ir::Workload& w) {
  if (std::string why = PairConvDtypeMismatch(w, "AMX conv"); !why.empty()) return why;
  const ir::ConvParams& p = w.conv;
  if (p.in_channels % 32 != 0) {
    return absl::StrCat("the AMX conv needs C a multiple of 32 (one tile row), not ",
                        p.in_channels);
  }
  if (p.out_channels % kTile != 0) {
    return absl::StrCat("the AMX conv needs K a multiple of 16 (one tile), not ", p.out_channels);
  }
  if (int64_t{4} * ir::ConvPairPlane(p) > (int64_t{1} << 31)) {
    return "the AMX conv's plane is too large for a tile stride";
  }
  return "";
}

absl::StatusOr<std::optional<PrepackedOperand>> PrepackAmxConvWeights(
    const ir::Workload& w, const schedule::Trace& t, const std::vector<float>& weights) {
  if (t.sketch != kAmxConvSketchName && t.sketch != kAmxConvSketchNameV1) {
    return std::optional<PrepackedOperand>();
  }
  GTCO_RETURN_IF_ERROR(w.Validate());
  const ir::ConvParams& p = w.conv;
  GTCO_RETURN_IF_ERROR(CheckConvWeightCount(p, weights));
  const int64_t taps = p.kernel_h * p.kernel_w;
  PrepackedOperand packed;
  packed.trace = WithPackB(t, kPackBPrepacked);
  packed.data.resize(weights.size());
  for (int64_t k = 0; k < p.out_channels; ++k) {
    for (int64_t c = 0; c < p.in_channels; ++c) {
      for (int64_t tap = 0; tap < taps; ++tap) {
        packed.data[(k * taps + tap) * p.in_channels + c] =
            weights[(k * p.in_channels + c) * taps + tap];
      }
    }
  }
  packed.shape = {p.out_channels, taps * p.in_channels};
  return std::optional<PrepackedOperand>(std::move(packed));
}

}  // namespace internal

const schedule::Sketch& ConvAmxBf16Sketch() { return internal::Sketch(); }

const schedule::Sketch& ConvAmxBf16SketchV1() { return internal::SketchV1(); }

const MappingSketch& AmxBf16ConvMapping() {
  static const internal::AmxConvMapping* const mapping = new internal::AmxConvMapping();
  return *mapping;
}

}  // namespace gtco::kernels
