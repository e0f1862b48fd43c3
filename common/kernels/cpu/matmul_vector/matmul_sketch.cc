// Matmul sketch "mm_tiled/v1": (batch x M-blocks x N-blocks) task loop, K blocking, and a
// register-blocked micro-kernel of mr rows x nr vectors of vw lanes, with clamped row tails,
// narrower column-tail tiles, optional packing of B panels (pack_b) and the epilogue fused into
// the final write-back.
#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/kernels/family.h"
#include "common/schedule/epilogue.h"
#include "common/schedule/lower_util.h"
#include "common/schedule/sketch.h"
#include "common/util/status.h"

namespace gtco::kernels {
namespace {

using ir::Expr;
using ir::ForKind;
using ir::MakeInt;
using ir::MakeVar;
using ir::Stmt;

enum KnobIdx { kMc, kNc, kKc, kMr, kNr, kVw, kPar, kOrder, kUnrollK, kPackB, kNumKnobs };
constexpr char kPackBuffer[] = "bpack";
const std::vector<int64_t> kUnrollChoices = {1, 2, 4, 8};

/// Values below `limit` from `choices`, then `limit` itself (the whole dimension).
std::vector<int64_t> BlockChoices(std::vector<int64_t> choices, int64_t limit) {
  std::vector<int64_t> values;
  for (int64_t choice : choices) {
    if (choice < limit) values.push_back(choice);
  }
  values.push_back(limit);
  return values;
}

/// Every derived size of one (workload, decisions) pair.
struct MatMulPlan {
  ir::MatMulParams p;
  int64_t mr, nr, vw, kc, par, order, unroll_k;
  bool pack_b;        // main tiles read B from a per-column-tile packed [kc, tile_cols] panel
  int64_t tile_cols;  // nr * vw
  int64_t main_cols;  // N rounded down to tile_cols
  int64_t row_block;  // rows per M block (multiple of mr)
  int64_t col_block;  // main columns per N block (multiple of tile_cols)
  int64_t m_blocks, n_blocks, k_blocks;
  bool clamp_rows;  // M % mr != 0: the last row tile reads a clamped row, stores are guarded
};

/// Shape of one micro tile: `rows` x (`vecs` vectors of `width` lanes; width 1 = scalar).
struct TileShape {
  int64_t rows, vecs, width;
  std::string tag;
  bool packed_b = false;  ///< B comes from the packed panel (main tiles under pack_b)
};

class MatMulLowering {
 public:
  MatMulLowering(const MatMulPlan& plan, const EpilogueBuilder& epilogue)
      : plan_(plan), epilogue_(epilogue) {}

  Stmt Build() const;

 private:
  Expr ALoad(const Expr& b, const Expr& row, const Expr& k) const;
  Expr BLoad(const Expr& b, const Expr& k, const Expr& col) const;
  Expr OutIndex(const Expr& b, const Expr& row, const Expr& col) const;
  /// for r (unrolled) for c (unrolled) for v (vectorized): make(r, c, v).
  Stmt TileLoops(const TileShape& tile,
                 const std::function<Stmt(const Expr&, const Expr&, const Expr&)>& make) const;
  Stmt Tile(const TileShape& tile, const Expr& b, const Expr& i0, const Expr& j0,
            const Expr& ko) const;
  Stmt KLoop(const TileShape& tile, const std::string& acc, const Expr& b, const Expr& i0,
             const Expr& j0, const Expr& ko) const;
  Stmt WriteBack(const TileShape& tile, const std::string& acc, const Expr& b, const Expr& i0,
                 const Expr& j0, bool final_block) const;
  Stmt PackB(const Expr& b, const Expr& j0, const Expr& ko) const;
  Stmt Block(const Expr& b, const Expr& mb, const Expr& nb) const;
  Stmt TailTiles(const Expr& b, const Expr& i_begin, const Expr& row_tiles, const Expr& ko) const;

