// Winograd F(2x2, 3x3) convolution, "conv_avx512_fma_winograd/v1" and "conv_avx2_fma_winograd/v1"
// (3x3 kernels of stride 1 and dilation 1, one group, any padding): each 2x2 block of output
// pixels (a tile) of each output channel is A^T [U ⊙ V] A, where V = B^T d B is the tile's 4x4
// input patch d transformed and U = G g G^T its 3x3 kernel g transformed (Lavin and Gray, "Fast
// Algorithms for Convolutional Neural Networks", 2016). Summed over the input channels, the 16
// positions ξ of the 4x4 transform domain are 16 independent GEMMs, M[ξ] [tiles, K] = V[ξ]
// [tiles, C] x U[ξ] [C, K]: 16 * C * K multiply-adds per tile of 4 pixels instead of 36 * C * K,
// 2.25x fewer, for three extra passes (the input transform, the output transform, the results
// between them) that cost per tile and channel what one output channel's GEMM step costs.
//
// The 16 GEMMs run on the register-blocked FMA micro-kernels of cpu/matmul_blocked with output
// channels in the vector lanes and tiles in the register tile's rows, one task per (block of
// tiles, block of output channels) running all 16 positions in turn (GemmOperands::
// BatchInTask), so that the task's M[ξ] stay in its own buffer, in cache, until its output
// transform. Per K block (input channels), the task copies the zero-padded input rows its tiles
// read (four per row of tiles, "band"), transforms them into V for all 16 positions at once
// (staged A, [ξ][channel][tile]), then runs each position's tiles; U is pre-packed per position
// by the exporter (or the worker for its random weights) in the micro-kernel's panels. The
// output transform reads the 16 M values of a tile and channel, applies the conv's epilogue
// (bias, residual, activation) and stores the tile's 2x2 pixels into the NCHW output, a channel
// per vector lane (a plane apart). With pack_b 1 (weights that are not a constant of the
// kernel's own) the kernel transforms the weights itself as it packs each panel.
#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
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
using ir::Stmt;
using schedule::ConvEpilogue;

Expr Lt(const Expr& a, const Expr& b) { return ir::MakeBinary(ir::ExprKind::kLt, a, b); }
Expr Le(const Expr& a, const Expr& b) { return ir::MakeBinary(ir::ExprKind::kLe, a, b); }
Expr Eq(const Expr& a, const Expr& b) { return ir::MakeBinary(ir::ExprKind::kEq, a, b); }
Expr And(const Expr& a, const Expr& b) { return ir::MakeBinary(ir::ExprKind::kAnd, a, b); }
Expr F32(const std::string& name) { return ir::MakeVar(name, ir::ScalarType::kF32); }

/// The 4x4 transform domain's positions: the 16 GEMMs.
constexpr int64_t kPositions = 16;
constexpr char kAvx512Winograd[] = "conv_avx512_fma_winograd/v1";
constexpr char kAvx2Winograd[] = "conv_avx2_fma_winograd/v1";
constexpr char kResults[] = "wino_m";
constexpr char kBand[] = "wino_band";

/// The convs the Winograd sketch lowers.
bool IsWinogradConv(const ir::ConvParams& p) {
  return p.groups == 1 && p.kernel_h == 3 && p.kernel_w == 3 && p.stride_h == 1 &&
         p.stride_w == 1 && p.dilation_h == 1 && p.dilation_w == 1 && !p.x_pairs;
}

/// The output's 2x2 tiles: per image tiles_h rows of tiles_w (the last row and column of tiles
/// cut by the image's edge when the output's side is odd).
struct TileGrid {
  int64_t out_h = 0, out_w = 0, tiles_h = 0, tiles_w = 0, per_image = 0;
};
TileGrid GridOf(const ir::ConvParams& p) {
  TileGrid grid;
  grid.out_h = ir::ConvOutH(p);
  grid.out_w = ir::ConvOutW(p);
  grid.tiles_h = CeilDiv(grid.out_h, 2);
  grid.tiles_w = CeilDiv(grid.out_w, 2);
  grid.per_image = grid.tiles_h * grid.tiles_w;
  return grid;
}

/// The 16 GEMMs as one batched view: tiles x output channels, K = input channels.
ir::MatMulParams WinogradGemmView(const ir::ConvParams& p) {
  ir::MatMulParams view;
  view.batch = kPositions;
  view.m = p.batch * GridOf(p).per_image;
  view.n = p.out_channels;
  view.k = p.in_channels;
  view.a_batched = true;
  return view;
}

