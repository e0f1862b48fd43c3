// Loop nest of the low-precision matmul sketches. Per task (batch, N block[, M block]): pack
// the B panel into 32-bit words ([column tile][k_group][tile_cols]: each tile's words are
// contiguous; zero-padded in K and N), with the column sums integer corrections need, then for
// each row tile of mr rows sweep the panel's column tiles with an accumulator tile of mr x nr
// vectors (16 lanes; 8 for the AVX2 fallback): each K group broadcasts one A word per row (a
// 32-bit load of 2 bf16 / 4 int8 values) and issues one dot-product per (row, vector).
// Write-back applies the integer corrections, then the epilogue / bf16 rounding.
// With AMX (plan.amx) a row tile is mr A tiles of 16 rows read in place from A, a block is nr
// packed column tiles of 16, and one TileMatMul statement computes the block into a scratch
// tile that the same write-back reads.
#include "common/kernels/cpu/matmul_lowp/matmul_lowp_lowering.h"

#include <algorithm>
#include <functional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/kernels/family.h"
#include "common/schedule/epilogue.h"
#include "common/schedule/lower_util.h"
#include "common/util/status.h"

namespace gtco::kernels::internal {
namespace {

using ir::Expr;
using ir::ExprKind;
using ir::ForKind;
using ir::MakeInt;
using ir::MakeVar;
using ir::ScalarType;
using ir::Stmt;

constexpr char kPanel[] = "bpack";
constexpr char kColSum[] = "colsum";
constexpr char kRowSum[] = "rowsum";
constexpr char kZaEff[] = "za_eff";   ///< the effective zero point of A, when read at run time
constexpr char kScratchC[] = "cacc";  ///< K-blocked AMX: the task's partial sums
constexpr int32_t kFlipBytes = static_cast<int32_t>(0x80808080u);

Expr I32(int64_t value) {
  return ir::MakeTypedInt(static_cast<int32_t>(static_cast<uint32_t>(value)), ScalarType::kI32);
}
Expr Lt(const Expr& a, const Expr& b) { return ir::MakeBinary(ExprKind::kLt, a, b); }

ScalarType StorageType(ir::DType dtype) {
  switch (dtype) {
    case ir::DType::kBF16:
      return ScalarType::kBF16;
    case ir::DType::kI8:
      return ScalarType::kI8;
    case ir::DType::kU8:
      return ScalarType::kU8;
    case ir::DType::kI32:
      return ScalarType::kI32;
    default:
      return ScalarType::kF32;
  }
}

class LowpLowering {
 public:
  LowpLowering(const ir::Workload& w, const LowpPlan& plan, const EpilogueBuilder& epilogue)
      : w_(w), plan_(plan), p_(plan.p), epilogue_(epilogue) {}

  Stmt Build() const;

 private:
  ScalarType AccType() const { return plan_.bf16 ? ScalarType::kF32 : ScalarType::kI32; }
  /// Whether i8 A is read as u8 A + 128 / u8 B packed as s8 B - 128 (not with AMX).
  bool ShiftsA() const { return plan_.a_signed && !plan_.amx; }
  bool ShiftsB() const { return plan_.b_unsigned && !plan_.amx; }
  /// Whether write-back subtracts za_eff * colsum(B') (so packing sums B's columns).
  bool NeedsColSums() const { return !plan_.bf16 && (plan_.za_input || plan_.za_eff != 0); }
  /// za_eff: the constant, or the task's variable holding it (read from anchor input 2).
  Expr ZaEff() const {
    return plan_.za_input ? MakeVar(kZaEff, ScalarType::kI32) : I32(plan_.za_eff);
  }
  Expr AElement(const Expr& b, const Expr& row, int64_t k) const;
  Expr AWord(const Expr& b, const Expr& row, const Expr& group, bool full) const;
  Expr BElement(const Expr& b, int64_t k_offset, const Expr& group, const Expr& col) const;
  /// Word index in the packed panel of K group `group` at column `tile_col` + `within` of the
  /// panel (`tile_col` a multiple of tile_cols, 0 <= within < tile_cols).
  Expr PanelIndex(const Expr& tile_col, const Expr& group, const Expr& within) const {
    return tile_col * MakeInt(plan_.k_groups) + group * MakeInt(plan_.tile_cols) + within;
  }
  Stmt PackPanel(const Expr& b, const Expr& col0) const;
  /// The column sums of the panel at col0 read from the pre-packed B (pack_b = 2).
  Stmt PrepackedColSums(const Expr& col0) const;
  Stmt RowSums(const Expr& b, const Expr& i0) const;
  Stmt Tile(const Expr& b, const Expr& i0, const Expr& col0, const Expr& panel_col) const;
  Stmt TileLoops(const std::function<Stmt(const Expr&, const Expr&, const Expr&)>& make) const;
  Stmt KUpdate(const Expr& b, const Expr& i0, const Expr& col0, const Expr& panel_col,
               const Expr& group, bool full) const;
  Stmt WriteBack(const Expr& b, const Expr& i0, const Expr& col0, const Expr& panel_col) const;
  /// The statement of one register / tile block: (first row, first column in the panel).
  using TileMaker = std::function<Stmt(const Expr&, const Expr&)>;
  /// The row tiles of M block `mb` by the panel's `col_tiles` column blocks, each made by
  /// `tile` (with the integer row sums first where `row_sums` and the plan needs them).
  Stmt RowTiles(const Expr& b, const Expr& mb, const Expr& col0, const Expr& col_tiles,
                const TileMaker& tile, bool row_sums) const;
  /// The integer corrections and the epilogue / output rounding of accumulator `acc` at
  /// (row, col); `in_panel` is col's index in the panel, `sum_slot` row's in the row sums.
  Expr Finish(const Expr& b, Expr value, const Expr& row, const Expr& col, const Expr& in_panel,
              const Expr& sum_slot) const;
  /// First row of A tile `t` of the row tile at `i0` (AMX).
  Expr AmxRow(const Expr& i0, int64_t t) const;
  /// The TileMatMul of one block over K block `kb` (the whole K without K blocks) into the
  /// accumulators at `c` (accumulating onto them unless it is the first K block).
  Stmt AmxProduct(const Expr& b, const Expr& i0, const Expr& col0, const Expr& panel_col,
                  const Expr& kb, bool accumulate, const Expr& c,
                  const ir::Expr& prefetch = nullptr, int64_t prefetch_bytes = 0) const;
  /// Element index in the pre-packed B of column `col` (a multiple of 16), K group `g0`.
  Expr PrepackedB(const Expr& col, const Expr& g0) const {
    return col * MakeInt(plan_.k_groups * plan_.group) + g0 * MakeInt(kLowpLanes * plan_.group);
  }
  /// With plan.prefetch, the address (and bytes per column tile) of row tile `tile_index`'s
  /// share, among `row_tiles`, of the `groups` K groups from `g0` of the column block at `col`;
  /// {nullptr, 0} without.
  std::pair<Expr, int64_t> PrefetchShare(const Expr& col, const Expr& g0, const Expr& tile_index,
                                         int64_t row_tiles, int64_t groups) const;
  /// The block's accumulators (buffer `acc` from `acc_base`, rows of block_cols) through the
  /// corrections and epilogue into the output.
  Stmt AmxWriteBack(const Expr& b, const Expr& i0, const Expr& col0, const Expr& panel_col,
                    const std::string& acc, const Expr& acc_base) const;
  Stmt AmxTile(const Expr& b, const Expr& i0, const Expr& col0, const Expr& panel_col) const;
  /// A task's row tiles by column blocks once per K block (plan.k_blocks > 1), partial sums in
  /// a scratch C.
  Stmt AmxKBlocks(const Expr& b, const Expr& col0, const Expr& col_tiles, bool per_m_block) const;

