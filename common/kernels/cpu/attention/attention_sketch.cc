// The CPU attention sketch "attn_rows/v1" (anchor attention, f32, K stored transposed as the
// model's own K^T): one kernel for scores, mask, softmax and the weighted sum of V, so the
// [seq_q, seq_k] score matrix of a head never goes to memory. A (parallel) task is one batch entry
// (head) and a tile of mr query rows:
//   1. scores, key block by key block: mr x kv vector accumulators, one FMA per (row, key vector)
//      per head_dim step (Q broadcast, K^T rows contiguous in keys); scaled, masked and written to
//      a per-task row buffer (mr x seq_k floats, in L1);
//   2. per row: max, exp and sum over the buffer (exp written back in place);
//   3. out = P V: mr x (value_dim / vw) vector accumulators, one FMA per (row, value vector) per
//      key (P broadcast, V rows contiguous), scaled by 1 / sum at the write-back, where the
//      epilogue is applied.
// The rows of a tail tile past seq_q read the last row and are not stored.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/ir/attention.h"
#include "common/kernels/family.h"
#include "common/util/status.h"

namespace gtco::kernels {
namespace {

using ir::Expr;
using ir::ForKind;
using ir::MakeFloat;
using ir::MakeInt;
using ir::MakeLoad;
using ir::MakeStore;
using ir::MakeVar;
using ir::Stmt;

enum KnobIdx { kVw, kMr, kKv, kPar };

Expr Lt(const Expr& a, const Expr& b) { return ir::MakeBinary(ir::ExprKind::kLt, a, b); }

/// Vector registers of the ISA whose widest fp32 vector has `max_lanes` lanes.
int64_t Registers(int max_lanes) { return max_lanes >= 16 ? 32 : 16; }

bool Applies(const ir::Workload& w) {
  return w.anchor == ir::AnchorKind::kAttention && w.attention.k_transposed &&
         w.inputs.size() >= 3 && w.inputs[0].dtype == ir::DType::kF32 &&
         w.output.dtype == ir::DType::kF32;
}

class AttentionRowsSketch final : public LoopSketch {
 public:
  const char* Name() const override { return "attn_rows/v1"; }
  std::vector<std::string> KnobNames() const override { return {"vw", "mr", "kv", "par"}; }
  bool AppliesTo(const ir::Workload& w) const override { return Applies(w); }

  std::vector<Knob> Knobs(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    const ir::AttentionParams& p = w.attention;
    const bool parallel = hw.cores > 1 && p.batch * p.seq_q > 1;
    std::vector<int64_t> widths;
    for (int64_t vw : VectorWidths(hw.MaxFloatLanes())) {
      if (vw >= 8 && p.value_dim % vw == 0) widths.push_back(vw);
    }
    if (widths.empty()) widths.push_back(p.value_dim % 8 == 0 ? 8 : 4);
    std::reverse(widths.begin(), widths.end());  // widest first: the default
    return {{"vw", widths},
            {"mr", {4, 2, 1, 6}},
            {"kv", {2, 1, 4}},
            {"par", parallel ? std::vector<int64_t>{1, 0} : std::vector<int64_t>{0}}};
  }

  const char* PruneRule(const ir::Workload& w, const target::HardwareInfo& hw,
                        const KnobValues& values) const override {
    const int64_t vw = values[kVw], mr = values[kMr], kv = values[kKv];
    if (w.attention.value_dim % vw != 0) return "value_dim is not a multiple of vw";
    const int64_t registers = Registers(hw.MaxFloatLanes());
    // Score tile: mr x kv accumulators plus the kv K^T vectors and a Q broadcast.
    if (mr * kv + kv + 1 > registers) return "score tile exceeds the vector registers";
    // Output tile: mr x value_dim / vw accumulators plus a V vector and a P broadcast.
    if (mr * (w.attention.value_dim / vw) + 2 > registers) {
      return "output tile exceeds the vector registers";
    }
    if (kv * vw > RoundUp(w.attention.seq_k, vw)) return "key block longer than the keys";
    if (mr > 1 && mr > w.attention.seq_q) return "row tile taller than the queries";
    return nullptr;
  }