/// Columns of a band row: the input columns a row of tiles reads, padding included.
int64_t BandWidth(const ir::ConvParams& p) { return 2 * GridOf(p).tiles_w + 2; }

/// Floats of the staged V of a block: 16 positions x kc channels x rows tiles.
int64_t StagedVFloats(int64_t rows, int64_t kc) { return kPositions * kc * rows; }

/// The input transform's rows B^T: row i of B^T d is d[u] + sign * d[w] (over d's rows).
constexpr std::array<int, 4> kBtFirst = {0, 1, 2, 1};
constexpr std::array<int, 4> kBtSecond = {2, 2, 1, 3};
constexpr std::array<double, 4> kBtSign = {-1.0, 1.0, -1.0, -1.0};

/// G's entry (i, r) for a position row i given as an expression (G = [[1, 0, 0], [1/2, 1/2,
/// 1/2], [1/2, -1/2, 1/2], [0, 0, 1]]).
Expr GEntry(const Expr& i, int r) {
  auto pick = [&](double row0, double row1, double row2, double row3) {
    return ir::MakeSelect(Eq(i, MakeInt(0)), ir::MakeFloat(row0),
                          ir::MakeSelect(Eq(i, MakeInt(1)), ir::MakeFloat(row1),
                                         ir::MakeSelect(Eq(i, MakeInt(2)), ir::MakeFloat(row2),
                                                        ir::MakeFloat(row3))));
  };
  if (r == 0) return pick(1.0, 0.5, 0.5, 0.0);
  if (r == 1) return pick(0.0, 0.5, -0.5, 0.0);
  return pick(0.0, 0.5, 0.5, 1.0);
}
constexpr double kG[4][3] = {{1.0, 0.0, 0.0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0.0, 0.0, 1.0}};

