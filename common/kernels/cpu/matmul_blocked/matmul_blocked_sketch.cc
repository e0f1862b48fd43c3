// The register-blocked fp32 matmul sketches "mm_avx512_fma/v1" and "mm_avx2_fma/v1" and their
// mappings: knob candidates derived from the shapes, the caches and the core count; pruning by
// named resource rules (register file, L1 micro-panel, L2 block, alignment, parallel grain);
// and plans for the shared lowering (matmul_blocked_lowering.cc).
#include <algorithm>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/kernels/cpu/conv/conv_amx.h"
#include "common/kernels/cpu/conv/conv_pairs.h"
#include "common/kernels/cpu/matmul_blocked/matmul_blocked.h"
#include "common/kernels/cpu/matmul_lowp/matmul_lowp_lowering.h"
#include "common/kernels/family.h"
#include "common/kernels/prepack.h"
#include "common/kernels/registry.h"
#include "common/schedule/lower_util.h"
#include "common/schedule/mapping.h"
#include "common/util/status.h"

namespace gtco::kernels {
namespace internal {
namespace {

const std::vector<int64_t> kUnrollKChoices = {1, 4};
/// Below this many flops a parallel loop costs more than it saves (~10 us of serial work).
constexpr int64_t kMinParallelFlops = int64_t{1} << 21;
/// The L1 rule allows the micro-panels this multiple of L1: the B panel is re-read by every row
/// tile, but with hardware prefetching panels of up to ~2x L1 run as fast as L1-resident ones
/// (measured on Sapphire Rapids: 6x4 tiles at kc 128..384 within 5%), so only panels several
/// times larger than L1 are pruned.
constexpr int64_t kL1Slack = 4;

std::vector<int64_t> SortedUnique(std::vector<int64_t> values) {
  std::set<int64_t> unique(values.begin(), values.end());
  return std::vector<int64_t>(unique.begin(), unique.end());
}

}  // namespace

int64_t DividingTileRows(const FmaMappingSpec& spec, int64_t m) {
  const int64_t widest = spec.mr_choices.back();
  if (m <= widest) return 0;
  for (int64_t mr : spec.mr_choices) {
    if (mr > 4 && m % mr == 0) return 0;
  }
  for (int64_t rows = widest; rows > 4; --rows) {
    if (m % rows == 0) return rows;
  }
  return 0;
}

namespace {

/// The spec's row counts up to M, M itself when it is below the widest, and the tile rows that
/// divide M where no choice does (DividingTileRows: 7 for a 7x7 plane's 49 pixels, which 6 or 8
/// rows leave a tail of 1; ResNet-50's 2048->512 1x1 conv of layer 4 ran 0.77x the time of its
/// best 4x4 tile as 7x3 with its weights in cache, 0.96x with them evicted).
std::vector<int64_t> MrValues(const FmaMappingSpec& spec, int64_t m) {
  std::vector<int64_t> values;
  for (int64_t mr : spec.mr_choices) {
    if (mr <= m) values.push_back(mr);
  }
  if (m < spec.mr_choices.back()) values.push_back(m);
  if (const int64_t rows = DividingTileRows(spec, m); rows > 0) values.push_back(rows);
  return SortedUnique(values);
}

std::vector<int64_t> NrValues(const FmaMappingSpec& spec, int64_t n) {
  std::vector<int64_t> values;
  for (int64_t nr : spec.nr_choices) {
    if (nr == 1 || (nr - 1) * spec.vw < n) values.push_back(nr);
  }
  return values;
}

/// K blocks of about 128..512 (split evenly, multiples of 8), and all of K when it is small.
std::vector<int64_t> KcValues(int64_t k) {
  std::vector<int64_t> values;
  for (int64_t target : {128, 256, 384, 512}) {
    values.push_back(std::min(k, RoundUp(CeilDiv(k, CeilDiv(k, target)), 8)));
  }
  if (k <= 1024) values.push_back(k);
  return SortedUnique(values);
}

/// All rows, an even share per core (and per two cores), and L2-friendly 128 / 256 rows.
std::vector<int64_t> McValues(int64_t m, int cores) {
  std::vector<int64_t> values = {m};
  for (int64_t candidate : {CeilDiv(m, cores), CeilDiv(m, 2 * cores), int64_t{128}, int64_t{256}}) {
    if (candidate < m) values.push_back(candidate);
  }
  return SortedUnique(values);
}

/// All columns, an even vector-aligned share per core (and per two cores), 256 and 512.
std::vector<int64_t> NcValues(int64_t n, int cores, int64_t vw) {
  std::vector<int64_t> values = {n};
  for (int64_t candidate : {RoundUp(CeilDiv(n, cores), vw), RoundUp(CeilDiv(n, 2 * cores), vw),
                            int64_t{256}, int64_t{512}}) {
    if (candidate < n) values.push_back(candidate);
  }
  return SortedUnique(values);
}

}  // namespace

int64_t NearestTo(const std::vector<int64_t>& values, int64_t target) {
  int64_t best = values.front();
  for (int64_t value : values) {
    if (std::abs(value - target) < std::abs(best - target)) best = value;
  }
  return best;
}

absl::Status CheckMatMulShapes(const ir::Workload& w) {
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

absl::StatusOr<KnobValues> BlockedTraceValues(const ir::Workload& w, const schedule::Trace& t) {
  GTCO_ASSIGN_OR_RETURN(ResolvedTrace resolved, ResolveTrace(w, t));
  if (resolved.values.size() != kNumBlockedKnobs) {
    return absl::InvalidArgumentError("a blocked trace needs one value per knob");
  }
  return std::move(resolved.values);
}

absl::StatusOr<PrepackedOperand> PrepackForView(const schedule::Trace& t, KnobValues values,
                                                const ir::MatMulParams& view, int64_t vw,
                                                const float* b) {
  values[kPackB] = kPackBPrepacked;
  GTCO_ASSIGN_OR_RETURN(const BlockedPlan plan, MakeBlockedPlan(view, values, vw));
  PrepackedOperand prepacked;
  prepacked.trace = WithPackB(t, kPackBPrepacked);
  prepacked.data = PrepackB(plan, b);
  prepacked.shape = {view.k, PrepackedBElements(plan) / view.k};
  return prepacked;
}

absl::StatusOr<BlockedPlan> MakeBlockedPlan(const ir::Workload& w, const KnobValues& values,
                                            int64_t vw) {
  GTCO_RETURN_IF_ERROR(CheckMatMulShapes(w));
  return MakeBlockedPlan(w.matmul, values, vw);
}

absl::StatusOr<BlockedPlan> MakeBlockedPlan(const ir::MatMulParams& matmul,
                                            const KnobValues& values, int64_t vw) {
  if (values.size() != kNumBlockedKnobs) {
    return absl::InvalidArgumentError("blocked matmul plan needs one value per knob");
  }
  GTCO_RETURN_IF_ERROR(CheckRange("mr", values[kMr], 1, 32));
  GTCO_RETURN_IF_ERROR(CheckRange("nr", values[kNr], 1, 8));
  GTCO_RETURN_IF_ERROR(CheckRange("kc", values[kKc], 1, 1 << 16));
  GTCO_RETURN_IF_ERROR(CheckRange("mc", values[kMc], 1, 1 << 24));
  GTCO_RETURN_IF_ERROR(CheckRange("nc", values[kNc], 1, 1 << 24));
  GTCO_RETURN_IF_ERROR(CheckRange("par", values[kPar], 0, 1));
  GTCO_RETURN_IF_ERROR(CheckOneOf("unroll_k", values[kUnrollK], {1, 2, 4, 8}));
  // pack_a 2: A staged by the family (kPackAStaged).
  GTCO_RETURN_IF_ERROR(CheckRange("pack_a", values[kPackA], 0, kPackAStaged));
  // pack_b 2: B arrives pre-packed (kPackBPrepacked).
  GTCO_RETURN_IF_ERROR(CheckRange("pack_b", values[kPackB], 0, kPackBPrepacked));
  if (values[kPackB] == kPackBPrepacked && (matmul.b_batched || matmul.trans_b)) {
    return absl::InvalidArgumentError(
        "pack_b=2 (pre-packed B) needs one B shared by the batch, not transposed");
  }
  BlockedPlan plan;
  plan.p = matmul;
  const ir::MatMulParams& p = plan.p;
  plan.vw = vw;
  plan.mr = std::min(values[kMr], p.m);
  plan.nr = values[kNr];
  plan.tc = plan.nr * vw;
  plan.kc = std::min(values[kKc], p.k);
  plan.unroll_k = values[kUnrollK];
  plan.parallel = values[kPar] == 1;
  plan.pack_a = values[kPackA] == 1;
  plan.staged_a = values[kPackA] == kPackAStaged;
  plan.pack_b = values[kPackB] == 1;
  plan.prepacked_b = values[kPackB] == kPackBPrepacked;
  plan.row_block = values[kMc] >= p.m ? p.m : RoundUp(values[kMc], plan.mr);
  plan.m_blocks = CeilDiv(p.m, plan.row_block);
  if (plan.m_blocks == 1) plan.row_block = p.m;
  plan.col_block = values[kNc] >= p.n ? p.n : RoundUp(values[kNc], plan.tc);
  plan.n_blocks = CeilDiv(p.n, plan.col_block);
  if (plan.n_blocks == 1) plan.col_block = p.n;
  plan.k_blocks = CeilDiv(p.k, plan.kc);
  plan.row_tail = p.m % plan.mr;
  plan.col_tail = p.n % plan.tc;
  plan.col_tail_vecs = CeilDiv(plan.col_tail, vw);
  // (A staged by the family is sized and checked by the family.)
  if ((!plan.staged_a && plan.row_block * plan.kc > (int64_t{1} << 20)) ||
      plan.kc * plan.tc > (int64_t{1} << 20)) {
    return absl::InvalidArgumentError("matmul blocks exceed the 4 MiB local buffer limit");
  }
  return plan;
}

int64_t PrepackedBElements(const BlockedPlan& plan) {
  return plan.p.k * CeilDiv(plan.p.n, plan.tc) * plan.tc;
}

std::vector<float> PrepackB(const BlockedPlan& plan, const float* b) {
  const ir::MatMulParams& p = plan.p;
  const int64_t tiles = CeilDiv(p.n, plan.tc), padded = tiles * plan.tc;
  std::vector<float> packed(PrepackedBElements(plan), 0.0f);
  for (int64_t kb = 0; kb < plan.k_blocks; ++kb) {
    const int64_t k0 = kb * plan.kc, extent = std::min(plan.kc, p.k - k0);
    for (int64_t tile = 0; tile < tiles; ++tile) {
      float* block = packed.data() + k0 * padded + tile * extent * plan.tc;
      for (int64_t k = 0; k < extent; ++k) {
        for (int64_t c = 0; c < plan.tc && tile * plan.tc + c < p.n; ++c) {
          block[k * plan.tc + c] = b[(k0 + k) * p.n + tile * plan.tc + c];
        }
      }
    }
  }
  return packed;
}

namespace {

class FmaMatMulSketch final : public LoopSketch {
 public:
  explicit FmaMatMulSketch(FmaMappingSpec spec) : spec_(std::move(spec)) {}

  const FmaMappingSpec& spec() const { return spec_; }
  const char* Name() const override { return spec_.sketch_name; }
  std::vector<std::string> KnobNames() const override {
    return {"mr", "nr", "kc", "mc", "nc", "par", "unroll_k", "pack_a", "pack_b"};
  }
  bool AppliesTo(const ir::Workload& w) const override {
    return w.anchor == ir::AnchorKind::kMatMul;
  }

  std::vector<Knob> Knobs(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    std::vector<Knob> knobs = BlockedKnobs(spec_, w.matmul, hw);
    // The default (what a task's first trial and an untuned export run): a register tile of 8
    // (AVX-512) or 6 (AVX2) rows by 2 vectors, K in blocks of ~512, an M block per core, N
    // blocks of ~128 columns, K unrolled by 4. On AMD Zen 4 it ran the projections of BERT,
    // ViT and Llama (50..197 rows, K 512..3072) in 0.79-0.86x the time of the smallest tile
    // that each knob's first value made the default before (4 rows by 1 vector, K blocks of
    // 128), and as AVX2 code (GTCO_CPU_ISA=avx2) in 0.33-0.34x that of its 2 rows by 1 vector
    // (`build/bench/conv_mappings --matmul 128x768x768,... --interleave 20 --trace ...`).
    const ir::MatMulParams& p = w.matmul;
    Prefer(knobs[kMr], spec_.vw == 16 ? 8 : 6);
    Prefer(knobs[kNr], 2);
    Prefer(knobs[kKc], NearestTo(knobs[kKc].values, 512));
    Prefer(knobs[kMc], NearestTo(knobs[kMc].values, CeilDiv(p.m, std::max(hw.cores, 1))));
    Prefer(knobs[kNc], NearestTo(knobs[kNc].values, 128));
    Prefer(knobs[kUnrollK], 4);
    return knobs;
  }

  const char* PruneRule(const ir::Workload& w, const target::HardwareInfo& hw,
                        const KnobValues& values) const override;

  bool Admits(const ir::Workload& w, const target::HardwareInfo& hw,
              const KnobValues& values) const override {
    return PruneRule(w, hw, values) == nullptr;
  }

  absl::StatusOr<ir::LoweredFunc> Lower(const ir::Workload& w, const KnobValues& values,
                                        const std::string& func_name) const override {
    GTCO_ASSIGN_OR_RETURN(const BlockedPlan plan, MakeBlockedPlan(w, values, spec_.vw));
    if (plan.staged_a) {
      return absl::InvalidArgumentError("a matmul's A is packed (pack_a 1) or read in place (0)");
    }
    GTCO_ASSIGN_OR_RETURN(const EpilogueBuilder epilogue, EpilogueBuilder::Create(w));
    return ir::LoweredFunc{func_name, KernelParams(w), LowerBlockedPlan(plan, epilogue)};
  }

 private:
  FmaMappingSpec spec_;
};

const char* FmaMatMulSketch::PruneRule(const ir::Workload& w, const target::HardwareInfo& hw,
                                       const KnobValues& values) const {
  return BlockedPruneRule(spec_, w.matmul, hw, values);
}

}  // namespace

std::vector<Knob> BlockedKnobs(const FmaMappingSpec& spec, const ir::MatMulParams& p,
                               const target::HardwareInfo& hw) {
  const int cores = std::max(hw.cores, 1);
  const bool parallel = cores > 1 && 2 * p.batch * p.m * p.n * p.k >= kMinParallelFlops;
  std::vector<int64_t> unroll_k_values;
  for (int64_t unroll : kUnrollKChoices) {
    if (unroll == 1 || unroll <= p.k) unroll_k_values.push_back(unroll);
  }
  return {{"mr", MrValues(spec, p.m)},
          {"nr", NrValues(spec, p.n)},
          {"kc", KcValues(p.k)},
          {"mc", McValues(p.m, cores)},
          {"nc", NcValues(p.n, cores, spec.vw)},
          {"par", parallel ? std::vector<int64_t>{1, 0} : std::vector<int64_t>{0}},
          {"unroll_k", unroll_k_values},
          {"pack_a", {0, 1}},
          {"pack_b", {0, 1}}};
}

const char* BlockedPruneRule(const FmaMappingSpec& spec, const ir::MatMulParams& p,
                             const target::HardwareInfo& hw, const KnobValues& values,
                             int64_t a_block_floats) {
  const int64_t mr = std::min(values[kMr], p.m), nr = values[kNr], tc = nr * spec.vw;
  const int64_t kc = std::min(values[kKc], p.k);
  const int64_t mc = std::min(values[kMc], p.m), nc = std::min(values[kNc], p.n);
  // mr x nr accumulators, nr B vectors and one broadcast A value live in vector registers.
  if (mr * nr + nr + 1 > spec.registers) return "register_file";
  // The kc x tc B micro-panel and the mr x kc A micro-panel are the micro-kernel's working set.
  if ((kc * tc + mr * kc) * 4 > kL1Slack * hw.l1d_bytes) return "l1_tile";
  // The mc x kc A block is re-read for every column panel; with the kc x nc B block it should
  // share the L2 cache.
  if ((a_block_floats >= 0 ? a_block_floats : mc * kc) * 4 + kc * nc * 4 > hw.l2_bytes) {
    return "l2_panel";
  }
  // N blocks must hold whole register tiles so that vectors stay aligned to the block start.
  if (nc < p.n && nc % tc != 0) return "alignment";
  if (values[kPar] == 1) {
    const int64_t tasks = p.batch * CeilDiv(p.m, mc) * CeilDiv(p.n, nc);
    const int64_t flops = 2 * p.batch * p.m * p.n * p.k;
    if (tasks < std::max(hw.cores, 1) || flops < kMinParallelFlops) {
      return "too_small_to_parallelize";
    }
  }
  // Degenerate combinations: an M block smaller than one row tile, an unroll longer than the
  // K block, or a tile whose last vector lies entirely past N.
  if ((mc < mr && mc < p.m) || values[kUnrollK] > kc || (nr > 1 && (nr - 1) * spec.vw >= p.n)) {
    return "exceeds_shape";
  }
  return nullptr;
}

namespace {

/// The mapping of one FMA sketch: needs the sketch's CPU features and f32 operands.
class FmaMatMulMapping final : public MappingSketch {
 public:
  explicit FmaMatMulMapping(FmaMappingSpec spec) : sketch_(std::move(spec)) {}
  const char* Name() const override { return sketch_.spec().mapping; }
  const Sketch& sketch() const override { return sketch_; }
  MappingVerdict Explain(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    return FmaVerdict(Name(), sketch_.spec(), w, hw,
                      absl::StrCat(sketch_.spec().vw, "-lane FMA micro-kernels over ",
                                   sketch_.spec().registers, " vector registers"));
  }

 private:
  FmaMatMulSketch sketch_;
};

}  // namespace

MappingVerdict FmaVerdict(const char* mapping, const FmaMappingSpec& spec, const ir::Workload& w,
                          const target::HardwareInfo& hw, const std::string& what) {
  std::string reason = MissingCpuFeatures(hw, spec.features);
  if (reason.empty()) reason = NonF32Operands(w);
  if (!reason.empty()) return {mapping, false, reason};
  return {mapping, true,
          absl::StrCat(absl::StrJoin(spec.features, "+"), " present: ", what, ", f32 operands")};
}

FmaMappingSpec Avx512FmaSpec() {
  return {"mm_avx512_fma/v1", "avx512_fma", {"avx512f"}, 16, 32, {4, 6, 8, 12, 14}, {1, 2, 3, 4}};
}

FmaMappingSpec Avx2FmaSpec() {
  return {"mm_avx2_fma/v1", "avx2_fma", {"avx2", "fma"}, 8, 16, {2, 3, 4, 6}, {1, 2, 3}};
}

}  // namespace internal

const MappingSketch& Avx512FmaMatMulMapping() {
  static const internal::FmaMatMulMapping* const mapping =
      new internal::FmaMatMulMapping(internal::Avx512FmaSpec());
  return *mapping;
}

const MappingSketch& Avx2FmaMatMulMapping() {
  static const internal::FmaMatMulMapping* const mapping =
      new internal::FmaMatMulMapping(internal::Avx2FmaSpec());
  return *mapping;
}

absl::StatusOr<std::optional<PrepackedOperand>> PrepackConstantB(const ir::Workload& w,
                                                                 const schedule::Trace& t,
                                                                 const std::vector<float>& b) {
  if (w.anchor == ir::AnchorKind::kConv) {
    if (t.sketch == internal::kAmxConvSketchName) return internal::PrepackAmxConvWeights(w, t, b);
    if (t.sketch == internal::kBf16ConvSketchName) return internal::PrepackBf16ConvWeights(w, t, b);
    if (t.sketch == internal::kBf16ChannelsConvSketchName) {
      return internal::PrepackBf16ChannelsConvWeights(w, t, b);
    }
    if (t.sketch.find("_winograd/") != std::string::npos) {
      return internal::PrepackWinogradConvWeights(w, t, b);
    }
    return internal::PrepackChannelConvWeights(w, t, b);
  }
  if (w.anchor != ir::AnchorKind::kMatMul) return std::optional<PrepackedOperand>();
  // The low-precision matmuls that read B pre-packed (PrepackLowpB knows which; nullopt for
  // the others).
  GTCO_ASSIGN_OR_RETURN(std::optional<PrepackedOperand> lowp, internal::PrepackLowpB(w, t, b));
  if (lowp.has_value()) return lowp;
  int64_t vw = 0;
  for (const internal::FmaMappingSpec& spec :
       {internal::Avx512FmaSpec(), internal::Avx2FmaSpec()}) {
    if (t.sketch == spec.sketch_name) vw = spec.vw;
  }
  const ir::MatMulParams& p = w.matmul;
  if (vw == 0 || p.b_batched || p.trans_b) return std::optional<PrepackedOperand>();
  GTCO_RETURN_IF_ERROR(internal::CheckMatMulShapes(w));
  if (static_cast<int64_t>(b.size()) != p.k * p.n) {
    return absl::InvalidArgumentError(
        absl::StrCat("B has ", b.size(), " elements, not ", p.k, " x ", p.n));
  }
  GTCO_ASSIGN_OR_RETURN(const KnobValues values, internal::BlockedTraceValues(w, t));
  GTCO_ASSIGN_OR_RETURN(PrepackedOperand prepacked,
                        internal::PrepackForView(t, values, p, vw, b.data()));
  return std::optional<PrepackedOperand>(std::move(prepacked));
}

schedule::Trace WithPackB(schedule::Trace t, int64_t pack_b) {
  for (auto& [name, value] : t.decisions) {
    if (name == "pack_b") value = pack_b;
  }
  return t;
}

bool ReadsPrepackedInput(const schedule::Trace& t) {
  return std::any_of(t.decisions.begin(), t.decisions.end(), [](const auto& decision) {
    return decision.first == "pack_b" && decision.second == internal::kPackBPrepacked;
  });
}

absl::Status PackInputsForTrace(const ir::Workload& w, const schedule::Trace& t,
                                std::vector<std::vector<float>>* inputs) {
  if (!ReadsPrepackedInput(t) || inputs->size() < 2) return absl::OkStatus();
  GTCO_ASSIGN_OR_RETURN(std::optional<PrepackedOperand> packed,
                        PrepackConstantB(w, t, (*inputs)[1]));
  if (packed.has_value()) (*inputs)[1] = std::move(packed->data);
  return absl::OkStatus();
}

}  // namespace gtco::kernels
