// Matmul sketch "mm_vector/v1" and the "vector" mapping: a plain vectorized loop nest without
// register blocking, for any CPU. Per output row and chunk of nc columns, a row of accumulators
// in a local buffer receives A[i, k] * B[k, chunk] for every k (vectorized over columns,
// strip-mined with a scalar tail), then the epilogue is applied on the way out.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/kernels/cpu/matmul_blocked/matmul_blocked.h"
#include "common/kernels/family.h"
#include "common/schedule/epilogue.h"
#include "common/schedule/lower_util.h"
#include "common/schedule/mapping.h"
#include "common/util/status.h"

namespace gtco::kernels {
namespace {

using ir::Expr;
using ir::ForKind;
using ir::MakeInt;
using ir::MakeVar;
using ir::Stmt;

enum VectorKnob { kVw, kNc, kUnroll, kPar };
const std::vector<int64_t> kUnrollChoices = {1, 2, 4};
constexpr int64_t kMinParallelFlops = int64_t{1} << 21;
constexpr char kAccRow[] = "accrow";

struct VectorPlan {
  ir::MatMulParams p;
  int64_t vw, nc, unroll;
  bool parallel;
  int64_t n_chunks;
};

Stmt LowerVectorPlan(const VectorPlan& plan, const EpilogueBuilder& epilogue) {
  const ir::MatMulParams& p = plan.p;
  const Expr task = MakeVar("task"), b = MakeVar("b"), i = MakeVar("i"), jc = MakeVar("jc");
  const Expr k = MakeVar("k");
  const Expr j0 = jc * MakeInt(plan.nc);
  const Expr cols =
      plan.n_chunks == 1 ? MakeInt(p.n) : ir::Min(MakeInt(plan.nc), MakeInt(p.n) - j0);
  const Expr a_index = (p.a_batched ? b * MakeInt(p.m * p.k) : MakeInt(0)) +
                       (p.trans_a ? k * MakeInt(p.m) + i : i * MakeInt(p.k) + k);
  const Expr a_value = ir::MakeLoad(InputName(0), a_index);
  auto b_value = [&](const Expr& col) {
    const Expr base = p.b_batched ? b * MakeInt(p.k * p.n) : MakeInt(0);
    return ir::MakeLoad(InputName(1),
                        base + (p.trans_b ? col * MakeInt(p.k) + k : k * MakeInt(p.n) + col));
  };
  Stmt zero = EmitVectorRange(
      "z", MakeInt(0), cols, plan.vw, plan.unroll,
      [&](const Expr& j, const Expr&) { return ir::MakeStore(kAccRow, j, ir::MakeFloat(0.0)); });
  Stmt update =
      EmitVectorRange("u", MakeInt(0), cols, plan.vw, plan.unroll, [&](const Expr& j, const Expr&) {
        return ir::MakeStore(kAccRow, j, ir::MakeLoad(kAccRow, j) + a_value * b_value(j0 + j));
      });
  Stmt write =
      EmitVectorRange("w", MakeInt(0), cols, plan.vw, plan.unroll, [&](const Expr& j, const Expr&) {
        const Expr value = epilogue.Apply(ir::MakeLoad(kAccRow, j), b * MakeInt(p.m) + i, j0 + j);
        return ir::MakeStore(kOutputName, (b * MakeInt(p.m) + i) * MakeInt(p.n) + j0 + j, value);
      });
  Stmt chunk = ir::MakeAllocate(
      kAccRow, std::min(plan.nc, p.n),
      ir::MakeBlock(
          {zero, ir::MakeFor("k", MakeInt(0), MakeInt(p.k), ForKind::kSerial, update), write}));
  Stmt row = LoopOrSkip("jc", MakeInt(0), MakeInt(plan.n_chunks), ForKind::kSerial, chunk);
  row = ir::MakeLet("b", task / MakeInt(p.m), ir::MakeLet("i", task % MakeInt(p.m), row));
  return ir::MakeFor("task", MakeInt(0), MakeInt(p.batch * p.m),
                     plan.parallel ? ForKind::kParallel : ForKind::kSerial, row);
}

class VectorMatMulSketch final : public LoopSketch {
 public:
  const char* Name() const override { return "mm_vector/v1"; }
  std::vector<std::string> KnobNames() const override { return {"vw", "nc", "unroll", "par"}; }
  bool AppliesTo(const ir::Workload& w) const override {
    return w.anchor == ir::AnchorKind::kMatMul;
  }