  const MatMulPlan& plan_;
  const EpilogueBuilder& epilogue_;
};

Expr MatMulLowering::ALoad(const Expr& b, const Expr& row, const Expr& k) const {
  const ir::MatMulParams& p = plan_.p;
  const Expr base = p.a_batched ? b * MakeInt(p.m * p.k) : MakeInt(0);
  const Expr offset = p.trans_a ? k * MakeInt(p.m) + row : row * MakeInt(p.k) + k;
  return ir::MakeLoad(InputName(0), base + offset);
}

Expr MatMulLowering::BLoad(const Expr& b, const Expr& k, const Expr& col) const {
  const ir::MatMulParams& p = plan_.p;
  const Expr base = p.b_batched ? b * MakeInt(p.k * p.n) : MakeInt(0);
  const Expr offset = p.trans_b ? col * MakeInt(p.k) + k : k * MakeInt(p.n) + col;
  return ir::MakeLoad(InputName(1), base + offset);
}

Expr MatMulLowering::OutIndex(const Expr& b, const Expr& row, const Expr& col) const {
  return (b * MakeInt(plan_.p.m) + row) * MakeInt(plan_.p.n) + col;
}

Stmt MatMulLowering::TileLoops(
    const TileShape& tile,
    const std::function<Stmt(const Expr&, const Expr&, const Expr&)>& make) const {
  const std::string r_name = tile.tag + "_r", c_name = tile.tag + "_c", v_name = tile.tag + "_v";
  const Expr r = tile.rows > 1 ? MakeVar(r_name) : MakeInt(0);
  const Expr c = tile.vecs > 1 ? MakeVar(c_name) : MakeInt(0);
  const Expr v = tile.width > 1 ? MakeVar(v_name) : MakeInt(0);
  Stmt body = make(r, c, v);
  if (tile.width > 1) {
    body = ir::MakeFor(v_name, MakeInt(0), MakeInt(tile.width), ForKind::kVectorized, body);
  }
  if (tile.vecs > 1) {
    body = ir::MakeFor(c_name, MakeInt(0), MakeInt(tile.vecs), ForKind::kUnrolled, body);
  }
  if (tile.rows > 1) {
    body = ir::MakeFor(r_name, MakeInt(0), MakeInt(tile.rows), ForKind::kUnrolled, body);
  }
  return body;
}

Stmt MatMulLowering::KLoop(const TileShape& tile, const std::string& acc, const Expr& b,
                           const Expr& i0, const Expr& j0, const Expr& ko) const {
  const ir::MatMulParams& p = plan_.p;
  const Expr k_begin = ko * MakeInt(plan_.kc);
  const Expr k_extent =
      plan_.k_blocks == 1 ? MakeInt(p.k) : Min(MakeInt(plan_.kc), MakeInt(p.k) - k_begin);
  auto update = [&](const Expr& k_local) {
    const Expr k = k_begin + k_local;
    return TileLoops(tile, [&](const Expr& r, const Expr& c, const Expr& v) {
      const Expr slot = r * MakeInt(tile.vecs * tile.width) + c * MakeInt(tile.width) + v;
      const Expr row = plan_.clamp_rows ? Min(i0 + r, MakeInt(p.m - 1)) : i0 + r;
      const Expr col_in_tile = c * MakeInt(tile.width) + v;
      const Expr b_value =
          tile.packed_b
              ? ir::MakeLoad(kPackBuffer, k_local * MakeInt(plan_.tile_cols) + col_in_tile)
              : BLoad(b, k, j0 + col_in_tile);
      return ir::MakeStore(acc, slot, ir::MakeLoad(acc, slot) + ALoad(b, row, k) * b_value);
    });
  };
  return UnrolledSteps(tile.tag, k_extent, plan_.unroll_k, update);
}

Stmt MatMulLowering::WriteBack(const TileShape& tile, const std::string& acc, const Expr& b,
                               const Expr& i0, const Expr& j0, bool final_block) const {
  const ir::MatMulParams& p = plan_.p;
  return TileLoops(tile, [&](const Expr& r, const Expr& c, const Expr& v) {
    const Expr slot = r * MakeInt(tile.vecs * tile.width) + c * MakeInt(tile.width) + v;
    const Expr col = j0 + c * MakeInt(tile.width) + v;
    Expr value = ir::MakeLoad(acc, slot);
    if (final_block) value = epilogue_.Apply(value, b * MakeInt(p.m) + i0 + r, col);
    Stmt store = ir::MakeStore(kOutputName, OutIndex(b, i0 + r, col), value);
    if (!plan_.clamp_rows) return store;
    return ir::MakeIf(ir::MakeBinary(ir::ExprKind::kLt, i0 + r, MakeInt(p.m)), store);
  });
}

Stmt MatMulLowering::Tile(const TileShape& tile, const Expr& b, const Expr& i0, const Expr& j0,
                          const Expr& ko) const {
  const std::string acc = "acc_" + tile.tag;
  const ir::MatMulParams& p = plan_.p;
  Stmt zero = TileLoops(tile, [&](const Expr& r, const Expr& c, const Expr& v) {
    const Expr slot = r * MakeInt(tile.vecs * tile.width) + c * MakeInt(tile.width) + v;
    return ir::MakeStore(acc, slot, ir::MakeFloat(0.0));
  });
  Stmt init = zero, write_back = WriteBack(tile, acc, b, i0, j0, /*final_block=*/true);
  if (plan_.k_blocks > 1) {
    // Later K blocks continue from the partial sums already in the output.
    Stmt reload = TileLoops(tile, [&](const Expr& r, const Expr& c, const Expr& v) {
      const Expr slot = r * MakeInt(tile.vecs * tile.width) + c * MakeInt(tile.width) + v;
      const Expr row = plan_.clamp_rows ? Min(i0 + r, MakeInt(p.m - 1)) : i0 + r;
      return ir::MakeStore(
          acc, slot, ir::MakeLoad(kOutputName, OutIndex(b, row, j0 + c * MakeInt(tile.width) + v)));
    });
    init = ir::MakeIf(ir::MakeBinary(ir::ExprKind::kEq, ko, MakeInt(0)), zero, reload);
    if (!epilogue_.empty()) {
      write_back = ir::MakeIf(ir::MakeBinary(ir::ExprKind::kEq, ko, MakeInt(plan_.k_blocks - 1)),
                              write_back, WriteBack(tile, acc, b, i0, j0, /*final_block=*/false));
    }
  }
  return ir::MakeAllocate(acc, tile.rows * tile.vecs * tile.width,
                          ir::MakeBlock({init, KLoop(tile, acc, b, i0, j0, ko), write_back}));
}

Stmt MatMulLowering::TailTiles(const Expr& b, const Expr& i_begin, const Expr& row_tiles,
                               const Expr& ko) const {
  int64_t remaining = plan_.p.n - plan_.main_cols;
  int64_t col = plan_.main_cols;
  std::vector<Stmt> tiles;
  const Expr i0 = i_begin + MakeVar("tail_it") * MakeInt(plan_.mr);
  auto add_tile = [&](int64_t vecs, int64_t width) {
    const TileShape tile{plan_.mr, vecs, width, absl::StrCat("t", tiles.size())};
    tiles.push_back(Tile(tile, b, i0, MakeInt(col), ko));
    col += vecs * width;
    remaining -= vecs * width;
  };
  if (remaining >= plan_.vw) add_tile(remaining / plan_.vw, plan_.vw);
  for (int64_t width : {8, 4}) {
    if (width < plan_.vw && remaining >= width) add_tile(1, width);
  }
  if (remaining > 0) add_tile(remaining, 1);
  return LoopOrSkip("tail_it", MakeInt(0), row_tiles, ForKind::kSerial, ir::MakeBlock(tiles));
}

Stmt MatMulLowering::PackB(const Expr& b, const Expr& j0, const Expr& ko) const {
  const Expr k_begin = ko * MakeInt(plan_.kc);
  const Expr k_extent = plan_.k_blocks == 1 ? MakeInt(plan_.p.k)
                                            : Min(MakeInt(plan_.kc), MakeInt(plan_.p.k) - k_begin);
  const Expr k_local = MakeVar("pk"), col = MakeVar("pc");
  Stmt copy = ir::MakeStore(kPackBuffer, k_local * MakeInt(plan_.tile_cols) + col,
                            BLoad(b, k_begin + k_local, j0 + col));
  return ir::MakeFor(
      "pk", MakeInt(0), k_extent, ForKind::kSerial,
      ir::MakeFor("pc", MakeInt(0), MakeInt(plan_.tile_cols), ForKind::kVectorized, copy));
}

Stmt MatMulLowering::Block(const Expr& b, const Expr& mb, const Expr& nb) const {
  const ir::MatMulParams& p = plan_.p;
  const Expr i_begin = mb * MakeInt(plan_.row_block);
  const Expr row_tiles = plan_.m_blocks == 1
                             ? MakeInt(CeilDiv(p.m, plan_.mr))
                             : Min(MakeInt(plan_.row_block / plan_.mr),
                                   (MakeInt(p.m + plan_.mr - 1) - i_begin) / MakeInt(plan_.mr));
  const int64_t block_tiles = plan_.col_block / plan_.tile_cols;
  const int64_t main_tiles = plan_.main_cols / plan_.tile_cols;
  const Expr col_tiles = plan_.n_blocks == 1 ? MakeInt(main_tiles)
                                             : Min(MakeInt(block_tiles),
                                                   MakeInt(main_tiles) - nb * MakeInt(block_tiles));
  const Expr ko = plan_.k_blocks > 1 ? MakeVar("ko") : MakeInt(0);
  const Expr i0 = i_begin + MakeVar("it") * MakeInt(plan_.mr);
  const Expr j0 = nb * MakeInt(plan_.col_block) + MakeVar("jt") * MakeInt(plan_.tile_cols);
  const TileShape main_tile{plan_.mr, plan_.nr, plan_.vw, "m", plan_.pack_b};
  Stmt tile = Tile(main_tile, b, i0, j0, ko);
  Stmt tiles;
  if (plan_.pack_b) {
    // Pack the column tile's [kc, tile_cols] B panel once; every row tile then reads it
    // contiguously (turns trans_b's strided reads into one gather per panel).
    Stmt rows = LoopOrSkip("it", MakeInt(0), row_tiles, ForKind::kSerial, tile);
    Stmt panel = ir::MakeAllocate(kPackBuffer, plan_.kc * plan_.tile_cols,
                                  ir::MakeBlock({PackB(b, j0, ko), rows}));
    tiles = LoopOrSkip("jt", MakeInt(0), col_tiles, ForKind::kSerial, panel);
  } else if (plan_.order == 0) {
    tiles = LoopOrSkip("jt", MakeInt(0), col_tiles, ForKind::kSerial,
                       LoopOrSkip("it", MakeInt(0), row_tiles, ForKind::kSerial, tile));
  } else {
    tiles = LoopOrSkip("it", MakeInt(0), row_tiles, ForKind::kSerial,
                       LoopOrSkip("jt", MakeInt(0), col_tiles, ForKind::kSerial, tile));
  }
  std::vector<Stmt> body = {tiles};
  if (plan_.main_cols < p.n) {
    Stmt tail = TailTiles(b, i_begin, row_tiles, ko);
    if (plan_.n_blocks > 1) {
      tail = ir::MakeIf(ir::MakeBinary(ir::ExprKind::kEq, nb, MakeInt(plan_.n_blocks - 1)), tail);
    }
    body.push_back(tail);
  }
  Stmt block = ir::MakeBlock(body);
  if (plan_.k_blocks == 1) return block;
  return ir::MakeFor("ko", MakeInt(0), MakeInt(plan_.k_blocks), ForKind::kSerial, block);
}

Stmt MatMulLowering::Build() const {
  const int64_t batch = plan_.p.batch;
  const Expr task = MakeVar("task");
  if (plan_.par == 1) {
    // Parallel over (batch, M block); N blocks run serially inside a task.
    const Expr b = MakeVar("b"), mb = MakeVar("mb");
    Stmt inner = LoopOrSkip("nb", MakeInt(0), MakeInt(plan_.n_blocks), ForKind::kSerial,
                            Block(b, mb, MakeVar("nb")));
    inner = ir::MakeLet("b", task / MakeInt(plan_.m_blocks),
                        ir::MakeLet("mb", task % MakeInt(plan_.m_blocks), inner));
    return ir::MakeFor("task", MakeInt(0), MakeInt(batch * plan_.m_blocks), ForKind::kParallel,
                       inner);
  }
  const int64_t per_batch = plan_.m_blocks * plan_.n_blocks;
  Stmt inner = Block(MakeVar("b"), MakeVar("mb"), MakeVar("nb"));
  inner = ir::MakeLet("b", task / MakeInt(per_batch),
                      ir::MakeLet("mb", (task / MakeInt(plan_.n_blocks)) % MakeInt(plan_.m_blocks),
                                  ir::MakeLet("nb", task % MakeInt(plan_.n_blocks), inner)));
  return ir::MakeFor("task", MakeInt(0), MakeInt(batch * per_batch),
                     plan_.par == 2 ? ForKind::kParallel : ForKind::kSerial, inner);
}

absl::Status CheckShapes(const ir::Workload& w) {
  const ir::MatMulParams& p = w.matmul;
  if (p.batch < 1 || p.m < 1 || p.n < 1 || p.k < 1 || w.inputs.size() < 2) {
    return absl::InvalidArgumentError("matmul workload needs positive sizes and inputs A, B");
  }
  const bool ok = NumElements(w.inputs[0].shape) == (p.a_batched ? p.batch : 1) * p.m * p.k &&
                  NumElements(w.inputs[1].shape) == (p.b_batched ? p.batch : 1) * p.k * p.n &&
                  NumElements(w.output.shape) == p.batch * p.m * p.n &&
                  (w.output.shape.empty() || w.output.shape.back() == p.n);
  if (!ok) return absl::InvalidArgumentError("matmul workload shapes disagree with its params");
  return absl::OkStatus();
}

absl::StatusOr<MatMulPlan> MakePlan(const ir::Workload& w, const KnobValues& values) {
  GTCO_RETURN_IF_ERROR(CheckShapes(w));
  GTCO_RETURN_IF_ERROR(CheckRange("mc", values[kMc], 1, 1 << 20));
  GTCO_RETURN_IF_ERROR(CheckRange("nc", values[kNc], 1, 1 << 20));
  GTCO_RETURN_IF_ERROR(CheckRange("kc", values[kKc], 1, 1 << 20));
  GTCO_RETURN_IF_ERROR(CheckRange("mr", values[kMr], 1, 8));
  GTCO_RETURN_IF_ERROR(CheckRange("nr", values[kNr], 1, 4));
  GTCO_RETURN_IF_ERROR(CheckOneOf("vw", values[kVw], {4, 8, 16}));
  GTCO_RETURN_IF_ERROR(CheckRange("par", values[kPar], 0, 2));
  GTCO_RETURN_IF_ERROR(CheckRange("order", values[kOrder], 0, 1));
  GTCO_RETURN_IF_ERROR(CheckOneOf("unroll_k", values[kUnrollK], kUnrollChoices));
  GTCO_RETURN_IF_ERROR(CheckRange("pack_b", values[kPackB], 0, 1));
  MatMulPlan plan;
  plan.p = w.matmul;
  plan.mr = values[kMr];
  plan.nr = values[kNr];
  plan.vw = values[kVw];
  plan.kc = std::min(values[kKc], plan.p.k);
  plan.par = values[kPar];
  plan.order = values[kOrder];
  plan.unroll_k = values[kUnrollK];
  plan.pack_b = values[kPackB] == 1;
  plan.tile_cols = plan.nr * plan.vw;
  plan.main_cols = plan.p.n / plan.tile_cols * plan.tile_cols;
  const int64_t m_rounded = CeilDiv(plan.p.m, plan.mr) * plan.mr;
  plan.row_block = std::min(CeilDiv(values[kMc], plan.mr) * plan.mr, m_rounded);
  plan.col_block =
      std::max<int64_t>(
          std::min(CeilDiv(values[kNc], plan.tile_cols), plan.main_cols / plan.tile_cols), 1) *
      plan.tile_cols;
  plan.m_blocks = CeilDiv(plan.p.m, plan.row_block);
  plan.n_blocks = std::max<int64_t>(1, CeilDiv(plan.main_cols, plan.col_block));
  plan.k_blocks = CeilDiv(plan.p.k, plan.kc);
  plan.clamp_rows = plan.p.m % plan.mr != 0;
  return plan;
}

class MatMulSketchImpl final : public LoopSketch {
 public:
  const char* Name() const override { return "mm_tiled/v1"; }
  std::vector<std::string> KnobNames() const override {
    return {"mc", "nc", "kc", "mr", "nr", "vw", "par", "order", "unroll_k", "pack_b"};
  }
  bool AppliesTo(const ir::Workload& w) const override {
    return w.anchor == ir::AnchorKind::kMatMul;
  }