  bool Admits(const ir::Workload& w, const target::HardwareInfo& hw,
              const KnobValues& values) const override {
    return PruneRule(w, hw, values) == nullptr;
  }

  absl::StatusOr<ir::LoweredFunc> Lower(const ir::Workload& w, const KnobValues& values,
                                        const std::string& func_name) const override {
    GTCO_RETURN_IF_ERROR(w.Validate());
    if (!Applies(w)) {
      return absl::InvalidArgumentError(
          "attn_rows lowers f32 attention with K stored transposed only");
    }
    GTCO_RETURN_IF_ERROR(CheckOneOf("vw", values[kVw], {4, 8, 16}));
    GTCO_RETURN_IF_ERROR(CheckOneOf("mr", values[kMr], {1, 2, 4, 6}));
    GTCO_RETURN_IF_ERROR(CheckOneOf("kv", values[kKv], {1, 2, 4}));
    GTCO_RETURN_IF_ERROR(CheckRange("par", values[kPar], 0, 1));
    const ir::AttentionParams& p = w.attention;
    if (p.value_dim % values[kVw] != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("attn_rows: value_dim ", p.value_dim, " is not a multiple of vw ",
                       values[kVw]));
    }
    // The epilogue over the output [batch * seq_q, value_dim]; anchor inputs are not its own.
    std::vector<std::vector<int64_t>> shapes;
    for (size_t index = 0; index < w.inputs.size(); ++index) {
      if (static_cast<int>(index) < w.num_anchor_inputs) {
        shapes.push_back({1});
        continue;
      }
      shapes.push_back(w.inputs[index].shape);
    }
    GTCO_ASSIGN_OR_RETURN(const EpilogueBuilder epilogue, EpilogueBuilder::Create(w, w.output.shape,
                                                                                  shapes));
    return ir::LoweredFunc{func_name, KernelParams(w), Body(w, values, epilogue)};
  }