  std::vector<Knob> Knobs(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    const int64_t n = w.matmul.n;
    std::set<int64_t> chunks = {std::min<int64_t>(n, 256), std::min<int64_t>(n, 1024), n};
    return {{"vw", VectorWidths(hw.MaxFloatLanes())},
            {"nc", std::vector<int64_t>(chunks.begin(), chunks.end())},
            {"unroll", kUnrollChoices},
            {"par",
             hw.cores > 1 && 2 * w.matmul.batch * w.matmul.m * n * w.matmul.k >= kMinParallelFlops
                 ? std::vector<int64_t>{1, 0}
                 : std::vector<int64_t>{0}}};
  }

  const char* PruneRule(const ir::Workload& w, const target::HardwareInfo& hw,
                        const KnobValues& values) const override {
    const ir::MatMulParams& p = w.matmul;
    if (values[kPar] == 1 &&
        (p.batch * p.m < hw.cores || 2 * p.batch * p.m * p.n * p.k < kMinParallelFlops)) {
      return "too_small_to_parallelize";
    }
    const bool narrowest =
        values[kUnroll] == 1 && values[kVw] == VectorWidths(hw.MaxFloatLanes()).front();
    if (!narrowest && values[kVw] * values[kUnroll] > std::min(values[kNc], p.n)) {
      return "exceeds_shape";
    }
    return nullptr;
  }

  bool Admits(const ir::Workload& w, const target::HardwareInfo& hw,
              const KnobValues& values) const override {
    return PruneRule(w, hw, values) == nullptr;
  }

  absl::StatusOr<ir::LoweredFunc> Lower(const ir::Workload& w, const KnobValues& values,
                                        const std::string& func_name) const override {
    GTCO_RETURN_IF_ERROR(internal::CheckMatMulShapes(w));
    GTCO_RETURN_IF_ERROR(CheckOneOf("vw", values[kVw], {4, 8, 16}));
    GTCO_RETURN_IF_ERROR(CheckRange("nc", values[kNc], 1, 1 << 20));
    GTCO_RETURN_IF_ERROR(CheckOneOf("unroll", values[kUnroll], kUnrollChoices));
    GTCO_RETURN_IF_ERROR(CheckRange("par", values[kPar], 0, 1));
    GTCO_ASSIGN_OR_RETURN(const EpilogueBuilder epilogue, EpilogueBuilder::Create(w));
    VectorPlan plan{w.matmul,        values[kVw],       std::min(values[kNc], w.matmul.n),
                    values[kUnroll], values[kPar] == 1, 0};
    plan.n_chunks = CeilDiv(w.matmul.n, plan.nc);
    return ir::LoweredFunc{func_name, KernelParams(w), LowerVectorPlan(plan, epilogue)};
  }
};

class VectorMatMulMappingImpl final : public MappingSketch {
 public:
  const char* Name() const override { return "vector"; }
  const Sketch& sketch() const override { return sketch_; }
  MappingVerdict Explain(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    const std::string non_f32 = NonF32Operands(w);
    if (!non_f32.empty()) return {Name(), false, non_f32};
    return {Name(), true,
            absl::StrCat("any CPU: vectorized loop nest without register blocking, up to ",
                         hw.MaxFloatLanes(), " fp32 lanes")};
  }

 private:
  VectorMatMulSketch sketch_;
};

}  // namespace

const MappingSketch& VectorMatMulMapping() {
  static const VectorMatMulMappingImpl* const mapping = new VectorMatMulMappingImpl();
  return *mapping;
}

}  // namespace gtco::kernels