  const ir::Workload& w_;
  const LowpPlan& plan_;
  const ir::MatMulParams& p_;
  const EpilogueBuilder& epilogue_;
};

Expr LowpLowering::AElement(const Expr& b, const Expr& row, int64_t k) const {
  const Expr base = p_.a_batched ? b * MakeInt(p_.m * p_.k) : MakeInt(0);
  return ir::MakeTypedLoad(InputName(0), base + row * MakeInt(p_.k) + MakeInt(k),
                           StorageType(w_.inputs[0].dtype));
}

Expr LowpLowering::AWord(const Expr& b, const Expr& row, const Expr& group, bool full) const {
  Expr word;
  if (full) {
    const Expr base = p_.a_batched ? b * MakeInt(p_.m * p_.k) : MakeInt(0);
    word = ir::MakeTypedLoad(
        InputName(0), base + row * MakeInt(p_.k) + group * MakeInt(plan_.group), ScalarType::kI32);
  } else {  // the last, partial group: real elements then zeros
    const int64_t k0 = plan_.full_groups * plan_.group;
    std::vector<Expr> parts;
    for (int64_t q = 0; q < plan_.group; ++q) {
      const bool real = k0 + q < p_.k;
      if (plan_.bf16) {
        parts.push_back(real ? ir::MakeCast(ScalarType::kF32, AElement(b, row, k0 + q))
                             : ir::MakeFloat(0.0));
      } else {
        parts.push_back(real ? ir::MakeCast(ScalarType::kI32, AElement(b, row, k0 + q)) : I32(0));
      }
    }
    word = ir::MakeTypedCall(plan_.bf16 ? "pack_bf16x2" : "pack_i8x4", ScalarType::kI32, parts);
  }
  // i8 A becomes u8 A + 128 by flipping each byte's sign bit.
  if (ShiftsA()) word = ir::MakeTypedCall("bitxor", ScalarType::kI32, {word, I32(kFlipBytes)});
  return word;
}

Expr LowpLowering::BElement(const Expr& b, int64_t k_offset, const Expr& group,
                            const Expr& col) const {
  const Expr base = p_.b_batched ? b * MakeInt(p_.k * p_.n) : MakeInt(0);
  const Expr k = group * MakeInt(plan_.group) + MakeInt(k_offset);
  const Expr offset = p_.trans_b ? col * MakeInt(p_.k) + k : k * MakeInt(p_.n) + col;
  return ir::MakeTypedLoad(InputName(1), base + offset, StorageType(w_.inputs[1].dtype));
}

Stmt LowpLowering::PackPanel(const Expr& b, const Expr& col0) const {
  const Expr g = MakeVar("pg"), j = MakeVar("pj") * MakeInt(plan_.lanes) + MakeVar("pv");
  const int64_t vectors_per_tile = plan_.tile_cols / plan_.lanes;
  const Expr word_index =
      PanelIndex(MakeVar("pj") / MakeInt(vectors_per_tile) * MakeInt(plan_.tile_cols), g,
                 MakeVar("pj") % MakeInt(vectors_per_tile) * MakeInt(plan_.lanes) + MakeVar("pv"));
  const bool sums = NeedsColSums();
  auto pack_group = [&](bool full) {
    std::vector<Expr> parts;
    Expr sum = I32(0);
    for (int64_t q = 0; q < plan_.group; ++q) {
      const bool real = full || plan_.full_groups * plan_.group + q < p_.k;
      if (plan_.bf16) {
        parts.push_back(real ? ir::MakeCast(ScalarType::kF32, BElement(b, q, g, col0 + j))
                             : ir::MakeFloat(0.0));
        continue;
      }
      Expr value = real ? ir::MakeCast(ScalarType::kI32, BElement(b, q, g, col0 + j)) : I32(0);
      if (real && ShiftsB()) value = value - I32(128);  // u8 B becomes s8 B - 128
      parts.push_back(value);
      if (real) sum = sum + value;
    }
    const Expr word =
        ir::MakeTypedCall(plan_.bf16 ? "pack_bf16x2" : "pack_i8x4", ScalarType::kI32, parts);
    Stmt store = ir::MakeStore(kPanel, word_index, word);
    if (sums) {
      store = ir::MakeBlock(
          {store,
           ir::MakeStore(kColSum, j, ir::MakeTypedLoad(kColSum, j, ScalarType::kI32) + sum)});
    }
    if (!plan_.pad_cols) return store;
    return ir::MakeIf(Lt(col0 + j, MakeInt(p_.n)), store,
                      ir::MakeStore(kPanel, word_index, I32(0)));
  };
  auto over_columns = [&](Stmt body) {
    body = ir::MakeFor("pv", MakeInt(0), MakeInt(plan_.lanes), ForKind::kVectorized, body);
    return ir::MakeFor("pj", MakeInt(0), MakeInt(plan_.panel_cols / plan_.lanes), ForKind::kSerial,
                       body);
  };
  std::vector<Stmt> steps;
  if (sums) {
    steps.push_back(ir::MakeFor("cz", MakeInt(0), MakeInt(plan_.panel_cols), ForKind::kSerial,
                                ir::MakeStore(kColSum, MakeVar("cz"), I32(0))));
  }
  steps.push_back(LoopOrSkip("pg", MakeInt(0), MakeInt(plan_.full_groups), ForKind::kSerial,
                             over_columns(pack_group(true))));
  if (plan_.k_tail) {
    steps.push_back(ir::MakeLet("pg", MakeInt(plan_.full_groups), over_columns(pack_group(false))));
  }
  return ir::MakeBlock(steps);
}

Stmt LowpLowering::PrepackedColSums(const Expr& col0) const {
  // The column sums the zero point of A needs, from the pre-packed B: each 32-bit word's four
  // bytes summed by one dot product with ones (u8 ones against s8 B; u8 B against s8 ones).
  if (!NeedsColSums()) return ir::MakeBlock({});
  const Expr j = MakeVar("pj") * MakeInt(kLowpLanes) + MakeVar("pv");
  const Expr word =
      ir::MakeTypedLoad(InputName(1),
                        ((col0 + MakeVar("pj") * MakeInt(kLowpLanes)) * MakeInt(plan_.k_groups) +
                         MakeVar("pg") * MakeInt(kLowpLanes) + MakeVar("pv")) *
                            MakeInt(plan_.group),
                        ScalarType::kI32);
  const Expr ones = I32(0x01010101);
  const Expr sum = ir::MakeTypedLoad(kColSum, j, ScalarType::kI32);
  const Expr dot = plan_.b_unsigned
                       ? ir::MakeTypedCall("dot_u8s8x4", ScalarType::kI32, {sum, word, ones})
                       : ir::MakeTypedCall("dot_u8s8x4", ScalarType::kI32, {sum, ones, word});
  auto over_columns = [&](Stmt body) {
    return ir::MakeFor(
        "pj", MakeInt(0), MakeInt(plan_.panel_cols / kLowpLanes), ForKind::kSerial,
        ir::MakeFor("pv", MakeInt(0), MakeInt(kLowpLanes), ForKind::kVectorized, body));
  };
  return ir::MakeBlock({over_columns(ir::MakeStore(kColSum, j, I32(0))),
                        ir::MakeFor("pg", MakeInt(0), MakeInt(plan_.k_groups), ForKind::kSerial,
                                    over_columns(ir::MakeStore(kColSum, j, dot)))});
}

Stmt LowpLowering::RowSums(const Expr& b, const Expr& i0) const {
  // rowsum[r] = sum_k A'[row, k] over the real K elements (A' = A + 128 for i8 A).
  const Expr r = MakeVar("sr"), k = MakeVar("sk");
  if (plan_.amx) {
    // Each row of each A tile: 16 lanes of VNNI dot products with ones over the row's 32-bit
    // words (K is a multiple of 64 bytes), then the 16 partial sums added.
    std::vector<Stmt> tiles;
    const Expr base = p_.a_batched ? b * MakeInt(p_.m * p_.k) : MakeInt(0);
    const Expr v = MakeVar("sv"), ones = I32(0x01010101);
    for (int64_t t = 0; t < plan_.mr; ++t) {
      const Expr slot = MakeInt(t * kAmxTileRows) + r;
      const Expr word = ir::MakeTypedLoad(
          InputName(0),
          base + (AmxRow(i0, t) + r) * MakeInt(p_.k) + (k * MakeInt(kLowpLanes) + v) * MakeInt(4),
          ScalarType::kI32);
      const Expr partial = ir::MakeTypedLoad("rowpart", v, ScalarType::kI32);
      const Expr dot =
          plan_.a_signed ? ir::MakeTypedCall("dot_u8s8x4", ScalarType::kI32, {partial, ones, word})
                         : ir::MakeTypedCall("dot_u8s8x4", ScalarType::kI32, {partial, word, ones});
      Expr total = I32(0);
      for (int64_t lane = 0; lane < kLowpLanes; ++lane) {
        total = total + ir::MakeTypedLoad("rowpart", MakeInt(lane), ScalarType::kI32);
      }
      Stmt row = ir::MakeBlock(
          {ir::MakeFor("sv", MakeInt(0), MakeInt(kLowpLanes), ForKind::kVectorized,
                       ir::MakeStore("rowpart", v, I32(0))),
           ir::MakeFor("sk", MakeInt(0), MakeInt(p_.k / (4 * kLowpLanes)), ForKind::kSerial,
                       ir::MakeFor("sv", MakeInt(0), MakeInt(kLowpLanes), ForKind::kVectorized,
                                   ir::MakeStore("rowpart", v, dot))),
           ir::MakeStore(kRowSum, slot, total)});
      tiles.push_back(
          ir::MakeFor("sr", MakeInt(0), MakeInt(kAmxTileRows), ForKind::kSerial,
                      ir::MakeTypedAllocate("rowpart", kLowpLanes, ScalarType::kI32, row)));
    }
    return ir::MakeBlock(tiles);
  }
  const Expr row = plan_.clamp_rows ? Min(i0 + r, MakeInt(p_.m - 1)) : i0 + r;
  const Expr base = p_.a_batched ? b * MakeInt(p_.m * p_.k) : MakeInt(0);
  Expr value =
      ir::MakeCast(ScalarType::kI32, ir::MakeTypedLoad(InputName(0), base + row * MakeInt(p_.k) + k,
                                                       StorageType(w_.inputs[0].dtype)));
  if (ShiftsA()) value = value + I32(128);
  Stmt zero = ir::MakeFor("sr", MakeInt(0), MakeInt(plan_.mr), ForKind::kUnrolled,
                          ir::MakeStore(kRowSum, r, I32(0)));
  Stmt add = ir::MakeFor(
      "sk", MakeInt(0), MakeInt(p_.k), ForKind::kSerial,
      ir::MakeFor(
          "sr", MakeInt(0), MakeInt(plan_.mr), ForKind::kUnrolled,
          ir::MakeStore(kRowSum, r, ir::MakeTypedLoad(kRowSum, r, ScalarType::kI32) + value)));
  return ir::MakeBlock({zero, add});
}

Stmt LowpLowering::TileLoops(
    const std::function<Stmt(const Expr&, const Expr&, const Expr&)>& make) const {
  const Expr r = plan_.mr > 1 ? MakeVar("tr") : MakeInt(0);
  const Expr c = plan_.nr > 1 ? MakeVar("tc") : MakeInt(0);
  Stmt body = ir::MakeFor("tv", MakeInt(0), MakeInt(plan_.lanes), ForKind::kVectorized,
                          make(r, c, MakeVar("tv")));
  if (plan_.nr > 1)
    body = ir::MakeFor("tc", MakeInt(0), MakeInt(plan_.nr), ForKind::kUnrolled, body);
  if (plan_.mr > 1)
    body = ir::MakeFor("tr", MakeInt(0), MakeInt(plan_.mr), ForKind::kUnrolled, body);
  return body;
}

Stmt LowpLowering::KUpdate(const Expr& b, const Expr& i0, const Expr& col0, const Expr& panel_col,
                           const Expr& group, bool full) const {
  return TileLoops([&](const Expr& r, const Expr& c, const Expr& v) {
    const Expr slot = (r * MakeInt(plan_.nr) + c) * MakeInt(plan_.lanes) + v;
    const Expr row = plan_.clamp_rows ? Min(i0 + r, MakeInt(p_.m - 1)) : i0 + r;
    // B's word: from the task's packed panel, or from the pre-packed B (16-column tiles, each
    // tile's words contiguous per K group), the word index in B's elements.
    const Expr b_word =
        plan_.prepacked_b
            ? ir::MakeTypedLoad(InputName(1),
                                PrepackedB(col0 + panel_col + c * MakeInt(kLowpLanes), group) +
                                    v * MakeInt(plan_.group),
                                ScalarType::kI32)
            : ir::MakeTypedLoad(kPanel, PanelIndex(panel_col, group, c * MakeInt(plan_.lanes) + v),
                                ScalarType::kI32);
    const Expr acc = ir::MakeTypedLoad("acc", slot, AccType());
    const char* dot_name = plan_.bf16       ? "dot_bf16x2"
                           : plan_.wide_dot ? "dot_u8s8x4_wide"
                                            : "dot_u8s8x4";
    const Expr dot =
        ir::MakeTypedCall(dot_name, AccType(), {acc, AWord(b, row, group, full), b_word});
    return ir::MakeStore("acc", slot, dot);
  });
}

Stmt LowpLowering::WriteBack(const Expr& b, const Expr& i0, const Expr& col0,
                             const Expr& panel_col) const {
  return TileLoops([&](const Expr& r, const Expr& c, const Expr& v) {
    const Expr slot = (r * MakeInt(plan_.nr) + c) * MakeInt(plan_.lanes) + v;
    const Expr in_panel = panel_col + c * MakeInt(plan_.lanes) + v;
    const Expr row = i0 + r, col = col0 + in_panel;
    const Expr value = Finish(b, ir::MakeTypedLoad("acc", slot, AccType()), row, col, in_panel, r);
    Stmt store = ir::MakeStore(kOutputName, (b * MakeInt(p_.m) + row) * MakeInt(p_.n) + col, value);
    Expr guard;
    if (plan_.clamp_rows) guard = Lt(row, MakeInt(p_.m));
    if (plan_.pad_cols) {
      const Expr col_ok = Lt(col, MakeInt(p_.n));
      guard = guard ? ir::MakeBinary(ExprKind::kAnd, guard, col_ok) : col_ok;
    }
    return guard ? ir::MakeIf(guard, store) : store;
  });
}

Expr LowpLowering::Finish(const Expr& b, Expr value, const Expr& row, const Expr& col,
                          const Expr& in_panel, const Expr& sum_slot) const {
  if (!plan_.bf16) {
    if (NeedsColSums()) {
      value = value - ZaEff() * ir::MakeTypedLoad(kColSum, in_panel, ScalarType::kI32);
    }
    if (plan_.zb_eff != 0) {
      value = value - I32(plan_.zb_eff) * ir::MakeTypedLoad(kRowSum, sum_slot, ScalarType::kI32);
    }
    if (plan_.za_input && plan_.zb_eff != 0) {
      value = value + I32(p_.k * plan_.zb_eff) * ZaEff();
    } else if (const int64_t constant = p_.k * plan_.za_eff * plan_.zb_eff; constant != 0) {
      value = value + I32(constant);
    }
    if (plan_.out_dtype == ir::DType::kF32) {  // the i32 result converted, then the epilogue
      value = epilogue_.Apply(ir::MakeCast(ScalarType::kF32, value), b * MakeInt(p_.m) + row, col);
    }
  } else if (plan_.out_dtype == ir::DType::kBF16) {
    value = ir::MakeCast(ScalarType::kBF16, value);
  } else {
    value = epilogue_.Apply(value, b * MakeInt(p_.m) + row, col);
  }
  return value;
}

Expr LowpLowering::AmxRow(const Expr& i0, int64_t t) const {
  const Expr row = i0 + MakeInt(t * kAmxTileRows);
  return plan_.clamp_rows ? Min(row, MakeInt(p_.m - kAmxTileRows)) : row;
}

std::pair<Expr, int64_t> LowpLowering::PrefetchShare(const Expr& col, const Expr& g0,
                                                     const Expr& tile_index, int64_t row_tiles,
                                                     int64_t groups) const {
  if (!plan_.prefetch) return {nullptr, 0};
  const int64_t elem_bytes = ir::ScalarTypeBytes(StorageType(w_.inputs[1].dtype));
  const int64_t share = CeilDiv(CeilDiv(groups * 4 * kLowpLanes, row_tiles), 64) * 64;
  // Clamped into B (the last panel's next one is past its end).
  const int64_t last = PrepackedRows(plan_) * PrepackedColumns(plan_) - 1;
  const Expr index =
      Min(PrepackedB(col, g0) + tile_index * MakeInt(share / elem_bytes), MakeInt(last));
  return {ir::MakeTypedLoad(InputName(1), index, StorageType(w_.inputs[1].dtype)), share};
}

Stmt LowpLowering::AmxProduct(const Expr& b, const Expr& i0, const Expr& col0,
                              const Expr& panel_col, const Expr& kb, bool accumulate, const Expr& c,
                              const Expr& prefetch, int64_t prefetch_bytes) const {
  const ScalarType a_type = StorageType(w_.inputs[0].dtype);
  const Expr a_base = p_.a_batched ? b * MakeInt(p_.m * p_.k) : MakeInt(0);
  // The K block's first group and element (0 without K blocks).
  const Expr g0 = kb * MakeInt(plan_.k_block_groups);
  const Expr k0 = g0 * MakeInt(plan_.group);
  ir::TileMatMulArgs args;
  args.instruction = AmxInstruction(plan_);
  args.c = c;
  args.b = plan_.prepacked_b
               ? ir::MakeTypedLoad(InputName(1), PrepackedB(col0 + panel_col, g0),
                                   StorageType(w_.inputs[1].dtype))
               : ir::MakeTypedLoad(kPanel, PanelIndex(panel_col, g0, MakeInt(0)), ScalarType::kI32);
  for (int64_t t = 0; t < plan_.mr; ++t) {
    args.a.push_back(
        ir::MakeTypedLoad(InputName(0), a_base + AmxRow(i0, t) * MakeInt(p_.k) + k0, a_type));
  }
  args.k_steps = plan_.k_block_groups / kAmxTileRows;
  args.nr = plan_.nr;
  args.a_stride = p_.k * ir::ScalarTypeBytes(a_type);
  args.b_col_stride = plan_.tile_cols * plan_.k_groups * 4;
  args.accumulate = accumulate;
  args.prefetch = prefetch;
  args.prefetch_bytes = prefetch_bytes;
  return ir::MakeTileMatMul(args);
}

Stmt LowpLowering::AmxWriteBack(const Expr& b, const Expr& i0, const Expr& col0,
                                const Expr& panel_col, const std::string& acc,
                                const Expr& acc_base) const {
  // The block's rows (A tile t, row r) by its columns (B tile c, lane v).
  const Expr r = MakeVar("wr"), c = plan_.nr > 1 ? MakeVar("wc") : MakeInt(0), v = MakeVar("wv");
  std::vector<Stmt> rows;
  for (int64_t t = 0; t < plan_.mr; ++t) {
    const Expr slot_row = MakeInt(t * kAmxTileRows) + r;
    const Expr slot = acc_base + slot_row * MakeInt(plan_.block_cols) + c * MakeInt(kLowpLanes) + v;
    const Expr in_panel = panel_col + c * MakeInt(kLowpLanes) + v;
    const Expr row = AmxRow(i0, t) + r, col = col0 + in_panel;
    const Expr value =
        Finish(b, ir::MakeTypedLoad(acc, slot, AccType()), row, col, in_panel, slot_row);
    Stmt store = ir::MakeStore(kOutputName, (b * MakeInt(p_.m) + row) * MakeInt(p_.n) + col, value);
    if (plan_.pad_cols) store = ir::MakeIf(Lt(col, MakeInt(p_.n)), store);
    Stmt body = ir::MakeFor("wv", MakeInt(0), MakeInt(kLowpLanes), ForKind::kVectorized, store);
    if (plan_.nr > 1)
      body = ir::MakeFor("wc", MakeInt(0), MakeInt(plan_.nr), ForKind::kUnrolled, body);
    rows.push_back(ir::MakeFor("wr", MakeInt(0), MakeInt(kAmxTileRows), ForKind::kSerial, body));
  }
  return ir::MakeBlock(rows);
}

Stmt LowpLowering::AmxTile(const Expr& b, const Expr& i0, const Expr& col0,
                           const Expr& panel_col) const {
  // The next panel's share of this row tile.
  const int64_t rows = plan_.tile_rows;
  const auto [prefetch, prefetch_bytes] =
      PrefetchShare(col0 + MakeInt(plan_.panel_cols) + panel_col, MakeInt(0), i0 / MakeInt(rows),
                    CeilDiv(p_.m, rows), plan_.k_groups);
  const Stmt product =
      AmxProduct(b, i0, col0, panel_col, MakeInt(0), false,
                 ir::MakeTypedLoad("acc", MakeInt(0), AccType()), prefetch, prefetch_bytes);
  return ir::MakeTypedAllocate(
      "acc", plan_.tile_rows * plan_.block_cols, AccType(),
      ir::MakeBlock({product, AmxWriteBack(b, i0, col0, panel_col, "acc", MakeInt(0))}));
}

Stmt LowpLowering::AmxKBlocks(const Expr& b, const Expr& col0, const Expr& col_tiles,
                              bool per_m_block) const {
  // Each K block sweeps every (row tile, column block) of the task, so the task's A rows of one
  // K block stay in the L2 cache while the column blocks reuse them; each block's partial sums
  // wait in a scratch C of the task's whole rows x panel (the block's own rows x block_cols
  // contiguous) and the last K block writes the output through the epilogue.
  const int64_t rows = plan_.tile_rows;
  const int64_t block_elems = rows * plan_.block_cols;
  const int64_t panel_blocks = plan_.panel_cols / plan_.block_cols;
  const Expr mb = MakeVar("mb");
  const Expr row0 = per_m_block ? mb * MakeInt(plan_.row_block) : MakeInt(0);
  auto slot = [&](const Expr& i0, const Expr& panel_col) {
    return ((i0 - row0) / MakeInt(rows) * MakeInt(panel_blocks) +
            panel_col / MakeInt(plan_.block_cols)) *
           MakeInt(block_elems);
  };
  auto pass = [&](const Expr& kb, bool first, bool last) {
    auto tile = [&, kb, first, last](const Expr& i0, const Expr& panel_col) {
      const Expr base = slot(i0, panel_col);
      // This row tile's share of what the next pass reads: the next K block of the column
      // block, after the last one the next panel's first.
      const int64_t task_tiles = per_m_block ? plan_.row_block / rows : CeilDiv(p_.m, rows);
      const auto [prefetch, prefetch_bytes] =
          PrefetchShare(last ? col0 + MakeInt(plan_.panel_cols) + panel_col : col0 + panel_col,
                        last ? MakeInt(0) : (kb + MakeInt(1)) * MakeInt(plan_.k_block_groups),
                        (i0 - row0) / MakeInt(rows), task_tiles, plan_.k_block_groups);
      Stmt product =
          AmxProduct(b, i0, col0, panel_col, kb, !first,
                     ir::MakeTypedLoad(kScratchC, base, AccType()), prefetch, prefetch_bytes);
      if (!last) return product;
      return ir::MakeBlock({product, AmxWriteBack(b, i0, col0, panel_col, kScratchC, base)});
    };
    Stmt body = RowTiles(b, mb, col0, col_tiles, tile, /*row_sums=*/last);
    return per_m_block
               ? body
               : LoopOrSkip("mb", MakeInt(0), MakeInt(plan_.m_blocks), ForKind::kSerial, body);
  };
  std::vector<Stmt> passes = {pass(MakeInt(0), true, false)};
  if (plan_.k_blocks > 2) {
    passes.push_back(ir::MakeFor("kb", MakeInt(1), MakeInt(plan_.k_blocks - 2), ForKind::kSerial,
                                 pass(MakeVar("kb"), false, false)));
  }
  passes.push_back(pass(MakeInt(plan_.k_blocks - 1), false, true));
  return ir::MakeTypedAllocate(kScratchC, ScratchCElements(plan_), AccType(),
                               ir::MakeBlock(passes));
}

Stmt LowpLowering::Tile(const Expr& b, const Expr& i0, const Expr& col0,
                        const Expr& panel_col) const {
  Stmt zero = TileLoops([&](const Expr& r, const Expr& c, const Expr& v) {
    const Expr slot = (r * MakeInt(plan_.nr) + c) * MakeInt(plan_.lanes) + v;
    return ir::MakeStore("acc", slot, plan_.bf16 ? ir::MakeFloat(0.0) : I32(0));
  });
  const int64_t unroll = plan_.unroll_k;
  const int64_t main_steps = plan_.full_groups / unroll;
  const Expr kq = MakeVar("kq"), kk = MakeVar("kk");
  Stmt main_body =
      unroll > 1 ? ir::MakeFor("kk", MakeInt(0), MakeInt(unroll), ForKind::kUnrolled,
                               KUpdate(b, i0, col0, panel_col, kq * MakeInt(unroll) + kk, true))
                 : KUpdate(b, i0, col0, panel_col, kq, true);
  std::vector<Stmt> steps = {
      zero, LoopOrSkip("kq", MakeInt(0), MakeInt(main_steps), ForKind::kSerial, main_body),
      LoopOrSkip("kr", MakeInt(main_steps * unroll),
                 MakeInt(plan_.full_groups - main_steps * unroll), ForKind::kSerial,
                 KUpdate(b, i0, col0, panel_col, MakeVar("kr"), true))};
  if (plan_.k_tail) {
    steps.push_back(KUpdate(b, i0, col0, panel_col, MakeInt(plan_.full_groups), false));
  }
  steps.push_back(WriteBack(b, i0, col0, panel_col));
  return ir::MakeTypedAllocate("acc", plan_.mr * plan_.nr * plan_.lanes, AccType(),
                               ir::MakeBlock(steps));
}

Stmt LowpLowering::RowTiles(const Expr& b, const Expr& mb, const Expr& col0, const Expr& col_tiles,
                            const TileMaker& tile, bool row_sums) const {
  const Expr i_begin = mb * MakeInt(plan_.row_block);
  const int64_t rows = plan_.tile_rows;
  const Expr row_tiles = plan_.m_blocks == 1
                             ? MakeInt(CeilDiv(p_.m, rows))
                             : Min(MakeInt(plan_.row_block / rows),
                                   (MakeInt(p_.m + rows - 1) - i_begin) / MakeInt(rows));
  const Expr i0 = i_begin + MakeVar("it") * MakeInt(rows);
  const Expr panel_col = MakeVar("jt") * MakeInt(plan_.block_cols);
  Stmt tiles = LoopOrSkip("jt", MakeInt(0), col_tiles, ForKind::kSerial, tile(i0, panel_col));
  if (row_sums && !plan_.bf16 && plan_.zb_eff != 0) {
    tiles = ir::MakeTypedAllocate(kRowSum, rows, ScalarType::kI32,
                                  ir::MakeBlock({RowSums(b, i0), tiles}));
  }
  return LoopOrSkip("it", MakeInt(0), row_tiles, ForKind::kSerial, tiles);
}

Stmt LowpLowering::Build() const {
  // Tasks: (batch, N block) or, with par == 2, (batch, N block, M block).
  const bool per_m_block = plan_.par == 2;
  const int64_t m_tasks = per_m_block ? plan_.m_blocks : 1;
  const Expr task = MakeVar("task"), b = MakeVar("b"), nb = MakeVar("nb");
  const Expr col0 = nb * MakeInt(plan_.panel_cols);
  const int64_t block = plan_.block_cols, panel_tiles = plan_.panel_cols / block;
  // Column blocks with at least one real column (the last N block may be partial).
  const Expr col_tiles =
      plan_.n_blocks == 1
          ? MakeInt(std::min(panel_tiles, CeilDiv(p_.n, block)))
          : Min(MakeInt(panel_tiles), (MakeInt(p_.n + block - 1) - col0) / MakeInt(block));
  const TileMaker tile = [&](const Expr& i0, const Expr& panel_col) {
    return plan_.amx ? AmxTile(b, i0, col0, panel_col) : Tile(b, i0, col0, panel_col);
  };
  Stmt rows;
  if (plan_.k_blocks > 1) {
    rows = AmxKBlocks(b, col0, col_tiles, per_m_block);
  } else if (per_m_block) {
    rows = RowTiles(b, MakeVar("mb"), col0, col_tiles, tile, true);
  } else {
    rows = LoopOrSkip("mb", MakeInt(0), MakeInt(plan_.m_blocks), ForKind::kSerial,
                      RowTiles(b, MakeVar("mb"), col0, col_tiles, tile, true));
  }
  Stmt body =
      ir::MakeBlock({plan_.prepacked_b ? PrepackedColSums(col0) : PackPanel(b, col0), rows});
  if (NeedsColSums()) {
    body = ir::MakeTypedAllocate(kColSum, plan_.panel_cols, ScalarType::kI32, body);
  }
  if (plan_.za_input) {
    const Expr zero_point =
        ir::MakeCast(ScalarType::kI32,
                     ir::MakeTypedLoad(InputName(2), MakeInt(0), StorageType(w_.inputs[0].dtype)));
    body = ir::MakeLet(kZaEff, zero_point + I32(plan_.za_eff), body);
  }
  if (!plan_.prepacked_b) {
    body = ir::MakeTypedAllocate(kPanel, plan_.k_groups * plan_.panel_cols, ScalarType::kI32, body);
  }
  if (per_m_block) body = ir::MakeLet("mb", task % MakeInt(m_tasks), body);
  body = ir::MakeLet("nb", (task / MakeInt(m_tasks)) % MakeInt(plan_.n_blocks), body);
  body = ir::MakeLet("b", task / MakeInt(m_tasks * plan_.n_blocks), body);
  return ir::MakeFor("task", MakeInt(0), MakeInt(p_.batch * plan_.n_blocks * m_tasks),
                     plan_.par == 0 ? ForKind::kSerial : ForKind::kParallel, body);
}

}  // namespace

absl::Status CheckLowpWorkload(const ir::Workload& w) {
  const ir::MatMulParams& p = w.matmul;
  if (w.anchor != ir::AnchorKind::kMatMul || w.inputs.size() < 2) {
    return absl::InvalidArgumentError("not a matmul workload");
  }
  const ir::DType a = w.inputs[0].dtype, b = w.inputs[1].dtype, out = w.output.dtype;
  const auto is_int8 = [](ir::DType t) { return t == ir::DType::kU8 || t == ir::DType::kI8; };
  const bool bf16 = a == ir::DType::kBF16 && b == ir::DType::kBF16;
  const bool int8 = is_int8(a) && is_int8(b);
  if (!bf16 && !int8) {
    return absl::InvalidArgumentError(absl::StrCat("inputs are ", ir::DTypeName(a), " x ",
                                                   ir::DTypeName(b),
                                                   ", not bf16 x bf16 or u8|i8 x u8|i8"));
  }
  // Element types, zero points and epilogue as workload.h allows them.
  const bool out_ok = bf16 ? (out == ir::DType::kF32 || out == ir::DType::kBF16)
                           : (out == ir::DType::kI32 || out == ir::DType::kF32);
  if (!out_ok) {
    return absl::InvalidArgumentError(
        absl::StrCat("output dtype ", ir::DTypeName(out), " does not fit the inputs"));
  }
  if (!w.epilogue.empty() && out != ir::DType::kF32) {
    return absl::InvalidArgumentError("an epilogue needs an f32 output");
  }
  auto zero_point_ok = [](int32_t zero_point, ir::DType t) {
    return t == ir::DType::kU8 ? zero_point >= 0 && zero_point <= 255
                               : zero_point >= -128 && zero_point <= 127;
  };
  if (bf16 ? (p.a_zero_point != 0 || p.b_zero_point != 0 || p.a_zero_point_input)
           : !(zero_point_ok(p.a_zero_point, a) && zero_point_ok(p.b_zero_point, b))) {
    return absl::InvalidArgumentError("zero points out of range for the input dtypes");
  }
  if (p.a_zero_point_input && (w.num_anchor_inputs != 3 || w.inputs.size() < 3 ||
                               w.inputs[2].dtype != a || NumElements(w.inputs[2].shape) != 1)) {
    return absl::InvalidArgumentError("A's zero-point input must be one element of A's dtype");
  }
  for (size_t i = w.num_anchor_inputs; i < w.inputs.size(); ++i) {
    if (w.inputs[i].dtype != ir::DType::kF32) {
      return absl::InvalidArgumentError("epilogue inputs must be f32");
    }
  }
  const bool sizes_ok = p.batch >= 1 && p.m >= 1 && p.n >= 1 && p.k >= 1 &&
                        NumElements(w.inputs[0].shape) == (p.a_batched ? p.batch : 1) * p.m * p.k &&
                        NumElements(w.inputs[1].shape) == (p.b_batched ? p.batch : 1) * p.k * p.n &&
                        NumElements(w.output.shape) == p.batch * p.m * p.n &&
                        (w.output.shape.empty() || w.output.shape.back() == p.n);
  if (!sizes_ok) return absl::InvalidArgumentError("matmul shapes disagree with its params");
  if (p.trans_a) {
    return absl::InvalidArgumentError("A is transposed (trans_a), which these kernels do not read");
  }
  return absl::OkStatus();
}

absl::StatusOr<LowpPlan> MakeLowpPlan(const ir::Workload& w, const LowpDecisions& d) {
  GTCO_RETURN_IF_ERROR(CheckLowpWorkload(w));
  GTCO_RETURN_IF_ERROR(CheckRange("mr", d.mr, 1, 8));
  GTCO_RETURN_IF_ERROR(CheckRange("nr", d.nr, 1, 4));
  GTCO_RETURN_IF_ERROR(CheckRange("nc", d.nc, 1, 1 << 20));
  GTCO_RETURN_IF_ERROR(CheckRange("mc", d.mc, 1, 1 << 20));
  GTCO_RETURN_IF_ERROR(CheckRange("par", d.par, 0, 2));
  GTCO_RETURN_IF_ERROR(CheckOneOf("unroll_k", d.unroll_k, {1, 2, 4, 8}));
  GTCO_RETURN_IF_ERROR(CheckOneOf("lanes", d.lanes, {kAvx2Lanes, kLowpLanes}));
  GTCO_RETURN_IF_ERROR(CheckOneOf("pack_b", d.pack_b, {1, 2}));
  if (d.pack_b == 2) {
    if (w.matmul.b_batched && w.matmul.batch > 1) {
      return absl::InvalidArgumentError("pack_b=2 (pre-packed B) needs one B shared by the batch");
    }
    // The vector kernels read each pre-packed word as stored: 16 lanes, s8 (not u8) B.
    if (!d.amx && (d.lanes != kLowpLanes || w.inputs[1].dtype == ir::DType::kU8)) {
      return absl::InvalidArgumentError(
          "pack_b=2 (pre-packed B): the vector kernels read it on 16 lanes, bf16 or s8 B only");
    }
  }
  if (d.amx) {
    GTCO_RETURN_IF_ERROR(CheckRange("mr", d.mr, 1, 3));
    GTCO_RETURN_IF_ERROR(CheckRange("nr", d.nr, 1, 3));
    GTCO_RETURN_IF_ERROR(CheckOneOf("unroll_k", d.unroll_k, {1}));
    if (d.mr * d.nr + d.mr + d.nr > 8) {
      return absl::InvalidArgumentError(absl::StrCat("knobs 'mr' = ", d.mr, ", 'nr' = ", d.nr, ": ",
                                                     d.mr * d.nr + d.mr + d.nr,
                                                     " AMX tiles, more than the 8 there are"));
    }
    if (const std::string why = AmxShapeMismatch(w); !why.empty()) {
      return absl::InvalidArgumentError(why);
    }
    const int64_t k_step = kAmxTileRows * (w.inputs[0].dtype == ir::DType::kBF16 ? 2 : 4);
    if (d.kc != 0 && d.kc != w.matmul.k &&
        (d.kc < k_step || d.kc % k_step != 0 || w.matmul.k % d.kc != 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("knob 'kc' = ", d.kc, ": a K block must divide K = ", w.matmul.k,
                       " and be a multiple of ", k_step, " (one AMX tile row)"));
    }
  } else if (d.kc != 0 && d.kc != w.matmul.k) {
    return absl::InvalidArgumentError("knob 'kc': only the AMX kernels block K");
  }
  LowpPlan plan;
  plan.p = w.matmul;
  const ir::DType a = w.inputs[0].dtype, b = w.inputs[1].dtype;
  plan.bf16 = a == ir::DType::kBF16;
  plan.group = plan.bf16 ? 2 : 4;
  plan.full_groups = plan.p.k / plan.group;
  plan.k_tail = plan.p.k % plan.group != 0;
  plan.k_groups = plan.full_groups + (plan.k_tail ? 1 : 0);
  plan.mr = d.mr;
  plan.nr = d.nr;
  plan.lanes = d.lanes;
  plan.wide_dot = d.wide_dot;
  plan.amx = d.amx;
  plan.prepacked_b = d.pack_b == 2;
  plan.tile_cols = plan.amx ? kLowpLanes : plan.nr * plan.lanes;
  plan.block_cols = plan.amx ? plan.nr * kLowpLanes : plan.tile_cols;
  plan.tile_rows = plan.amx ? plan.mr * kAmxTileRows : plan.mr;
  const int64_t n_rounded = CeilDiv(plan.p.n, plan.block_cols) * plan.block_cols;
  plan.panel_cols = std::min(CeilDiv(d.nc, plan.block_cols) * plan.block_cols, n_rounded);
  plan.n_blocks = CeilDiv(plan.p.n, plan.panel_cols);
  plan.pad_cols = plan.n_blocks * plan.panel_cols > plan.p.n;
  const int64_t rows = plan.tile_rows;
  const int64_t m_rounded = CeilDiv(plan.p.m, rows) * rows;
  plan.row_block = std::min(CeilDiv(d.mc, rows) * rows, m_rounded);
  plan.m_blocks = CeilDiv(plan.p.m, plan.row_block);
  plan.clamp_rows = plan.p.m % rows != 0;
  plan.par = d.par;
  plan.unroll_k = d.unroll_k;
  plan.prefetch = d.prefetch;
  if (d.prefetch && !plan.prepacked_b) {
    return absl::InvalidArgumentError("knob 'pf': only a pre-packed B (pack_b = 2) is prefetched");
  }
  plan.k_block_groups = plan.k_groups;
  if (d.kc != 0 && d.kc != plan.p.k) {
    plan.k_block_groups = d.kc / plan.group;
    plan.k_blocks = plan.p.k / d.kc;
  }
  plan.out_dtype = w.output.dtype;
  if (!plan.bf16) {
    plan.a_signed = a == ir::DType::kI8;
    plan.b_unsigned = b == ir::DType::kU8;
    plan.za_input = plan.p.a_zero_point_input;
    plan.za_eff = (plan.a_signed && !plan.amx ? 128 : 0) + plan.p.a_zero_point;
    plan.zb_eff = plan.p.b_zero_point - (plan.b_unsigned && !plan.amx ? 128 : 0);
  }
  if (ScratchCElements(plan) * 4 > kMaxScratchCBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "knobs 'nc' = ", d.nc, ", 'mc' = ", d.mc, ", 'kc' = ", d.kc, ": a scratch C of ",
        ScratchCElements(plan) * 4, " bytes per task exceeds ", kMaxScratchCBytes));
  }
  if (!plan.prepacked_b && PanelBytes(plan) > kMaxPanelBytes) {
    return absl::InvalidArgumentError(absl::StrCat("knob 'nc' = ", d.nc, ": a packed B panel of ",
                                                   PanelBytes(plan), " bytes exceeds ",
                                                   kMaxPanelBytes));
  }
  return plan;
}