/// The staged A of a plan: per K block, channel and row of tiles of the block, the band (the
/// four zero-padded input rows the row of tiles reads), then V for every position at
/// [ξ][channel][tile] (tile rows at a stride of the plan's row_block).
GemmOperands::StagedA WinogradStaging(const ir::ConvParams& p, const BlockedPlan& plan) {
  const TileGrid grid = GridOf(p);
  const int64_t row_block = plan.row_block, kc = plan.kc, m = plan.p.m;
  const int64_t band_w = BandWidth(p);
  GemmOperands::StagedA staged;
  staged.floats = StagedVFloats(row_block, kc);
  staged.groups = 1;
  staged.row_offset = [](const Expr& i_begin, const Expr& row) { return row - i_begin; };
  staged.group_offset = [](const Expr&) { return MakeInt(0); };
  staged.step_offset = [row_block](const Expr& step) { return step * MakeInt(row_block); };
  staged.batch_offset = [row_block, kc](const Expr& b) { return b * MakeInt(kc * row_block); };
  staged.fill = [p, grid, row_block, kc, m, band_w](const Expr&, const Expr& k_begin,
                                                    const Expr& k_extent, const Expr& i_begin,
                                                    const std::string& buffer) -> Stmt {
    const Expr i_end = ir::Min(i_begin + MakeInt(row_block), MakeInt(m));
    const Expr first_tr = i_begin / MakeInt(grid.tiles_w);
    const Expr segments = (i_end - MakeInt(1)) / MakeInt(grid.tiles_w) - first_tr + MakeInt(1);
    const Expr channel = ir::MakeVar("wc"), seg = ir::MakeVar("wseg");
    const Expr tr = first_tr + seg;  // the row of tiles: image tr / tiles_h, row tr % tiles_h
    const Expr image = tr / MakeInt(grid.tiles_h), ty = tr % MakeInt(grid.tiles_h);
    // 1. The band: four zero-padded input rows per row of tiles, each one masked vector range
    // (ranges of 64 lanes where a row is wider than a vector loop takes).
    const int64_t lanes = band_w <= 512 ? PowerOfTwoCeil(band_w) : 64;
    const int64_t chunks = CeilDiv(band_w, lanes);
    const Expr a = ir::MakeVar("wa");
    const Expr x =
        chunks > 1 ? ir::MakeVar("wxc") * MakeInt(lanes) + ir::MakeVar("wx") : ir::MakeVar("wx");
    const Expr ih = ty * MakeInt(2) - MakeInt(p.pad_top) + a;
    const Expr iw = x - MakeInt(p.pad_left);
    const Expr in_plane =
        (image * MakeInt(p.in_channels) + k_begin + channel) * MakeInt(p.in_h * p.in_w);
    const Expr at = a * MakeInt(band_w) + x;
    const Stmt zero = ir::MakeStore(kBand, at, ir::MakeFloat(0.0));
    const Stmt copy =
        ir::MakeStore(kBand, at, ir::MakeLoad(InputName(0), in_plane + ih * MakeInt(p.in_w) + iw));
    const Expr in_band = Lt(x, MakeInt(band_w));
    const Expr inside_w = And(Le(MakeInt(0), iw), Lt(iw, MakeInt(p.in_w)));
    const Expr inside_h = And(Le(MakeInt(0), ih), Lt(ih, MakeInt(p.in_h)));
    auto ranges = [&](Stmt lane) {
      Stmt loop = ir::MakeFor("wx", MakeInt(0), MakeInt(lanes), ir::ForKind::kVectorized,
                              ir::MakeIf(in_band, std::move(lane)));
      if (chunks == 1) return loop;
      return ir::MakeFor("wxc", MakeInt(0), MakeInt(chunks), ir::ForKind::kSerial, loop);
    };
    const Stmt band_rows =
        ir::MakeFor("wa", MakeInt(0), MakeInt(4), ir::ForKind::kSerial,
                    ir::MakeIf(inside_h, ranges(ir::MakeIf(inside_w, copy, zero)), ranges(zero)));
    // 2. V = B^T d B for every position, tiles of one row of tiles in the vector lanes (each
    // lane reads its patch's columns 2 apart: a span load and a shuffle).
    const int64_t tile_lanes = PowerOfTwoCeil(std::min(row_block, grid.tiles_w));
    const Expr pc = ir::MakeVar("wt");
    const Expr row_start = tr * MakeInt(grid.tiles_w);
    const Expr begin = ir::Max(i_begin, row_start);
    const Expr end = ir::Min(i_end, row_start + MakeInt(grid.tiles_w));
    const Expr tx = begin + pc - row_start;
    auto d = [](int r, int s) { return absl::StrCat("wd", r, s); };
    auto t = [](int i, int s) { return absl::StrCat("wbt", i, s); };
    std::vector<Stmt> stores;
    for (int i = 0; i < 4; ++i) {
      // V[i][j] = (B^T d)[i] B, column j: t[i][u] + sign * t[i][w].
      for (int j = 0; j < 4; ++j) {
        const Expr v = F32(t(i, kBtFirst[j])) + ir::MakeFloat(kBtSign[j]) * F32(t(i, kBtSecond[j]));
        const Expr dest = MakeInt((4 * i + j) * kc * row_block) + channel * MakeInt(row_block) +
                          (begin + pc - i_begin);
        stores.push_back(ir::MakeStore(buffer, dest, v));
      }
    }
    Stmt body = ir::MakeBlock(stores);
    for (int i = 3; i >= 0; --i) {
      for (int s = 3; s >= 0; --s) {
        body = ir::MakeLet(
            t(i, s), F32(d(kBtFirst[i], s)) + ir::MakeFloat(kBtSign[i]) * F32(d(kBtSecond[i], s)),
            body);
      }
    }
    for (int r = 3; r >= 0; --r) {
      for (int s = 3; s >= 0; --s) {
        body = ir::MakeLet(d(r, s), ir::MakeLoad(kBand, MakeInt(r * band_w + s) + tx * MakeInt(2)),
                           body);
      }
    }
    const Stmt transform =
        ir::MakeFor("wt", MakeInt(0), MakeInt(tile_lanes), ir::ForKind::kVectorized,
                    ir::MakeIf(Lt(begin + pc, end), body));
    const Stmt per_row = ir::MakeBlock({band_rows, transform});
    return ir::MakeAllocate(
        kBand, 4 * band_w,
        ir::MakeFor("wc", MakeInt(0), k_extent, ir::ForKind::kSerial,
                    ir::MakeFor("wseg", MakeInt(0), segments, ir::ForKind::kSerial, per_row)));
  };
  return staged;
}