 private:
  static Stmt Body(const ir::Workload& w, const KnobValues& values,
                   const EpilogueBuilder& epilogue) {
    const ir::AttentionParams& p = w.attention;
    const int64_t vw = values[kVw], mr = values[kMr], kv = values[kKv];
    const int64_t sq = p.seq_q, sk = p.seq_k, d = p.head_dim, dv = p.value_dim;
    const int64_t block = kv * vw;                // keys per score block
    const int64_t full_blocks = sk / block;       // blocks without a key tail
    const int64_t tail_keys = sk - full_blocks * block;
    const int64_t q_tiles = CeilDiv(sq, mr);
    const int64_t ov = dv / vw;                   // output vectors per row
    const Expr task = MakeVar("task");
    const Expr b = task / MakeInt(q_tiles);
    const Expr i0 = (task % MakeInt(q_tiles)) * MakeInt(mr);
    // Row r of the tile reads query row min(i0 + r, sq - 1): tail rows repeat the last one.
    auto query_row = [&](int64_t r) {
      return sq % mr == 0 ? i0 + MakeInt(r) : ir::Min(i0 + MakeInt(r), MakeInt(sq - 1));
    };
    const std::string kScores = "scores", kAcc = "sacc", kOut = "oacc", kStat = "stat";

    // 1. Scores of one key block starting at key j0, `width` keys of it valid (block: all).
    auto score_block = [&](const Expr& j0, int64_t width, const std::string& tag) {
      const int64_t vectors = CeilDiv(width, vw);
      const Expr dd = MakeVar(tag + "_d"), v = MakeVar(tag + "_v");
      std::vector<Stmt> zero, fma, store;
      for (int64_t r = 0; r < mr; ++r) {
        for (int64_t c = 0; c < vectors; ++c) {
          const Expr slot = MakeInt((r * kv + c) * vw) + v;
          const Expr key = j0 + MakeInt(c * vw) + v;
          const Expr in_keys = Lt(MakeInt(c * vw) + v, MakeInt(width));
          const bool whole = (c + 1) * vw <= width;
          zero.push_back(ir::MakeFor(tag + "_v", MakeInt(0), MakeInt(vw), ForKind::kVectorized,
                                     MakeStore(kAcc, slot, MakeFloat(0.0))));
          const Expr q = MakeLoad(InputName(0), (b * MakeInt(sq) + query_row(r)) * MakeInt(d) + dd);
          const Expr kt = MakeLoad(InputName(1), (b * MakeInt(d) + dd) * MakeInt(sk) + key);
          Stmt update = MakeStore(kAcc, slot, MakeLoad(kAcc, slot) + q * kt);
          if (!whole) update = ir::MakeIf(in_keys, update);
          fma.push_back(
              ir::MakeFor(tag + "_v", MakeInt(0), MakeInt(vw), ForKind::kVectorized, update));
          Expr score = MakeLoad(kAcc, slot) * MakeFloat(p.scale);
          if (p.mask_groups > 0) {
            const Expr group = b / MakeInt(p.batch / p.mask_groups);
            score = score + MakeLoad(InputName(3), group * MakeInt(sk) + key);
          }
          Stmt keep = MakeStore(kScores, MakeInt(r * sk) + key, score);
          if (!whole) keep = ir::MakeIf(in_keys, keep);
          store.push_back(
              ir::MakeFor(tag + "_v", MakeInt(0), MakeInt(vw), ForKind::kVectorized, keep));
        }
      }
      return ir::MakeBlock({ir::MakeBlock(zero),
                            ir::MakeFor(tag + "_d", MakeInt(0), MakeInt(d), ForKind::kSerial,
                                        ir::MakeBlock(fma)),
                            ir::MakeBlock(store)});
    };
    std::vector<Stmt> steps;
    const Expr jb = MakeVar("jb");
    steps.push_back(LoopOrSkip("jb", MakeInt(0), MakeInt(full_blocks), ForKind::kSerial,
                               score_block(jb * MakeInt(block), block, "sb")));
    if (tail_keys > 0) steps.push_back(score_block(MakeInt(full_blocks * block), tail_keys, "st"));

    // 2. Softmax of each row of the buffer, reductions in vw lanes ("red"), then folded:
    //    stat[2r] = max, stat[2r + 1] = 1 / sum; the buffer then holds exp(s - max).
    const std::string kRed = "red";
    const Expr lane = MakeVar("lane");
    auto fill = [&](double value) {
      return ir::MakeFor("lane", MakeInt(0), MakeInt(vw), ForKind::kVectorized,
                         MakeStore(kRed, lane, MakeFloat(value)));
    };
    auto fold = [&](int64_t stat_slot, bool max) {
      const Expr acc = MakeLoad(kStat, MakeInt(stat_slot));
      const Expr item = MakeLoad(kRed, lane);
      return ir::MakeFor("lane", MakeInt(0), MakeInt(vw), ForKind::kSerial,
                         MakeStore(kStat, MakeInt(stat_slot),
                                   max ? ir::Max(acc, item) : acc + item));
    };
    for (int64_t r = 0; r < mr; ++r) {
      const std::string tag = absl::StrCat("sm", r);
      const Expr row_max = MakeLoad(kStat, MakeInt(2 * r));
      auto score = [&](const Expr& key) { return MakeLoad(kScores, MakeInt(r * sk) + key); };
      steps.push_back(fill(-INFINITY));
      steps.push_back(EmitVectorRange(
          tag + "m", MakeInt(0), MakeInt(sk), vw, 1, [&](const Expr& key, const Expr& slot) {
            return MakeStore(kRed, slot, ir::Max(MakeLoad(kRed, slot), score(key)));
          }));
      steps.push_back(MakeStore(kStat, MakeInt(2 * r), MakeFloat(-INFINITY)));
      steps.push_back(fold(2 * r, true));
      steps.push_back(fill(0.0));
      steps.push_back(EmitVectorRange(
          tag + "e", MakeInt(0), MakeInt(sk), vw, 1, [&](const Expr& key, const Expr& slot) {
            const Expr e = ir::MakeCall("exp", {score(key) - row_max});
            // The sum first: `e` reloads the score, which the second store overwrites.
            return ir::MakeBlock({MakeStore(kRed, slot, MakeLoad(kRed, slot) + e),
                                  MakeStore(kScores, MakeInt(r * sk) + key, e)});
          }));
      steps.push_back(MakeStore(kStat, MakeInt(2 * r + 1), MakeFloat(0.0)));
      steps.push_back(fold(2 * r + 1, false));
      steps.push_back(MakeStore(kStat, MakeInt(2 * r + 1),
                                MakeFloat(1.0) / MakeLoad(kStat, MakeInt(2 * r + 1))));
    }

    // 3. out = P V over all keys, normalized and stored with the epilogue.
    const Expr key = MakeVar("pv_j"), ov_lane = MakeVar("pv_v");
    std::vector<Stmt> zero, fma, write;
    for (int64_t r = 0; r < mr; ++r) {
      for (int64_t c = 0; c < ov; ++c) {
        const Expr slot = MakeInt((r * ov + c) * vw) + ov_lane;
        const Expr col = MakeInt(c * vw) + ov_lane;
        zero.push_back(ir::MakeFor("pv_v", MakeInt(0), MakeInt(vw), ForKind::kVectorized,
                                   MakeStore(kOut, slot, MakeFloat(0.0))));
        const Expr prob = MakeLoad(kScores, MakeInt(r * sk) + key);
        const Expr value = MakeLoad(InputName(2), (b * MakeInt(sk) + key) * MakeInt(dv) + col);
        fma.push_back(ir::MakeFor("pv_v", MakeInt(0), MakeInt(vw), ForKind::kVectorized,
                                  MakeStore(kOut, slot, MakeLoad(kOut, slot) + prob * value)));
        const Expr row = b * MakeInt(sq) + i0 + MakeInt(r);
        const Expr result = MakeLoad(kOut, slot) * MakeLoad(kStat, MakeInt(2 * r + 1));
        Stmt out = ir::MakeFor(
            "pv_v", MakeInt(0), MakeInt(vw), ForKind::kVectorized,
            MakeStore(kOutputName, row * MakeInt(dv) + col, epilogue.Apply(result, row, col)));
        if (sq % mr != 0 && r > 0) out = ir::MakeIf(Lt(i0 + MakeInt(r), MakeInt(sq)), out);
        write.push_back(out);
      }
    }
    steps.push_back(ir::MakeBlock(zero));
    steps.push_back(ir::MakeFor("pv_j", MakeInt(0), MakeInt(sk), ForKind::kSerial,
                                ir::MakeBlock(fma)));
    steps.push_back(ir::MakeBlock(write));

    Stmt body = ir::MakeBlock(steps);
    body = ir::MakeAllocate(kOut, mr * ov * vw, body);
    body = ir::MakeAllocate(kAcc, mr * kv * vw, body);
    body = ir::MakeAllocate(kStat, 2 * mr, body);
    body = ir::MakeAllocate(kRed, vw, body);
    body = ir::MakeAllocate(kScores, mr * sk, body);
    return ir::MakeFor("task", MakeInt(0), MakeInt(p.batch * q_tiles),
                       values[kPar] == 1 ? ForKind::kParallel : ForKind::kSerial, body);
  }
};

/// The CPU attention mapping: any CPU with vectors, f32, K^T as the model stores it.
class AttentionRowsMapping final : public MappingSketch {
 public:
  const char* Name() const override { return "rows"; }
  const Sketch& sketch() const override { return sketch_; }
  MappingVerdict Explain(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    if (!w.attention.k_transposed) {
      return {Name(), false, "K is not stored transposed (the kernel streams K^T rows)"};
    }
    const std::string non_f32 = NonF32Operands(w);
    if (!non_f32.empty()) return {Name(), false, non_f32};
    return {Name(), true,
            absl::StrCat("scores, ", w.attention.mask_groups > 0 ? "mask, " : "",
                         "softmax and P.V in one kernel per (head, query tile), the score rows "
                         "in an L1 buffer, up to ",
                         hw.MaxFloatLanes(), " fp32 lanes")};
  }

 private:
  AttentionRowsSketch sketch_;
};

}  // namespace

const MappingSketch& CpuAttentionRowsMapping() {
  static const AttentionRowsMapping* const mapping = new AttentionRowsMapping();
  return *mapping;
}

}  // namespace gtco::kernels
