// Lowering of the register-blocked matmul plan: a (parallel) loop over (batch, N block, M block)
// tasks; per task and K block, optional packing of the A block into mr-interleaved panels (or,
// where the operands pack A by columns, into one [kc][row_block] block, or where they stage A,
// into their own staging read in place, K walked in the operands' groups); per column tile an
// optional packed [kc, tc] B panel; mr x nr register tiles (broadcast A x vectors of B) with an
// exact tail tile for M % mr rows and a zero-padded, store-masked tile for the N % tc columns;
// partial sums reloaded only when K is blocked (from the output, or from a task-local buffer
// where the operands place the output elsewhere); the epilogue fused into the final write-back.
#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/kernels/cpu/matmul_blocked/matmul_blocked.h"
#include "common/kernels/family.h"
#include "common/schedule/lower_util.h"

namespace gtco::kernels::internal {
namespace {

using ir::Expr;
using ir::ForKind;
using ir::MakeInt;
using ir::MakeVar;
using ir::Stmt;

constexpr char kAPack[] = "apack";
constexpr char kBPack[] = "bpack";
constexpr char kPartials[] = "cpart";

Expr Eq(const Expr& a, const Expr& b) { return ir::MakeBinary(ir::ExprKind::kEq, a, b); }
Expr Lt(const Expr& a, const Expr& b) { return ir::MakeBinary(ir::ExprKind::kLt, a, b); }

/// `stmt` guarded by `cond`, or `stmt` itself when the guard is statically true.
Stmt When(bool always, const Expr& cond, Stmt stmt) {
  return always ? stmt : ir::MakeIf(cond, std::move(stmt));
}

/// One register tile: `rows` x `vecs` vectors, where its A and B values come from, and where
/// it sits in the output.
struct TileSpec {
  std::string tag;
  int64_t rows = 1, vecs = 1;
  Expr i0, j0;          ///< first output row / column
  Expr a_pack_base;     ///< packed A panel start (nullptr: read A directly)
  int64_t b_width = 0;  ///< packed B panel width in floats (0: read B directly)
  bool masked = false;  ///< columns past N are computed on zero padding and not stored
  /// Where the packed panel is: the kernel's packing buffer (offset 0), or for a pre-packed B
  /// the B input itself at `b_base`.
  std::string b_buffer = kBPack;
  Expr b_base;
  int64_t a_pack_stride = 0;  ///< floats between packed A's K rows (0: the tile's rows)
};

class BlockedLowering {
 public:
  BlockedLowering(const BlockedPlan& plan, const EpilogueBuilder& epilogue,
                  const GemmOperands& operands)
      : plan_(plan), epilogue_(epilogue), operands_(operands) {}

  Stmt Build() const;

 private:
  Expr ALoad(const Expr& row, const Expr& k) const;
  Expr BLoad(const Expr& k, const Expr& col) const;
  /// Where row i0 + r, column col of the output goes (the row split as the tiles have it).
  GemmOperands::Place OutPlace(const Expr& i0, const Expr& r, const Expr& col) const;
  Expr KBegin() const { return ko_ * MakeInt(plan_.kc); }
  Expr KExtent() const;
  /// for r (unrolled) for c (unrolled) for v (vectorized): make(r, c, v, slot); with
  /// rows_in_lanes, for c for v (both unrolled) for r (vectorized).
  Stmt TileLoops(
      const TileSpec& tile,
      const std::function<Stmt(const Expr&, const Expr&, const Expr&, const Expr&)>& make,
      bool rows_in_lanes = false) const;
  Stmt Tile(const TileSpec& tile) const;
  /// B[k_begin + k_local, column c * vw + v of the tile] as the tile reads it (packed panel,
  /// pre-packed B, or in place).
  Expr BValue(const TileSpec& tile, const Expr& k_local, const Expr& c, const Expr& v) const;
  Stmt KLoop(const TileSpec& tile, const std::string& acc) const;
  Stmt WriteBack(const TileSpec& tile, const std::string& acc, bool final_block) const;
  Stmt PackBPanel(const Expr& j0, int64_t width, bool zero_past_n) const;
  /// N rounded up to whole column tiles: the row length of a pre-packed B's K block.
  int64_t PaddedN() const { return (plan_.p.n + plan_.tc - 1) / plan_.tc * plan_.tc; }
  Stmt PackABlock(const Expr& i_begin, const Expr& row_tiles) const;
  /// Partial sums of K blocks kept in a local [row_block][col_block + vw] buffer instead of the
  /// output: when the output is not row-major C (GemmOperands::out), reloading them from there
  /// would gather.
  bool LocalPartials() const {
    return plan_.k_blocks > 1 && operands_.out != nullptr && !operands_.batch_in_task;
  }
  int64_t PartialStride() const { return plan_.col_block + plan_.vw; }
  /// A packed by columns (GemmOperands::pack_a_column): one [kc][row_block] block, each K row
  /// written at once, tiles reading their rows at a stride of row_block.
  bool ColumnPackedA() const { return plan_.pack_a && operands_.pack_a_column != nullptr; }
  /// The K block's statements after A's packing or staging for the block.
  Stmt WithAStaged(const Expr& i_begin, const Expr& row_tiles, std::vector<Stmt> stmts) const;
  Stmt KBlockBody(const Expr& i_begin, const Expr& row_tiles, const Expr& j_begin,
                  const Expr& col_tiles) const;
  Stmt TaskBody() const;