/// The output transform of a task's block: per tile and vector of output channels, the 16
/// results M[ξ], Y = A^T M A (A^T = [[1, 1, 1, 0], [0, 1, -1, -1]]), the epilogue at each of
/// the tile's pixels (those inside the output) and the store into NCHW, a plane per lane.
Stmt OutputTransform(const ir::ConvParams& p, const BlockedPlan& plan,
                     const EpilogueBuilder& epilogue, const Expr& i_begin, const Expr& j_begin) {
  const TileGrid grid = GridOf(p);
  const int64_t vw = plan.vw, k = p.out_channels;
  const Expr r = ir::MakeVar("wor"), cv = ir::MakeVar("wov"), v = ir::MakeVar("wol");
  const Expr tile = i_begin + r;
  const Expr image = tile / MakeInt(grid.per_image), in_image = tile % MakeInt(grid.per_image);
  const Expr ty = in_image / MakeInt(grid.tiles_w), tx = in_image % MakeInt(grid.tiles_w);
  const Expr col_local = cv * MakeInt(vw) + v;
  const Expr col = j_begin + col_local;
  auto m = [](int a, int j) { return absl::StrCat("wm", a, j); };
  auto s = [](int i, int j) { return absl::StrCat("ws", i, j); };
  const int64_t plane_size = grid.out_h * grid.out_w;
  std::vector<Stmt> stores;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      const Expr y = j == 0 ? F32(s(i, 0)) + F32(s(i, 1)) + F32(s(i, 2))
                            : F32(s(i, 1)) - F32(s(i, 2)) - F32(s(i, 3));
      const Expr oh = ty * MakeInt(2) + MakeInt(i), ow = tx * MakeInt(2) + MakeInt(j);
      const Expr plane = image * MakeInt(k) + col;
      const Expr pixel = oh * MakeInt(grid.out_w) + ow;
      Stmt store = ir::MakeStore(kOutputName, plane * MakeInt(plane_size) + pixel,
                                 epilogue.Apply(y, plane, pixel));
      // Tiles cut by an odd output side store only their pixels inside it.
      Expr inside = nullptr;
      if (i == 1 && grid.out_h % 2 != 0) inside = Lt(oh, MakeInt(grid.out_h));
      if (j == 1 && grid.out_w % 2 != 0) {
        inside = inside ? And(inside, Lt(ow, MakeInt(grid.out_w))) : Lt(ow, MakeInt(grid.out_w));
      }
      stores.push_back(inside ? ir::MakeIf(inside, store) : store);
    }
  }
  Stmt body = ir::MakeBlock(stores);
  for (int i = 1; i >= 0; --i) {
    for (int j = 3; j >= 0; --j) {
      const Expr value = i == 0 ? F32(m(0, j)) + F32(m(1, j)) + F32(m(2, j))
                                : F32(m(1, j)) - F32(m(2, j)) - F32(m(3, j));
      body = ir::MakeLet(s(i, j), value, body);
    }
  }
  for (int a = 3; a >= 0; --a) {
    for (int j = 3; j >= 0; --j) {
      const Expr at =
          (MakeInt((4 * a + j) * plan.row_block) + r) * MakeInt(plan.col_block) + col_local;
      body = ir::MakeLet(m(a, j), ir::MakeLoad(kResults, at), body);
    }
  }
  const Expr rows = ir::Min(MakeInt(plan.row_block), MakeInt(plan.p.m) - i_begin);
  const Stmt lanes = ir::MakeFor("wol", MakeInt(0), MakeInt(vw), ir::ForKind::kVectorized,
                                 ir::MakeIf(Lt(col, MakeInt(k)), body));
  return ir::MakeFor("wor", MakeInt(0), rows, ir::ForKind::kSerial,
                     ir::MakeFor("wov", MakeInt(0), MakeInt(CeilDiv(plan.col_block, vw)),
                                 ir::ForKind::kSerial, lanes));
}