std::string AmxShapeMismatch(const ir::Workload& w) {
  const ir::MatMulParams& p = w.matmul;
  const bool bf16 = w.inputs[0].dtype == ir::DType::kBF16;
  const int64_t k_step = kAmxTileRows * (bf16 ? 2 : 4);
  if (p.k % k_step != 0) {
    return absl::StrCat("K = ", p.k, " is not a multiple of ", k_step,
                        " (one 64-byte AMX tile row of ", bf16 ? "bf16" : "8-bit",
                        " values); A is read in place");
  }
  if (p.m < kAmxTileRows) {
    return absl::StrCat("M = ", p.m, " is below the ", kAmxTileRows, " rows of an AMX tile");
  }
  return "";
}

std::string AmxInstruction(const LowpPlan& plan) {
  if (plan.bf16) return "tdpbf16ps";
  return absl::StrCat("tdpb", plan.a_signed ? "s" : "u", plan.b_unsigned ? "u" : "s", "d");
}

int64_t PrepackedColumns(const LowpPlan& plan) {
  return CeilDiv(plan.p.n, plan.block_cols) * plan.block_cols;
}

int64_t PanelBytes(const LowpPlan& plan) { return plan.k_groups * plan.panel_cols * 4; }

int64_t PanelBlockBytes(const LowpPlan& plan) { return plan.k_block_groups * plan.panel_cols * 4; }