  std::vector<Knob> Knobs(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    const ir::MatMulParams& p = w.matmul;
    std::vector<int64_t> mr_values, nr_values = {1, 2, 3, 4};
    for (int64_t mr = 1; mr <= std::min<int64_t>(8, p.m); ++mr) mr_values.push_back(mr);
    std::vector<int64_t> par_values = {0};
    if (hw.cores > 1 && p.batch * p.m * p.n * p.k >= (1 << 15)) par_values = {1, 2, 0};
    return {{"mc", BlockChoices({8, 16, 32, 64, 128, 256}, p.m)},
            {"nc", BlockChoices({16, 32, 64, 128, 256, 512}, p.n)},
            {"kc", BlockChoices({32, 64, 128, 256, 512}, p.k)},
            {"mr", mr_values},
            {"nr", nr_values},
            {"vw", VectorWidths(hw.MaxFloatLanes())},
            {"par", par_values},
            {"order", {0, 1}},
            {"unroll_k", kUnrollChoices},
            {"pack_b", {0, 1}}};
  }

  bool Admits(const ir::Workload& w, const target::HardwareInfo& hw,
              const KnobValues& values) const override {
    const ir::MatMulParams& p = w.matmul;
    const int64_t registers = hw.HasFeature("avx512f") ? 32 : 16;
    const int64_t mr = values[kMr], nr = values[kNr], vw = values[kVw];
    // mr x nr accumulators, nr B vectors and one broadcast A value live in registers.
    if (mr * nr + nr + 1 > registers) return false;
    const bool narrowest = nr == 1 && vw == VectorWidths(hw.MaxFloatLanes()).front();
    if (nr * vw > p.n && !narrowest) return false;
    if (values[kNc] < nr * vw && values[kNc] != p.n) return false;
    if (values[kMc] < mr && values[kMc] != p.m) return false;
    if (values[kUnrollK] > values[kKc]) return false;
    // Packing implies column tiles outermost (order 0) and needs at least one full tile.
    if (values[kPackB] == 1 && (values[kOrder] != 0 || nr * vw > p.n)) return false;
    // The A block (mc x kc) and the B panel (kc x nc) should share the L2 cache.
    const int64_t block_bytes = (values[kMc] * values[kKc] + values[kKc] * values[kNc]) * 4;
    return block_bytes <= std::max<int64_t>(hw.l2_bytes, 256 * 1024);
  }

  absl::StatusOr<ir::LoweredFunc> Lower(const ir::Workload& w, const KnobValues& values,
                                        const std::string& func_name) const override {
    GTCO_ASSIGN_OR_RETURN(const MatMulPlan plan, MakePlan(w, values));
    GTCO_ASSIGN_OR_RETURN(const EpilogueBuilder epilogue, EpilogueBuilder::Create(w));
    return ir::LoweredFunc{func_name, KernelParams(w), MatMulLowering(plan, epilogue).Build()};
  }
};

}  // namespace

const Sketch& TiledMatMulSketch() {
  static const MatMulSketchImpl* const sketch = new MatMulSketchImpl();
  return *sketch;
}

}  // namespace gtco::kernels