/// The operands of the 16 GEMMs: A staged (the input transform), B = U read pre-packed per
/// position, or (pack_b 0 or 1) transformed from W [K, C, 3, 3] where it is read; results into
/// the task's buffer, then the output transform.
GemmOperands WinogradOperands(const ir::ConvParams& p, const BlockedPlan& plan,
                              const EpilogueBuilder* epilogue) {
  GemmOperands operands;
  operands.b = [p](const Expr& b, const Expr& k, const Expr& col) {
    // U[ξ][c][k] = sum over (r, s) of G[i][r] G[j][s] W[k][c][r][s], ξ = 4i + j.
    const Expr i = b / MakeInt(4), j = b % MakeInt(4);
    const Expr base = (col * MakeInt(p.in_channels) + k) * MakeInt(9);
    Expr sum = nullptr;
    for (int r = 0; r < 3; ++r) {
      for (int s = 0; s < 3; ++s) {
        const Expr term =
            GEntry(i, r) * GEntry(j, s) * ir::MakeLoad(InputName(1), base + MakeInt(3 * r + s));
        sum = sum ? sum + term : term;
      }
    }
    return sum;
  };
  operands.staged_a = WinogradStaging(p, plan);
  operands.prepacked_b_per_batch = true;
  GemmOperands::BatchInTask in_task;
  in_task.buffer = kResults;
  in_task.finish = [p, plan, epilogue](const Expr& i_begin, const Expr& j_begin) {
    return OutputTransform(p, plan, *epilogue, i_begin, j_begin);
  };
  operands.batch_in_task = std::move(in_task);
  return operands;
}

/// Whether a block of `rows` tiles, `kc` input and `cols` output channels has its staged V, its
/// band and its results within the local buffer limit.
bool LocalBuffersFit(const ir::ConvParams& p, int64_t rows, int64_t kc, int64_t cols) {
  return StagedVFloats(rows, kc) <= kMaxLocalFloats && 4 * BandWidth(p) <= kMaxLocalFloats &&
         kPositions * rows * cols <= kMaxLocalFloats;
}

/// The Winograd sketch's resource rules beyond the blocked ones: the band, V and the task's
/// results in local buffers and together in L2.
const char* WinogradBufferRule(const ir::ConvParams& p, const ir::MatMulParams& view,
                               const target::HardwareInfo& hw, const KnobValues& values) {
  const int64_t rows = BlockRows(view, values[kMr], values[kMc]);
  const int64_t kc = std::min(values[kKc], view.k);
  const int64_t cols = std::min(values[kNc], view.n);
  if (!LocalBuffersFit(p, rows, kc, cols)) return "local_buffers";
  if ((StagedVFloats(rows, kc) + kPositions * rows * cols) * 4 > hw.l2_bytes) return "l2_staging";
  if (values[kPar] == 1 && CeilDiv(view.m, rows) * CeilDiv(view.n, cols) < std::max(hw.cores, 1)) {
    return "too_few_tasks";
  }
  return nullptr;
}

/// Lowers only the convs IsWinogradConv admits (its mapping explains the others away).
class WinogradConvSketch final : public BlockedConvSketch {
 public:
  using BlockedConvSketch::BlockedConvSketch;

  std::vector<Knob> Knobs(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    const ir::MatMulParams view = WinogradGemmView(w.conv);
    std::vector<Knob> knobs = BlockedKnobs(spec_, view, hw);
    knobs[kPackA].values = {kPackAStaged};
    // Shorter K blocks too: V of every position is staged per K block (16x a GEMM's A block).
    for (int64_t kc : {32, 64, 96}) {
      if (kc < view.k && std::find(knobs[kKc].values.begin(), knobs[kKc].values.end(), kc) ==
                             knobs[kKc].values.end()) {
        knobs[kKc].values.push_back(kc);
      }
    }
    std::sort(knobs[kKc].values.begin(), knobs[kKc].values.end());
    knobs[kPackB].values = {kPackBPrepacked};
    // Tasks are (tile block, channel block) pairs, the positions inside each: split over the
    // cores whenever there is more than one.
    knobs[kPar].values = hw.cores > 1 ? std::vector<int64_t>{1, 0} : std::vector<int64_t>{0};
    Prefer(knobs[kMr], spec_.vw == 16 ? 6 : 4);
    Prefer(knobs[kNr], spec_.nr_choices.back());
    Prefer(knobs[kKc], NearestTo(knobs[kKc].values, 128));
    Prefer(knobs[kNc], view.n);
    // The largest block of tiles whose buffers pass the rules with at least two tasks per core.
    const int64_t cores = std::max(hw.cores, 1);
    KnobValues probe;
    for (const Knob& knob : knobs) probe.push_back(knob.values.front());
    int64_t mc = *std::min_element(knobs[kMc].values.begin(), knobs[kMc].values.end());
    for (int64_t value : knobs[kMc].values) {
      probe[kMc] = value;
      const int64_t tasks = CeilDiv(view.m, std::min(value, view.m));
      if (WinogradBufferRule(w.conv, view, hw, probe) == nullptr && tasks >= 2 * cores) {
        mc = std::max(mc, value);
      }
    }
    Prefer(knobs[kMc], mc);
    return knobs;
  }

