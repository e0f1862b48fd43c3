// "conv_avx512_bf16_channels/v1": a bf16 convolution whose input arrives in the zero-padded pair
// layout (ConvParams::x_pairs, ir/conv.h) on AVX-512 BF16 (vdpbf16ps) with the output channels
// in the vector lanes and the output pixels in registers: only the OH x OW output pixels are
// computed, where the grid conv (conv_bf16_sketch.cc) computes the padded output grid, whose
// dropped columns and 16-pixel rounding cost a quarter of its work on a 7 x 7 image (63 grid
// pixels in 64 lanes for 49 outputs).
//
// A register block is mp output pixels by nk vectors of 16 output channels (mp * nk f32
// accumulators). Per channel pair and tap it loads the nk weight vectors (16 channels' pairs of
// the tap) and, for each of the mp pixels, broadcasts the pixel's pair word of the tap (one
// 32-bit word of the pair plane, read in place at the pixel's grid position shifted by the tap)
// into vdpbf16ps with each of them. The weights come pre-packed per block of nk * 16 channels in
// the order the block reads them (pair, tap, vector, lane). The block's sums go from the
// registers through the conv epilogue to the NCHW output, each vector's 16 channels of one pixel
// a strided store (the write-back is K * OH * OW values against the C * R * S products of each).
// A plane of at least mp pixels has its last block start at OH * OW - mp (pixels it shares with
// the block before computed and written twice, the same values).
//
// Knobs: mp (pixels per block), nk (16-channel vectors per block, dividing K / 16; mp * nk + nk
// + 1 <= 32 vector registers), order (0: a task's blocks walk the pixels innermost, reusing the
// block's weights from the cache; 1: the channels innermost, reusing the image's words), tasks
// (the blocks split into that many parallel tasks of consecutive blocks), pack_b (2: the weights
// pre-packed; the only value).
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

constexpr int64_t kLanes = 16;    ///< f32 accumulators (output channels) per vector
constexpr int64_t kMaxRegs = 32;  ///< mp * nk accumulators + nk weight vectors + 1 broadcast

enum KnobIdx { kMp, kNk, kOrder, kTasks, kPackB };

/// Every size of one (workload, decisions) pair.
struct ChannelsPlan {
  ir::ConvParams p;
  int64_t mp = 1, nk = 1, order = 0, tasks = 1;
  int64_t taps = 1;          ///< R * S
  int64_t pairs = 1;         ///< C / 2
  int64_t image_planes = 1;  ///< planes of one image: pairs + ConvPairTailPlanes
  int64_t plane = 1;         ///< ConvPairPlane: words of a pair plane
  int64_t pixels = 1;        ///< OH * OW
  int64_t block_channels = 16, channel_blocks = 1, pixel_blocks = 1, items = 1, per_task = 1;
};

absl::StatusOr<ChannelsPlan> MakePlan(const ir::Workload& w, const KnobValues& values) {
  if (values.size() != 5u) {
    return absl::InvalidArgumentError("conv_avx512_bf16_channels takes 5 knobs");
  }
  if (const std::string why = Bf16ChannelsConvMismatch(w); !why.empty()) {
    return absl::InvalidArgumentError(why);
  }
  const ir::ConvParams& p = w.conv;
  GTCO_RETURN_IF_ERROR(CheckRange("mp", values[kMp], 1, 16));
  GTCO_RETURN_IF_ERROR(CheckRange("nk", values[kNk], 1, 8));
  GTCO_RETURN_IF_ERROR(CheckRange("order", values[kOrder], 0, 1));
  GTCO_RETURN_IF_ERROR(CheckRange("tasks", values[kTasks], 1, int64_t{1} << 20));
  if (values[kPackB] != kPackBPrepacked) {
    return absl::InvalidArgumentError(
        "conv_avx512_bf16_channels reads its weights pre-packed (pack_b 2) only");
  }
  ChannelsPlan plan;
  plan.p = p;
  plan.mp = values[kMp];
  plan.nk = values[kNk];
  plan.order = values[kOrder];
  plan.block_channels = kLanes * plan.nk;
  if (p.out_channels % plan.block_channels != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("nk ", plan.nk, ": blocks of ", plan.block_channels,
                     " channels must divide the ", p.out_channels, " output channels"));
  }
  if (plan.mp * plan.nk + plan.nk + 1 > kMaxRegs) {
    return absl::InvalidArgumentError(
        absl::StrCat("mp ", plan.mp, " x nk ", plan.nk, " takes more than 32 vector registers"));
  }
  plan.pixels = ir::ConvOutH(p) * ir::ConvOutW(p);
  if (plan.mp > plan.pixels) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mp ", plan.mp, ": more pixels per block than the ", plan.pixels, " of the output plane"));
  }
  plan.taps = p.kernel_h * p.kernel_w;
  plan.pairs = p.in_channels / 2;
  plan.image_planes = plan.pairs + ir::ConvPairTailPlanes(p);
  plan.plane = ir::ConvPairPlane(p);
  plan.channel_blocks = p.out_channels / plan.block_channels;
  plan.pixel_blocks = CeilDiv(plan.pixels, plan.mp);
  plan.items = p.batch * plan.channel_blocks * plan.pixel_blocks;
  plan.tasks = std::min(values[kTasks], plan.items);
  plan.per_task = CeilDiv(plan.items, plan.tasks);
  plan.tasks = CeilDiv(plan.items, plan.per_task);
  return plan;
}