  const BlockedPlan& plan_;
  const EpilogueBuilder& epilogue_;
  const GemmOperands& operands_;
  const Expr b_ = MakeVar("b");
  const Expr mb_ = MakeVar("mb");
  const Expr nb_ = MakeVar("nb");
  Expr ko_ = plan_.k_blocks > 1 ? MakeVar("ko") : MakeInt(0);
};

Expr BlockedLowering::ALoad(const Expr& row, const Expr& k) const {
  return operands_.a(b_, row, k);
}

Expr BlockedLowering::BLoad(const Expr& k, const Expr& col) const {
  return operands_.b(b_, k, col);
}

GemmOperands::Place BlockedLowering::OutPlace(const Expr& i0, const Expr& r,
                                              const Expr& col) const {
  if (operands_.batch_in_task) {
    // The task's own [batch][row_block][col_block] result buffer.
    const Expr row = i0 + r - mb_ * MakeInt(plan_.row_block);
    const Expr local = (b_ * MakeInt(plan_.row_block) + row) * MakeInt(plan_.col_block) +
                       (col - nb_ * MakeInt(plan_.col_block));
    return {local, i0 + r, col, operands_.batch_in_task->buffer};
  }
  if (operands_.out) return operands_.out(b_, i0 + r, col);
  return {(b_ * MakeInt(plan_.p.m) + (i0 + r)) * MakeInt(plan_.p.n) + col,
          b_ * MakeInt(plan_.p.m) + i0 + r, col};
}

Expr BlockedLowering::KExtent() const {
  if (plan_.k_blocks == 1) return MakeInt(plan_.p.k);
  return ir::Min(MakeInt(plan_.kc), MakeInt(plan_.p.k) - KBegin());
}

Stmt BlockedLowering::TileLoops(
    const TileSpec& tile,
    const std::function<Stmt(const Expr&, const Expr&, const Expr&, const Expr&)>& make,
    bool rows_in_lanes) const {
  const std::string r_name = tile.tag + "_r", c_name = tile.tag + "_c", v_name = tile.tag + "_v";
  const Expr r = tile.rows > 1 ? MakeVar(r_name) : MakeInt(0);
  const Expr c = tile.vecs > 1 ? MakeVar(c_name) : MakeInt(0);
  const Expr v = MakeVar(v_name);
  const Expr slot = r * MakeInt(tile.vecs * plan_.vw) + c * MakeInt(plan_.vw) + v;
  Stmt body = make(r, c, v, slot);
  auto wrap = [&](const std::string& name, int64_t extent, ForKind kind) {
    if (extent > 1 || kind == ForKind::kVectorized) {
      body = ir::MakeFor(name, MakeInt(0), MakeInt(extent), kind, body);
    }
  };
  if (rows_in_lanes) {
    wrap(r_name, tile.rows, ForKind::kVectorized);
    wrap(v_name, plan_.vw, ForKind::kUnrolled);
    wrap(c_name, tile.vecs, ForKind::kUnrolled);
  } else {
    wrap(v_name, plan_.vw, ForKind::kVectorized);
    wrap(c_name, tile.vecs, ForKind::kUnrolled);
    wrap(r_name, tile.rows, ForKind::kUnrolled);
  }
  return body;
}

Expr BlockedLowering::BValue(const TileSpec& tile, const Expr& k_local, const Expr& c,
                             const Expr& v) const {
  const Expr col_in_tile = c * MakeInt(plan_.vw) + v;
  Expr panel_index = k_local * MakeInt(tile.b_width) + col_in_tile;
  if (tile.b_base != nullptr) panel_index = tile.b_base + panel_index;
  return tile.b_width > 0 ? ir::MakeLoad(tile.b_buffer, panel_index)
                          : BLoad(KBegin() + k_local, tile.j0 + col_in_tile);
}

Stmt BlockedLowering::KLoop(const TileSpec& tile, const std::string& acc) const {
  if (plan_.staged_a) {
    // The K block's groups in turn, each a K loop over its steps (unrolled by unroll_k), A
    // broadcast from the staging at the row's offset plus the group's and the step's.
    const GemmOperands::StagedA& staged = *operands_.staged_a;
    const Expr i_begin = mb_ * MakeInt(plan_.row_block);
    const std::string g_name = tile.tag + "_g";
    const Expr g = staged.groups > 1 ? MakeVar(g_name) : MakeInt(0);
    const Expr steps = KExtent() / MakeInt(staged.groups);
    auto update = [&](const Expr& step) {
      return TileLoops(tile, [&](const Expr& r, const Expr& c, const Expr& v, const Expr& slot) {
        Expr a_at = staged.row_offset(i_begin, tile.i0 + r) + staged.group_offset(g) +
                    staged.step_offset(step);
        if (staged.batch_offset) a_at = staged.batch_offset(b_) + a_at;
        const Expr a_value = ir::MakeLoad(kAPack, a_at);
        const Expr b_value = BValue(tile, g * steps + step, c, v);
        return ir::MakeStore(acc, slot, ir::MakeLoad(acc, slot) + a_value * b_value);
      });
    };
    Stmt body = UnrolledSteps(tile.tag, steps, plan_.unroll_k, update);
    return staged.groups > 1
               ? ir::MakeFor(g_name, MakeInt(0), MakeInt(staged.groups), ForKind::kSerial, body)
               : body;
  }
  auto update = [&](const Expr& k_local) {
    return TileLoops(tile, [&](const Expr& r, const Expr& c, const Expr& v, const Expr& slot) {
      const Expr a_value = tile.a_pack_base != nullptr
                               ? ir::MakeLoad(kAPack, tile.a_pack_base +
                                                          k_local * MakeInt(tile.a_pack_stride > 0
                                                                                ? tile.a_pack_stride
                                                                                : tile.rows) +
                                                          r)
                               : ALoad(tile.i0 + r, KBegin() + k_local);
      return ir::MakeStore(acc, slot,
                           ir::MakeLoad(acc, slot) + a_value * BValue(tile, k_local, c, v));
    });
  };
  return UnrolledSteps(tile.tag, KExtent(), plan_.unroll_k, update);
}

Stmt BlockedLowering::WriteBack(const TileSpec& tile, const std::string& acc,
                                bool final_block) const {
  if (operands_.write_back_by_rows && final_block && tile.rows > 1) {
    // Each column's rows are contiguous in the output (GemmOperands::write_back_by_rows).
    return TileLoops(
        tile,
        [&](const Expr& r, const Expr& c, const Expr& v, const Expr& slot) {
          const Expr col = tile.j0 + c * MakeInt(plan_.vw) + v;
          const GemmOperands::Place place = OutPlace(tile.i0, r, col);
          Stmt store = ir::MakeStore(
              place.buffer, place.index,
              epilogue_.Apply(ir::MakeLoad(acc, slot), place.epilogue_row, place.epilogue_col));
          return tile.masked ? ir::MakeIf(Lt(col, MakeInt(plan_.p.n)), store) : store;
        },
        /*rows_in_lanes=*/true);
  }
  return TileLoops(tile, [&](const Expr& r, const Expr& c, const Expr& v, const Expr& slot) {
    const Expr col = tile.j0 + c * MakeInt(plan_.vw) + v;
    const GemmOperands::Place place = OutPlace(tile.i0, r, col);
    if (!tile.masked) {
      Expr value = ir::MakeLoad(acc, slot);
      if (final_block) value = epilogue_.Apply(value, place.epilogue_row, place.epilogue_col);
      return ir::MakeStore(place.buffer, place.index, value);
    }
    // Read the accumulator unmasked (keeps it in registers); only the epilogue's loads and the
    // store run under the column mask.
    const std::string held = tile.tag + "_val";
    Expr value = MakeVar(held, ir::ScalarType::kF32);
    if (final_block) value = epilogue_.Apply(value, place.epilogue_row, place.epilogue_col);
    return ir::MakeLet(
        held, ir::MakeLoad(acc, slot),
        ir::MakeIf(Lt(col, MakeInt(plan_.p.n)), ir::MakeStore(place.buffer, place.index, value)));
  });
}

Stmt BlockedLowering::Tile(const TileSpec& tile) const {
  const std::string acc = "acc_" + tile.tag;
  Stmt zero = TileLoops(tile, [&](const Expr&, const Expr&, const Expr&, const Expr& slot) {
    return ir::MakeStore(acc, slot, ir::MakeFloat(0.0));
  });
  Stmt init = zero, write_back = WriteBack(tile, acc, /*final_block=*/true);
  if (LocalPartials()) {
    // Partial sums of earlier K blocks live in the task's own row-major buffer, every lane
    // (the masked tail's too: the buffer's rows have a vector of slack).
    auto partial = [&](const Expr& r, const Expr& c, const Expr& v) {
      const Expr row = tile.i0 + r - mb_ * MakeInt(plan_.row_block);
      const Expr col = tile.j0 + c * MakeInt(plan_.vw) + v - nb_ * MakeInt(plan_.col_block);
      return row * MakeInt(PartialStride()) + col;
    };
    Stmt reload =
        TileLoops(tile, [&](const Expr& r, const Expr& c, const Expr& v, const Expr& slot) {
          return ir::MakeStore(acc, slot, ir::MakeLoad(kPartials, partial(r, c, v)));
        });
    Stmt keep = TileLoops(tile, [&](const Expr& r, const Expr& c, const Expr& v, const Expr& slot) {
      return ir::MakeStore(kPartials, partial(r, c, v), ir::MakeLoad(acc, slot));
    });
    init = ir::MakeIf(Eq(ko_, MakeInt(0)), zero, reload);
    write_back = ir::MakeIf(Eq(ko_, MakeInt(plan_.k_blocks - 1)), write_back, keep);
  } else if (plan_.k_blocks > 1) {
    // Later K blocks continue from the partial sums already in the output. Masked tiles read
    // a clamped column (no mask, so the accumulator stays in registers).
    Stmt reload =
        TileLoops(tile, [&](const Expr& r, const Expr& c, const Expr& v, const Expr& slot) {
          Expr col = tile.j0 + c * MakeInt(plan_.vw) + v;
          if (tile.masked) col = ir::Min(col, MakeInt(plan_.p.n - 1));
          const GemmOperands::Place place = OutPlace(tile.i0, r, col);
          return ir::MakeStore(acc, slot, ir::MakeLoad(place.buffer, place.index));
        });
    init = ir::MakeIf(Eq(ko_, MakeInt(0)), zero, reload);
    if (!epilogue_.empty()) {
      write_back = ir::MakeIf(Eq(ko_, MakeInt(plan_.k_blocks - 1)), write_back,
                              WriteBack(tile, acc, /*final_block=*/false));
    }
  }
  return ir::MakeAllocate(acc, tile.rows * tile.vecs * plan_.vw,
                          ir::MakeBlock({init, KLoop(tile, acc), write_back}));
}

Stmt BlockedLowering::PackBPanel(const Expr& j0, int64_t width, bool zero_past_n) const {
  // bpack[k][width] = B[k_begin + k][j0 + col], zero past column N (the tail panel).
  const Expr k_local = MakeVar("pk"), col = MakeVar("pc");
  if (operands_.pack_b_row) {
    return ir::MakeFor("pk", MakeInt(0), KExtent(), ForKind::kSerial,
                       operands_.pack_b_row(b_, KBegin() + k_local, j0, width, zero_past_n, kBPack,
                                            k_local * MakeInt(width)));
  }
  const Expr dest = k_local * MakeInt(width) + col;
  Stmt copy = ir::MakeStore(kBPack, dest, BLoad(KBegin() + k_local, j0 + col));
  if (zero_past_n) {
    copy = ir::MakeIf(Lt(j0 + col, MakeInt(plan_.p.n)), copy,
                      ir::MakeStore(kBPack, dest, ir::MakeFloat(0.0)));
  }
  return ir::MakeFor("pk", MakeInt(0), KExtent(), ForKind::kSerial,
                     ir::MakeFor("pc", MakeInt(0), MakeInt(width), ForKind::kVectorized, copy));
}

Stmt BlockedLowering::PackABlock(const Expr& i_begin, const Expr& row_tiles) const {
  // apack holds each row tile's [k][mr] panel back to back, then the tail tile's [k][row_tail].
  const Expr it = MakeVar("pa_it"), k_local = MakeVar("pa_k"), r = MakeVar("pa_r");
  if (ColumnPackedA()) {
    // Every row of the block (rows past M, in the last block, are neither packed nor read).
    return ir::MakeFor("pa_k", MakeInt(0), KExtent(), ForKind::kSerial,
                       operands_.pack_a_column(b_, KBegin() + k_local, i_begin, plan_.row_block,
                                               false, kAPack, k_local * MakeInt(plan_.row_block)));
  }
  auto copy_rows = [&](int64_t rows, const Expr& first_row, const Expr& base) {
    Stmt store = ir::MakeStore(kAPack, base + k_local * MakeInt(rows) + r,
                               ALoad(first_row + r, KBegin() + k_local));
    return ir::MakeFor("pa_k", MakeInt(0), KExtent(), ForKind::kSerial,
                       ir::MakeFor("pa_r", MakeInt(0), MakeInt(rows), ForKind::kUnrolled, store));
  };
  std::vector<Stmt> stmts = {LoopOrSkip(
      "pa_it", MakeInt(0), row_tiles, ForKind::kSerial,
      copy_rows(plan_.mr, i_begin + it * MakeInt(plan_.mr), it * MakeInt(plan_.mr * plan_.kc)))};
  if (plan_.row_tail > 0) {
    stmts.push_back(When(plan_.m_blocks == 1, Eq(mb_, MakeInt(plan_.m_blocks - 1)),
                         copy_rows(plan_.row_tail, i_begin + row_tiles * MakeInt(plan_.mr),
                                   row_tiles * MakeInt(plan_.mr * plan_.kc))));
  }
  return ir::MakeBlock(stmts);
}

Stmt BlockedLowering::KBlockBody(const Expr& i_begin, const Expr& row_tiles, const Expr& j_begin,
                                 const Expr& col_tiles) const {
  const Expr it = MakeVar("it"), jt = MakeVar("jt");
  const Expr tail_i0 = i_begin + row_tiles * MakeInt(plan_.mr);
  const bool last_m_always = plan_.m_blocks == 1, last_n_always = plan_.n_blocks == 1;
  const Expr last_m = Eq(mb_, MakeInt(plan_.m_blocks - 1));
  const Expr last_n = Eq(nb_, MakeInt(plan_.n_blocks - 1));
  // The tiles of one column panel starting at j0: full row tiles, then the row tail.
  auto column = [&](const std::string& tag, int64_t vecs, const Expr& j0, int64_t b_width,
                    bool masked) {
    TileSpec full{tag,    plan_.mr, vecs,   i_begin + it * MakeInt(plan_.mr), j0, nullptr, b_width,
                  masked, kBPack,   nullptr};
    if (plan_.prepacked_b) {
      // This column tile's panel of the current K block in the pre-packed B (PrepackB).
      full.b_buffer = InputName(1);
      full.b_base = ko_ * MakeInt(plan_.kc * PaddedN()) +
                    (j0 / MakeInt(plan_.tc)) * KExtent() * MakeInt(plan_.tc);
      if (operands_.prepacked_b_per_batch) {
        full.b_base = b_ * MakeInt(plan_.p.k * PaddedN()) + full.b_base;
      }
    }
    if (ColumnPackedA()) {
      full.a_pack_base = it * MakeInt(plan_.mr);
      full.a_pack_stride = plan_.row_block;
    } else if (plan_.pack_a) {
      full.a_pack_base = it * MakeInt(plan_.mr * plan_.kc);
    }
    std::vector<Stmt> stmts = {
        LoopOrSkip("it", MakeInt(0), row_tiles, ForKind::kSerial, Tile(full))};
    if (plan_.row_tail > 0) {
      TileSpec tail{tag + "t", plan_.row_tail, vecs,   tail_i0, j0,
                    nullptr,   b_width,        masked, kBPack,  nullptr};
      tail.b_buffer = full.b_buffer;
      tail.b_base = full.b_base;
      if (ColumnPackedA()) {
        tail.a_pack_base = row_tiles * MakeInt(plan_.mr);
        tail.a_pack_stride = plan_.row_block;
      } else if (plan_.pack_a) {
        tail.a_pack_base = row_tiles * MakeInt(plan_.mr * plan_.kc);
      }
      stmts.push_back(When(last_m_always, last_m, Tile(tail)));
    }
    return ir::MakeBlock(stmts);
  };
  const Expr j0 = j_begin + jt * MakeInt(plan_.tc);
  Stmt panel = column("m", plan_.nr, j0, plan_.pack_b || plan_.prepacked_b ? plan_.tc : 0, false);
  if (plan_.pack_b) panel = ir::MakeBlock({PackBPanel(j0, plan_.tc, false), panel});
  std::vector<Stmt> stmts = {LoopOrSkip("jt", MakeInt(0), col_tiles, ForKind::kSerial, panel)};
  if (plan_.col_tail > 0) {
    // The N tail always goes through a zero-padded packed panel; stores are masked.
    const Expr tail_j0 = MakeInt(plan_.p.n - plan_.col_tail);
    const int64_t width = plan_.col_tail_vecs * plan_.vw;
    if (plan_.prepacked_b) {
      // Pre-packed: the tail tile's panel is already zero-padded to tc columns.
      stmts.push_back(
          When(last_n_always, last_n, column("n", plan_.col_tail_vecs, tail_j0, plan_.tc, true)));
      return WithAStaged(i_begin, row_tiles, std::move(stmts));
    }
    stmts.push_back(When(last_n_always, last_n,
                         ir::MakeBlock({PackBPanel(tail_j0, width, width > plan_.col_tail),
                                        column("n", plan_.col_tail_vecs, tail_j0, width, true)})));
  }
  return WithAStaged(i_begin, row_tiles, std::move(stmts));
}

Stmt BlockedLowering::WithAStaged(const Expr& i_begin, const Expr& row_tiles,
                                  std::vector<Stmt> stmts) const {
  if (plan_.pack_a) stmts.insert(stmts.begin(), PackABlock(i_begin, row_tiles));
  if (plan_.staged_a && !operands_.batch_in_task) {
    stmts.insert(stmts.begin(), operands_.staged_a->fill(b_, KBegin(), KExtent(), i_begin, kAPack));
  }
  return ir::MakeBlock(stmts);
}

Stmt BlockedLowering::TaskBody() const {
  const ir::MatMulParams& p = plan_.p;
  const Expr i_begin = mb_ * MakeInt(plan_.row_block);
  const Expr j_begin = nb_ * MakeInt(plan_.col_block);
  // Full tiles of this block: all of them for inner blocks, those left before the tail for
  // the last one.
  const Expr row_tiles = plan_.m_blocks == 1
                             ? MakeInt(p.m / plan_.mr)
                             : ir::Min(MakeInt(plan_.row_block / plan_.mr),
                                       (MakeInt(p.m) - i_begin) / MakeInt(plan_.mr));
  const Expr col_tiles = plan_.n_blocks == 1
                             ? MakeInt(p.n / plan_.tc)
                             : ir::Min(MakeInt(plan_.col_block / plan_.tc),
                                       (MakeInt(p.n) - j_begin) / MakeInt(plan_.tc));
  Stmt body = KBlockBody(i_begin, row_tiles, j_begin, col_tiles);
  if (operands_.batch_in_task) {
    // Every batch entry of the K block, after the block's staging (GemmOperands::BatchInTask).
    body = ir::MakeFor("b", MakeInt(0), MakeInt(p.batch), ForKind::kSerial, body);
    if (plan_.staged_a) {
      body = ir::MakeBlock(
          {operands_.staged_a->fill(MakeInt(0), KBegin(), KExtent(), i_begin, kAPack), body});
    }
  }
  if (plan_.k_blocks > 1) {
    body = ir::MakeFor("ko", MakeInt(0), MakeInt(plan_.k_blocks), ForKind::kSerial, body);
  }
  if (LocalPartials()) {
    body = ir::MakeAllocate(kPartials, plan_.row_block * PartialStride(), body);
  }
  const int64_t panel_width = std::max(plan_.tc, plan_.col_tail_vecs * plan_.vw);
  if (plan_.pack_b || (plan_.col_tail > 0 && !plan_.prepacked_b)) {
    body = ir::MakeAllocate(kBPack, plan_.kc * panel_width, body);
  }
  if (plan_.pack_a) {
    const int64_t rows = (plan_.row_block + plan_.mr - 1) / plan_.mr * plan_.mr;
    body = ir::MakeAllocate(kAPack, rows * plan_.kc, body);
  } else if (plan_.staged_a) {
    body = ir::MakeAllocate(kAPack, operands_.staged_a->floats, body);
  }
  return body;
}

Stmt BlockedLowering::Build() const {
  const int64_t per_batch = plan_.m_blocks * plan_.n_blocks;
  const Expr task = MakeVar("task");
  if (operands_.batch_in_task) {
    const GemmOperands::BatchInTask& in_task = *operands_.batch_in_task;
    const Stmt body = ir::MakeAllocate(
        in_task.buffer, plan_.p.batch * plan_.row_block * plan_.col_block,
        ir::MakeBlock({TaskBody(), in_task.finish(mb_ * MakeInt(plan_.row_block),
                                                  nb_ * MakeInt(plan_.col_block))}));
    return ir::MakeFor("task", MakeInt(0), MakeInt(per_batch),
                       plan_.parallel ? ForKind::kParallel : ForKind::kSerial,
                       ir::MakeLet("nb", task / MakeInt(plan_.m_blocks),
                                   ir::MakeLet("mb", task % MakeInt(plan_.m_blocks), body)));
  }
  Stmt body =
      ir::MakeLet("b", task / MakeInt(per_batch),
                  ir::MakeLet("nb", (task / MakeInt(plan_.m_blocks)) % MakeInt(plan_.n_blocks),
                              ir::MakeLet("mb", task % MakeInt(plan_.m_blocks), TaskBody())));
  return ir::MakeFor("task", MakeInt(0), MakeInt(plan_.p.batch * per_batch),
                     plan_.parallel ? ForKind::kParallel : ForKind::kSerial, body);
}

}  // namespace

GemmOperands MatMulOperands(const ir::MatMulParams& p) {
  GemmOperands operands;
  operands.a = [p](const Expr& b, const Expr& row, const Expr& k) {
    const Expr base = p.a_batched ? b * MakeInt(p.m * p.k) : MakeInt(0);
    const Expr offset = p.trans_a ? k * MakeInt(p.m) + row : row * MakeInt(p.k) + k;
    return ir::MakeLoad(InputName(0), base + offset);
  };
  operands.b = [p](const Expr& b, const Expr& k, const Expr& col) {
    const Expr base = p.b_batched ? b * MakeInt(p.k * p.n) : MakeInt(0);
    const Expr offset = p.trans_b ? col * MakeInt(p.k) + k : k * MakeInt(p.n) + col;
    return ir::MakeLoad(InputName(1), base + offset);
  };
  return operands;
}

Stmt LowerBlockedPlan(const BlockedPlan& plan, const EpilogueBuilder& epilogue) {
  return LowerBlockedPlan(plan, epilogue, MatMulOperands(plan.p));
}

Stmt LowerBlockedPlan(const BlockedPlan& plan, const EpilogueBuilder& epilogue,
                      const GemmOperands& operands) {
  return BlockedLowering(plan, epilogue, operands).Build();
}

}  // namespace gtco::kernels::internal