  const char* PruneRule(const ir::Workload& w, const target::HardwareInfo& hw,
                        const KnobValues& values) const override {
    const ir::MatMulParams view = WinogradGemmView(w.conv);
    if (const char* rule = WinogradBufferRule(w.conv, view, hw, values)) return rule;
    // A whole-K B panel streams from L2 (as in the channel-vectorized conv).
    target::HardwareInfo judged = hw;
    if (values[kKc] >= view.k) judged.l1d_bytes = std::max(hw.l1d_bytes, hw.l2_bytes / 8);
    // The parallel rule is the Winograd one (tasks hold every position): judged serial here.
    KnobValues serial = values;
    serial[kPar] = 0;
    // What a GEMM's M block of A holds in cache: one position's staged V.
    return BlockedPruneRule(
        spec_, view, judged, serial,
        BlockRows(view, values[kMr], values[kMc]) * std::min(values[kKc], view.k));
  }

  absl::StatusOr<ir::LoweredFunc> Lower(const ir::Workload& w, const KnobValues& values,
                                        const std::string& func_name) const override {
    GTCO_RETURN_IF_ERROR(w.Validate());
    if (!AppliesTo(w) || !IsWinogradConv(w.conv)) {
      return absl::InvalidArgumentError(
          "the Winograd conv sketch lowers 3x3 convs of stride 1, dilation 1 and one group only");
    }
    if (values.size() == kNumBlockedKnobs && values[kPackA] != kPackAStaged) {
      return absl::InvalidArgumentError(
          "the Winograd conv stages its transformed input (pack_a 2) only");
    }
    const ir::MatMulParams view = WinogradGemmView(w.conv);
    GTCO_ASSIGN_OR_RETURN(const BlockedPlan plan, MakeBlockedPlan(view, values, spec_.vw));
    if (!LocalBuffersFit(w.conv, plan.row_block, plan.kc, plan.col_block)) {
      return absl::InvalidArgumentError(
          "the Winograd conv's block buffers exceed the 4 MiB local buffer limit");
    }
    GTCO_ASSIGN_OR_RETURN(const EpilogueBuilder epilogue, ConvEpilogue(w));
    // The GEMMs write their results plainly: the epilogue runs in the output transform.
    ir::Workload plain = w;
    plain.epilogue.clear();
    GTCO_ASSIGN_OR_RETURN(const EpilogueBuilder none, EpilogueBuilder::Create(plain));
    const GemmOperands operands = WinogradOperands(w.conv, plan, &epilogue);
    return ir::LoweredFunc{func_name, KernelParams(w), LowerBlockedPlan(plan, none, operands)};
  }
};

class WinogradConvMapping final : public MappingSketch {
 public:
  explicit WinogradConvMapping(FmaMappingSpec spec) : sketch_(std::move(spec)) {}
  const char* Name() const override { return sketch_.spec().mapping; }
  const Sketch& sketch() const override { return sketch_; }
  MappingVerdict Explain(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    if (w.anchor == ir::AnchorKind::kConv && !IsWinogradConv(w.conv)) {
      return {Name(), false,
              "Winograd F(2x2, 3x3) takes 3x3 kernels of stride 1 and dilation 1, one group"};
    }
    return FmaVerdict(Name(), sketch_.spec(), w, hw,
                      absl::StrCat("Winograd F(2x2, 3x3): 16 GEMMs on ", sketch_.spec().vw,
                                   "-lane FMA micro-kernels, weights transformed and pre-packed"));
  }