/// Name of the variable holding the grid position of block pixel `i`.
std::string GridVar(int64_t i) { return absl::StrCat("q", i); }

/// The kernel of `plan`: tasks of consecutive blocks (image, channel block, pixel block), each
/// block's sums in registers over every channel pair and tap, then its write-back.
Stmt LowerBlocks(const ChannelsPlan& plan, const schedule::EpilogueBuilder& epilogue) {
  const ir::ConvParams& p = plan.p;
  const int64_t out_w = ir::ConvOutW(p), grid_w = ir::ConvPairPhaseW(p);
  const Expr item = ir::MakeVar("item");
  const Expr per_image = MakeInt(plan.channel_blocks * plan.pixel_blocks);
  const Expr n = item / per_image, in_image = item % per_image;
  const Expr kb = plan.order == 0 ? in_image / MakeInt(plan.pixel_blocks)
                                  : in_image % MakeInt(plan.channel_blocks);
  const Expr pb = plan.order == 0 ? in_image % MakeInt(plan.pixel_blocks)
                                  : in_image / MakeInt(plan.channel_blocks);
  const Expr p0 = ir::Min(pb * MakeInt(plan.mp), MakeInt(plan.pixels - plan.mp));
  const Expr k0 = kb * MakeInt(plan.block_channels);
  const std::string acc = "acc";
  const Expr j = MakeVar("tj"), v = MakeVar("tv");

  // The register block's loops for pixel i: nk vectors of 16 lanes.
  auto vectors = [&](const Stmt& body) {
    return ir::MakeFor(
        "tj", MakeInt(0), MakeInt(plan.nk), ir::ForKind::kUnrolled,
        ir::MakeFor("tv", MakeInt(0), MakeInt(kLanes), ir::ForKind::kVectorized, body));
  };
  auto slot = [&](int64_t i) { return (MakeInt(i * plan.nk) + j) * MakeInt(kLanes) + v; };
  std::vector<Stmt> zero;
  for (int64_t i = 0; i < plan.mp; ++i) {
    zero.push_back(vectors(ir::MakeStore(acc, slot(i), ir::MakeFloat(0.0))));
  }

  // One (pair, tap) step: each pixel's pair word of the tap (broadcast) by the weight words of
  // the block's channels, pair cp, tap t (PrepackBf16ChannelsConvWeights' order).
  const Expr cp = MakeVar("cp");
  auto step = [&](const Expr& tap, const Expr& tap_words) {
    const Expr w_word =
        (((kb * MakeInt(plan.pairs) + cp) * MakeInt(plan.taps) + tap) * MakeInt(plan.nk) + j) *
            MakeInt(kLanes) +
        v;
    const Expr wt = ir::MakeTypedLoad(InputName(1), w_word * MakeInt(2), ScalarType::kI32);
    std::vector<Stmt> pixels;
    for (int64_t i = 0; i < plan.mp; ++i) {
      const Expr x_word = (n * MakeInt(plan.image_planes) + cp) * MakeInt(plan.plane) +
                          MakeVar(GridVar(i)) + tap_words;
      const Expr x = ir::MakeTypedLoad(InputName(0), x_word * MakeInt(2), ScalarType::kI32);
      const Expr sum = ir::MakeTypedLoad(acc, slot(i), ScalarType::kF32);
      pixels.push_back(vectors(ir::MakeStore(
          acc, slot(i), ir::MakeTypedCall("dot_bf16x2", ScalarType::kF32, {sum, x, wt}))));
    }
    return ir::MakeBlock(pixels);
  };
  const Stmt taps = PairTapSteps(p, step);
  const Stmt reduce =
      ir::MakeFor("cp", MakeInt(0), MakeInt(plan.pairs), ir::ForKind::kSerial, taps);

  // Write-back: pixel p0 + i of channel k0 + 16 j + v through the epilogue to the output.
  std::vector<Stmt> stores;
  for (int64_t i = 0; i < plan.mp; ++i) {
    const Expr plane = n * MakeInt(p.out_channels) + k0 + j * MakeInt(kLanes) + v;
    const Expr pixel = p0 + MakeInt(i);
    stores.push_back(vectors(ir::MakeStore(
        kOutputName, plane * MakeInt(plan.pixels) + pixel,
        epilogue.Apply(ir::MakeTypedLoad(acc, slot(i), ScalarType::kF32), plane, pixel))));
  }
  Stmt block = ir::MakeBlock({ir::MakeBlock(zero), reduce, ir::MakeBlock(stores)});
  // Each pixel's position on the padded output grid, once per block.
  for (int64_t i = plan.mp - 1; i >= 0; --i) {
    const Expr pixel = p0 + MakeInt(i);
    block = ir::MakeLet(GridVar(i),
                        pixel / MakeInt(out_w) * MakeInt(grid_w) + pixel % MakeInt(out_w), block);
  }

  const Expr task = MakeVar("task");
  const Expr first = task * MakeInt(plan.per_task);
  const Stmt items =
      ir::MakeFor("item", first, ir::Min(MakeInt(plan.per_task), MakeInt(plan.items) - first),
                  ir::ForKind::kSerial, block);
  const Stmt buffers =
      ir::MakeTypedAllocate(acc, plan.mp * plan.nk * kLanes, ScalarType::kF32, items);
  return ir::MakeFor("task", MakeInt(0), MakeInt(plan.tasks),
                     plan.tasks > 1 ? ir::ForKind::kParallel : ir::ForKind::kSerial, buffers);
}