int64_t ScratchCElements(const LowpPlan& plan) {
  if (plan.k_blocks == 1) return 0;
  const int64_t rows =
      plan.par == 2 ? plan.row_block : CeilDiv(plan.p.m, plan.tile_rows) * plan.tile_rows;
  return rows * plan.panel_cols;
}

absl::StatusOr<ir::LoweredFunc> LowerLowpMatMul(const ir::Workload& w, const LowpPlan& plan,
                                                const std::string& func_name) {
  GTCO_ASSIGN_OR_RETURN(const EpilogueBuilder epilogue, EpilogueBuilder::Create(w));
  std::vector<ir::BufferParam> params;
  for (size_t input_idx = 0; input_idx < w.inputs.size(); ++input_idx) {
    params.push_back({InputName(static_cast<int>(input_idx)),
                      input_idx == 1 && plan.prepacked_b
                          ? PrepackedRows(plan) * PrepackedColumns(plan)
                          : NumElements(w.inputs[input_idx].shape),
                      StorageType(w.inputs[input_idx].dtype)});
  }
  params.push_back({kOutputName, NumElements(w.output.shape), StorageType(w.output.dtype)});
  return ir::LoweredFunc{func_name, params, LowpLowering(w, plan, epilogue).Build()};
}

}  // namespace gtco::kernels::internal