  /// Ahead of the channel-vectorized mapping (rank -1) where its default ran faster: 3x3 convs
  /// of stride 1 with 16+ input and 32+ output channels on planes of 12x12 and more (0.46-0.82x
  /// its time with the weights warm, ResNet-50's, DenseNet's, SqueezeNet's and VGG's), or with
  /// 256x256+ channels on smaller ones (ResNet-50's 512->512 at 7x7: 0.97x with the weights
  /// evicted, 1.09x warm). VGG's first conv (3 input channels) ran 2.4x slower: a K of 3 leaves
  /// the transforms nothing to amortize (bench/results/conv_winograd.md, AMD Zen 4).
  int Rank(const ir::Workload& w, const target::HardwareInfo&) const override {
    if (w.anchor != ir::AnchorKind::kConv || !IsWinogradConv(w.conv)) return 0;
    const ir::ConvParams& p = w.conv;
    const int64_t pixels = ir::ConvOutH(p) * ir::ConvOutW(p);
    const bool wide = p.in_channels >= 16 && p.out_channels >= 32;
    return wide && (pixels >= 12 * 12 || p.in_channels * p.out_channels >= 256 * 256) ? -2 : 0;
  }

 private:
  WinogradConvSketch sketch_;
};

}  // namespace

absl::StatusOr<std::optional<PrepackedOperand>> PrepackWinogradConvWeights(
    const ir::Workload& w, const schedule::Trace& t, const std::vector<float>& weights) {
  const int64_t vw = t.sketch == kAvx512Winograd ? Avx512FmaSpec().vw
                     : t.sketch == kAvx2Winograd ? Avx2FmaSpec().vw
                                                 : 0;
  if (vw == 0 || w.anchor != ir::AnchorKind::kConv) return std::optional<PrepackedOperand>();
  GTCO_RETURN_IF_ERROR(w.Validate());
  if (!IsWinogradConv(w.conv)) {
    return absl::InvalidArgumentError("a Winograd trace for a conv that is not 3x3, stride 1");
  }
  const int64_t c = w.conv.in_channels, k = w.conv.out_channels;
  if (static_cast<int64_t>(weights.size()) != k * c * 9) {
    return absl::InvalidArgumentError(absl::StrCat("conv weights have ", weights.size(),
                                                   " elements, not ", k, " x ", c, " x 3 x 3"));
  }
  GTCO_ASSIGN_OR_RETURN(KnobValues values, BlockedTraceValues(w, t));
  values[kPackB] = kPackBPrepacked;
  const ir::MatMulParams view = WinogradGemmView(w.conv);
  GTCO_ASSIGN_OR_RETURN(const BlockedPlan plan, MakeBlockedPlan(view, values, vw));
  // U[ξ] [C, K] row-major for each position, each in PrepackB's panels, back to back.
  std::vector<std::vector<float>> u(kPositions, std::vector<float>(c * k));
  for (int64_t out = 0; out < k; ++out) {
    for (int64_t in = 0; in < c; ++in) {
      const float* g = weights.data() + (out * c + in) * 9;
      double gg[4][3];  // G g
      for (int i = 0; i < 4; ++i) {
        for (int s = 0; s < 3; ++s) {
          gg[i][s] = kG[i][0] * g[s] + kG[i][1] * g[3 + s] + kG[i][2] * g[6 + s];
        }
      }
      for (int i = 0; i < 4; ++i) {
        for (int j = 0; j < 4; ++j) {
          const double value = gg[i][0] * kG[j][0] + gg[i][1] * kG[j][1] + gg[i][2] * kG[j][2];
          u[4 * i + j][in * k + out] = static_cast<float>(value);
        }
      }
    }
  }
  PrepackedOperand prepacked;
  prepacked.trace = WithPackB(t, kPackBPrepacked);
  for (const std::vector<float>& position : u) {
    const std::vector<float> packed = PrepackB(plan, position.data());
    prepacked.data.insert(prepacked.data.end(), packed.begin(), packed.end());
  }
  prepacked.shape = {kPositions * c, PrepackedBElements(plan) / c};
  return std::optional<PrepackedOperand>(std::move(prepacked));
}

}  // namespace internal

const MappingSketch& Avx512FmaWinogradConvMapping() {
  static const internal::WinogradConvMapping* const mapping =
      new internal::WinogradConvMapping(internal::Renamed(
          internal::Avx512FmaSpec(), internal::kAvx512Winograd, "avx512_fma_winograd"));
  return *mapping;
}

const MappingSketch& Avx2FmaWinogradConvMapping() {
  static const internal::WinogradConvMapping* const mapping = new internal::WinogradConvMapping(
      internal::Renamed(internal::Avx2FmaSpec(), internal::kAvx2Winograd, "avx2_fma_winograd"));
  return *mapping;
}

}  // namespace gtco::kernels