class ChannelsSketch final : public LoopSketch {
 public:
  const char* Name() const override { return kBf16ChannelsConvSketchName; }
  std::vector<std::string> KnobNames() const override {
    return {"mp", "nk", "order", "tasks", "pack_b"};
  }
  bool AppliesTo(const ir::Workload& w) const override {
    return Bf16ChannelsConvMismatch(w).empty();
  }

  std::vector<Knob> Knobs(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    const ir::ConvParams& p = w.conv;
    const int64_t pixels = ir::ConvOutH(p) * ir::ConvOutW(p);
    // 6 pixels by 4 vectors first (24 accumulators, 4 weight vectors, one broadcast).
    std::vector<int64_t> mp;
    for (int64_t value : {6, 4, 7, 5, 8, 3, 2, 1}) {
      if (value <= pixels) mp.push_back(value);
    }
    std::vector<int64_t> nk;
    for (int64_t value : {4, 2, 3, 1}) {
      if (p.out_channels % (kLanes * value) == 0) nk.push_back(value);
    }
    // The weights reused from the cache (order 0) first where they outweigh the image.
    std::vector<int64_t> order =
        PairConvWeightsOutweighImages(p) ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{1, 0};
    const std::vector<int64_t> tasks =
        PairConvTaskChoices(hw, p.batch * (p.out_channels / kLanes) * pixels);
    return {
        {"mp", mp}, {"nk", nk}, {"order", order}, {"tasks", tasks}, {"pack_b", {kPackBPrepacked}}};
  }

  bool Admits(const ir::Workload&, const target::HardwareInfo&,
              const KnobValues& values) const override {
    return values[kMp] * values[kNk] + values[kNk] + 1 <= kMaxRegs;
  }

  absl::StatusOr<ir::LoweredFunc> Lower(const ir::Workload& w, const KnobValues& values,
                                        const std::string& func_name) const override {
    GTCO_RETURN_IF_ERROR(w.Validate());
    GTCO_ASSIGN_OR_RETURN(const ChannelsPlan plan, MakePlan(w, values));
    GTCO_ASSIGN_OR_RETURN(const schedule::EpilogueBuilder epilogue, schedule::ConvEpilogue(w));
    return ir::LoweredFunc{func_name, PairConvParams(w), LowerBlocks(plan, epilogue)};
  }
};

const ChannelsSketch& Sketch() {
  static const ChannelsSketch* const sketch = new ChannelsSketch();
  return *sketch;
}

class ChannelsMapping final : public MappingSketch {
 public:
  const char* Name() const override { return "avx512_bf16_channels"; }
  const schedule::Sketch& sketch() const override { return Sketch(); }
  MappingVerdict Explain(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    return PairConvVerdict(
        Name(), Bf16ChannelsConvMismatch(w), hw, {"avx512f", "avx512_bf16"},
        "bf16 conv in the pair layout, avx512_bf16 present: vdpbf16ps on 16 output channels "
        "per vector, each output pixel's pair word broadcast, weights pre-packed");
  }
  /// Ahead of the grid conv (rank 1) where its default ran faster (AMD Zen 4, weights cold,
  /// bench/results/conv_bf16_channels.md): convs with taps (ResNet-50's 3x3s: 0.60x the grid
  /// conv's time at 7 x 7, 0.87x at 14 x 14, 0.94x at 28 x 28, level at 56 x 56) and pointwise
  /// ones on planes of at most 7 x 7 (0.71-0.76x). The grid conv stays ahead on pointwise ones of
  /// 28 x 28 and more (1.1-1.9x the other way); at 14 x 14 the two split (0.91x and 1.15x).
  /// Level with the AMX conv (rank 0), which the registry lists first.
  int Rank(const ir::Workload& w, const target::HardwareInfo&) const override {
    if (w.anchor != ir::AnchorKind::kConv) return 2;
    const ir::ConvParams& p = w.conv;
    const bool pointwise = p.kernel_h * p.kernel_w == 1;
    return !pointwise || ir::ConvOutH(p) * ir::ConvOutW(p) <= 7 * 7 ? 0 : 2;
  }
};

}  // namespace

std::string Bf16ChannelsConvMismatch(const ir::Workload& w) {
  std::string why = PairConvDtypeMismatch(w, "bf16 conv");
  if (why.empty() && w.conv.out_channels % kLanes != 0) {
    why = absl::StrCat(w.conv.out_channels, " output channels are not a multiple of ", kLanes,
                       " (one vector of channels)");
  }
  return why;
}

absl::StatusOr<std::optional<PrepackedOperand>> PrepackBf16ChannelsConvWeights(
    const ir::Workload& w, const schedule::Trace& t, const std::vector<float>& weights) {
  if (t.sketch != kBf16ChannelsConvSketchName) return std::optional<PrepackedOperand>();
  GTCO_RETURN_IF_ERROR(w.Validate());
  const ir::ConvParams& p = w.conv;
  const std::optional<int64_t> nk = t.Get("nk");
  if (!nk.has_value() || *nk < 1 || p.out_channels % (kLanes * *nk) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("a conv_avx512_bf16_channels trace needs an nk with 16 * nk dividing the ",
                     p.out_channels, " output channels"));
  }
  GTCO_ASSIGN_OR_RETURN(PrepackedOperand packed, PackPairConvWeights(p, weights, kLanes * *nk, t));
  return std::optional<PrepackedOperand>(std::move(packed));
}

}  // namespace internal

const schedule::Sketch& ConvAvx512Bf16ChannelsSketch() { return internal::Sketch(); }

const MappingSketch& Avx512Bf16ChannelsConvMapping() {
  static const internal::ChannelsMapping* const mapping = new internal::ChannelsMapping();
  return *mapping;
}

}  // namespace gtco::kernels
