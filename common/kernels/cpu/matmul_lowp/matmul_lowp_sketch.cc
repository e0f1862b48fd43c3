// The low-precision matmul mappings ("avx512_bf16", "avx512_vnni", "avx2_int8", "amx_bf16",
// "amx_int8"): verdicts, knobs and pruning; the loop nest itself is built by
// matmul_lowp_lowering.cc.
#include "common/kernels/cpu/matmul_lowp/matmul_lowp_sketch.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/kernels/cpu/matmul_lowp/matmul_lowp_lowering.h"
#include "common/kernels/family.h"
#include "common/schedule/lower_util.h"
#include "common/util/status.h"

namespace gtco::kernels {
namespace {

using internal::kLowpLanes;
using internal::LowpDecisions;

enum KnobIdx { kMr, kNr, kNc, kMc, kPar, kUnrollK, kPackB, kKc, kPf };

/// The low-precision mappings.
enum class LowpKind { kBf16, kVnni, kAvx2Int8, kAmxBf16, kAmxInt8 };

bool IsBf16Kind(LowpKind kind) { return kind == LowpKind::kBf16 || kind == LowpKind::kAmxBf16; }
bool IsAmxKind(LowpKind kind) { return kind == LowpKind::kAmxBf16 || kind == LowpKind::kAmxInt8; }

const char* MappingName(LowpKind kind) {
  switch (kind) {
    case LowpKind::kBf16:
      return kAvx512Bf16Mapping;
    case LowpKind::kVnni:
      return kAvx512VnniMapping;
    case LowpKind::kAvx2Int8:
      return kAvx2Int8Mapping;
    case LowpKind::kAmxBf16:
      return kAmxBf16Mapping;
    case LowpKind::kAmxInt8:
      return kAmxInt8Mapping;
  }
  return "";
}

bool IsInt8(ir::DType dtype) { return dtype == ir::DType::kU8 || dtype == ir::DType::kI8; }

/// Values below `limit` from `choices`, then `limit` itself.
std::vector<int64_t> BlockChoices(const std::vector<int64_t>& choices, int64_t limit) {
  std::vector<int64_t> values;
  for (int64_t choice : choices) {
    if (choice < limit) values.push_back(choice);
  }
  values.push_back(limit);
  return values;
}

/// The workload half of a verdict: empty when `w` is a matmul this mapping computes.
std::string WorkloadMismatch(const ir::Workload& w, bool bf16) {
  if (w.anchor != ir::AnchorKind::kMatMul || w.inputs.size() < 2) return "not a matmul workload";
  const ir::DType a = w.inputs[0].dtype, b = w.inputs[1].dtype;
  if (bf16 && (a != ir::DType::kBF16 || b != ir::DType::kBF16)) {
    return absl::StrCat("inputs are ", ir::DTypeName(a), " x ", ir::DTypeName(b),
                        ", not bf16 x bf16");
  }
  if (!bf16 && !(IsInt8(a) && IsInt8(b))) {
    return absl::StrCat("inputs are ", ir::DTypeName(a), " x ", ir::DTypeName(b),
                        ", not 8-bit integers (u8|i8 x u8|i8)");
  }
  if (absl::Status valid = internal::CheckLowpWorkload(w); !valid.ok()) {
    return std::string(valid.message());
  }
  const int64_t group = bf16 ? 2 : 4;
  const int64_t min_panel = (w.matmul.k + group - 1) / group * kLowpLanes * 4;
  if (min_panel > internal::kMaxPanelBytes) {
    return absl::StrCat("K = ", w.matmul.k, " is too large for a ", internal::kMaxPanelBytes,
                        "-byte packed B panel");
  }
  return "";
}

MappingVerdict Verdict(const ir::Workload& w, const target::HardwareInfo& hw, LowpKind kind) {
  const bool bf16 = IsBf16Kind(kind);
  const char* name = MappingName(kind);
  const std::string mismatch = WorkloadMismatch(w, bf16);
  if (!mismatch.empty()) return {name, false, mismatch};
  if (hw.target != target::Target::kCpu) {
    return {name, false, absl::StrCat("target '", target::TargetName(hw.target), "' is not a CPU")};
  }
  if (kind == LowpKind::kAvx2Int8) {
    const std::string missing = MissingCpuFeatures(hw, {"avx2", "fma"});
    if (!missing.empty()) return {name, false, missing};
    if (MissingCpuFeatures(hw, {"avx512f", "avx512_vnni"}).empty()) {
      return {name, false, "avx512_vnni is present: the avx512_vnni mapping runs these"};
    }
    return {name, true,
            absl::StrCat(ir::DTypeName(w.inputs[0].dtype), " x ", ir::DTypeName(w.inputs[1].dtype),
                         ", no avx512_vnni: the fallback, u8 x s8 quads as widened exact "
                         "products on 8-lane AVX2 vectors")};
  }
  if (IsAmxKind(kind)) {
    if (const std::string why = internal::AmxShapeMismatch(w); !why.empty()) {
      return {name, false, why};
    }
    // The write-back (corrections, epilogue) runs on 16-lane AVX-512 vectors, and the column
    // sums of a pre-packed int8 B on VNNI dot products.
    const std::string missing =
        bf16 ? MissingCpuFeatures(hw, {"avx512f", "amx_tile", "amx_bf16"})
             : MissingCpuFeatures(hw, {"avx512f", "avx512_vnni", "amx_tile", "amx_int8"});
    if (!missing.empty()) return {name, false, missing};
    return {name, true,
            absl::StrCat(ir::DTypeName(w.inputs[0].dtype), " x ", ir::DTypeName(w.inputs[1].dtype),
                         ", AMX present: ", bf16 ? "tdpbf16ps" : "tdpb[su][su]d",
                         " on 16-row A tiles read in place and 16-column tiles of a packed B "
                         "panel, up to 8 tile registers")};
  }
  const std::string missing =
      MissingCpuFeatures(hw, {"avx512f", bf16 ? "avx512_bf16" : "avx512_vnni"});
  if (!missing.empty()) return {name, false, missing};
  return {
      name, true,
      bf16 ? "bf16 x bf16, avx512_bf16 present: vdpbf16ps on bf16 pairs of a packed B panel"
           : absl::StrCat(ir::DTypeName(w.inputs[0].dtype), " x ", ir::DTypeName(w.inputs[1].dtype),
                          ", avx512_vnni present: vpdpbusd on u8 x s8 quads of a packed B "
                          "panel with sign/zero-point corrections")};
}

LowpDecisions ToDecisions(const KnobValues& values, LowpKind kind) {
  LowpDecisions d;
  if (kind == LowpKind::kAvx2Int8) {
    d.lanes = internal::kAvx2Lanes;
    d.wide_dot = true;
  }
  d.amx = IsAmxKind(kind);
  // "/v2" traces (AMX, and AVX-512 with B pre-packable) carry pack_b; "/v1" ones pack B.
  if (values.size() > kPackB) d.pack_b = values[kPackB];
  if (d.amx && values.size() > kKc) d.kc = values[kKc];  // "/v1" AMX traces: the whole K
  if (d.amx && values.size() > kPf) d.prefetch = values[kPf] != 0;
  d.mr = values[kMr];
  d.nr = values[kNr];
  d.nc = values[kNc];
  d.mc = values[kMc];
  d.par = values[kPar];
  d.unroll_k = values[kUnrollK];
  return d;
}

/// Columns of one of `shares` equal N blocks, rounded up to 96 (a multiple of every AMX block
/// width).
int64_t EqualShareColumns(int64_t n, int64_t shares) {
  return (n + 96 * shares - 1) / (96 * shares) * 96;
}

/// K blocks the AMX sketches search besides the whole K: for each of 512, 1024 and 2048
/// elements the largest divisor of K at most that large which is a whole number of tile rows
/// (`k_step` elements) and at least 8 of them, below K.
std::vector<int64_t> KBlockChoices(int64_t k, int64_t k_step) {
  std::vector<int64_t> values = {k};
  for (const int64_t target : {512, 1024, 2048}) {
    for (int64_t kc = std::min(target, k / 2) / k_step * k_step; kc >= 8 * k_step; kc -= k_step) {
      if (k % kc != 0) continue;
      if (std::find(values.begin(), values.end(), kc) == values.end()) values.push_back(kc);
      break;
    }
  }
  return values;
}

/// Whether a vector (AVX-512) sketch of `kind` can read B pre-packed: the 16-lane kinds, each
/// B word the kernel reads as it is stored (not u8 B, which packing shifts to s8).
bool VectorPrepackKind(LowpKind kind) { return kind == LowpKind::kBf16 || kind == LowpKind::kVnni; }

class LowpMatMulSketch final : public LoopSketch {
 public:
  /// `v2`: the AMX sketches' "/v2" with the kc and pf knobs, the AVX-512 ones' "/v2" with
  /// pack_b (else the "/v1" they replaced, kept so that stored traces replay: the whole K per
  /// block, B packed in every call).
  explicit LowpMatMulSketch(LowpKind kind, bool v2 = false)
      : kind_(kind),
        bf16_(IsBf16Kind(kind)),
        k_blocks_(v2 && IsAmxKind(kind)),
        vector_pack_b_(v2 && VectorPrepackKind(kind)) {}

  LowpKind kind() const { return kind_; }

  const char* Name() const override {
    switch (kind_) {
      case LowpKind::kBf16:
        return vector_pack_b_ ? "mm_avx512_bf16/v2" : "mm_avx512_bf16/v1";
      case LowpKind::kVnni:
        return vector_pack_b_ ? "mm_avx512_vnni/v2" : "mm_avx512_vnni/v1";
      case LowpKind::kAvx2Int8:
        return "mm_avx2_int8/v1";
      case LowpKind::kAmxBf16:
        return k_blocks_ ? "mm_amx_bf16/v2" : "mm_amx_bf16/v1";
      case LowpKind::kAmxInt8:
        return k_blocks_ ? "mm_amx_int8/v2" : "mm_amx_int8/v1";
    }
    return "";
  }
  std::vector<std::string> KnobNames() const override {
    if (IsAmxKind(kind_) && k_blocks_) {
      return {"mr", "nr", "nc", "mc", "par", "unroll_k", "pack_b", "kc", "pf"};
    }
    if (IsAmxKind(kind_) || vector_pack_b_) {
      return {"mr", "nr", "nc", "mc", "par", "unroll_k", "pack_b"};
    }
    return {"mr", "nr", "nc", "mc", "par", "unroll_k"};
  }
  bool AppliesTo(const ir::Workload& w) const override { return Mismatch(w).empty(); }

  std::vector<Knob> Knobs(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    const ir::MatMulParams& p = w.matmul;
    std::vector<int64_t> par_values = {0};
    if (hw.cores > 1 && p.batch * p.m * p.n * p.k >= (1 << 16)) par_values = {1, 2, 0};
    if (IsAmxKind(kind_)) {  // mr A tiles of 16 rows by nr B tiles of 16 columns
      // B shared by the batch is searched pre-packed, as a model's weights are exported (and a
      // worker packs its random B for the measurement); pack_b 1 replays where B is not a
      // constant of the kernel's own.
      const bool shared_b = !p.b_batched || p.batch == 1;
      // Besides powers of two, the blocks that give each core one or two equal shares (rounded
      // to 96 columns, a multiple of every block width; rows round to the row tile).
      const int64_t cores = std::max(hw.cores, 1);
      std::vector<int64_t> nc = {32, 64, 128, 256, 512, 1024};
      std::vector<int64_t> mc = {32, 64, 128, 256};
      for (const int64_t shares : {cores, 2 * cores}) {
        nc.push_back(EqualShareColumns(p.n, shares));
        mc.push_back((p.m + shares - 1) / shares);
      }
      for (std::vector<int64_t>* values : {&nc, &mc}) {
        std::sort(values->begin(), values->end());
        values->erase(std::unique(values->begin(), values->end()), values->end());
      }
      // Each knob's first value makes the default an untuned workload exports with: one A tile
      // by two B tiles over 64-column panels, in parallel, as the tuner picked for most of
      // ViT-B/16's and BERT-base's matmuls on an AMX host.
      std::vector<int64_t> nc_values = BlockChoices(nc, p.n);
      std::stable_partition(nc_values.begin(), nc_values.end(),
                            [](int64_t value) { return value == 64; });
      std::vector<Knob> knobs = {{"mr", {1, 2, 3}},
                                 {"nr", {2, 1, 3}},
                                 {"nc", nc_values},
                                 {"mc", BlockChoices(mc, p.m)},
                                 {"par", par_values},
                                 {"unroll_k", {1}},
                                 {"pack_b", {shared_b ? internal::kPackBPrepackedLowp : 1}}};
      // K blocks (the whole K first, the default): a long K's A rows (ViT-B/16's FFN2 under
      // bf16x3: 197 x 9216 bf16, 3.6 MB) do not stay in the L2 cache while the panels sweep
      // them unless the task walks K in blocks.
      if (k_blocks_) {
        knobs.push_back({"kc", KBlockChoices(p.k, kAmxTileRowK())});
        // Software prefetch of the B chunk each task reads next (pre-packed B only).
        knobs.push_back({"pf", shared_b ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{0}});
      }
      return knobs;
    }
    // The default (each knob's first value, or the admitted trace nearest to it): 4 rows by 4
    // vectors over 64-column panels, K unrolled twice, B pre-packed: within 5 % of the best of
    // 16 tiles from 4 x 2 to 8 x 4 on BERT-base's FFN1 and MiniLM's FFN2 (Zen 4, bench
    // lowp_vs_onednn --trace), where the 1 x 1 tile it replaced ran at a fraction of that.
    std::vector<int64_t> mr_values;
    for (int64_t mr = 1; mr <= std::min<int64_t>(8, p.m); ++mr) mr_values.push_back(mr);
    std::stable_partition(mr_values.begin(), mr_values.end(),
                          [](int64_t value) { return value == 4; });
    std::vector<int64_t> nc_values = BlockChoices({16, 64, 128, 256, 512, 1024}, p.n);
    std::stable_partition(nc_values.begin(), nc_values.end(),
                          [](int64_t value) { return value == 64; });
    std::vector<Knob> knobs = {
        {"mr", mr_values},   {"nr", {4, 1, 2, 3}},
        {"nc", nc_values},   {"mc", BlockChoices({16, 32, 64, 128, 256}, p.m)},
        {"par", par_values}, {"unroll_k", {2, 1, 4}}};
    if (vector_pack_b_) {
      // B read as a model's weights are exported (pre-packed once) where one B is shared by the
      // batch and stored as the kernel reads it.
      const bool prepackable =
          (!p.b_batched || p.batch == 1) && w.inputs[1].dtype != ir::DType::kU8;
      knobs.push_back({"pack_b", prepackable
                                     ? std::vector<int64_t>{internal::kPackBPrepackedLowp, 1}
                                     : std::vector<int64_t>{1}});
    }
    return knobs;
  }

  bool Admits(const ir::Workload& w, const target::HardwareInfo& hw,
              const KnobValues& values) const override {
    const ir::MatMulParams& p = w.matmul;
    const bool avx2 = kind_ == LowpKind::kAvx2Int8, amx = IsAmxKind(kind_);
    const int64_t lanes = avx2 ? internal::kAvx2Lanes : kLowpLanes;
    const int64_t mr = values[kMr], nr = values[kNr], tile_cols = nr * lanes;
    const int64_t tile_rows = amx ? mr * internal::kAmxTileRows : mr;
    if (amx) {
      // mr x nr accumulator tiles, mr A tiles and nr B tiles in the 8 tile registers; a second
      // A tile only when M has rows for it.
      if (mr * nr + mr + nr > 8) return false;
      if (tile_rows > (p.m + internal::kAmxTileRows - 1) / internal::kAmxTileRows *
                          internal::kAmxTileRows &&
          mr > 1) {
        return false;
      }
    } else if (mr * nr + nr + 1 > (avx2 ? 12 : 32)) {
      // mr x nr accumulators, nr B vectors and one broadcast A word in the 32 zmm registers; on
      // AVX2 16 ymm registers, four of them left to the widened products.
      return false;
    }
    const int64_t n_rounded16 = (p.n + lanes - 1) / lanes * lanes;
    if (tile_cols > n_rounded16 && nr > 1) return false;  // wasted columns
    if (values[kNc] < tile_cols && values[kNc] != p.n) return false;
    if (values[kMc] < tile_rows && values[kMc] != p.m) return false;
    auto plan = internal::MakeLowpPlan(w, ToDecisions(values, kind_));
    if (!plan.ok()) return false;
    if (values[kPar] == 2 && plan->m_blocks == 1) return false;  // same as par 1
    // With per-M-block tasks the next task reads the same panel: nothing to prefetch.
    if (amx && values.size() > kPf && values[kPf] != 0 && values[kPar] == 2) return false;
    if (values[kUnrollK] > std::max<int64_t>(plan->full_groups, 1)) return false;
    // The packed panel (with K blocks, its part of one K block) should stay in the L2 cache
    // while the row tiles sweep it.
    return internal::PanelBlockBytes(*plan) <= std::max<int64_t>(hw.l2_bytes, 256 * 1024) ||
           plan->panel_cols == tile_cols;
  }

  /// With K blocks on offer, prefetching B where it is pre-packed: 2 x 2 tiles over one panel
  /// per core (each task's A rows of a K block reused by all its column blocks) with the whole
  /// M, at the largest K block up to 1024 and at the smallest; and the default's tiles at the
  /// smallest. ViT-B/16's FFN2 under bf16x3 (197 x 9216 x 768): 1234 / 1248 µs against 1811
  /// for the farm's best whole-K trace (2 x 2 tiles, 32-column panels), warm caches, 2 threads;
  /// prefetching, as the farm measures (weights evicted), FFN2 1659 -> 1437 µs and FFN1 (197 x
  /// 2304 x 3072) 1387 -> 1130 µs for the farm's picks (Emerald Rapids VM, bench/lowp_vs_onednn
  /// --trace).
  std::vector<KnobValues> Seeds(const ir::Workload& w, const target::HardwareInfo& hw,
                                const KnobValues& defaults) const override {
    if (!IsAmxKind(kind_) || !k_blocks_) return {};
    const std::vector<Knob> knobs = Knobs(w, hw);
    const std::vector<int64_t>& kc = knobs[kKc].values;
    if (kc.size() < 2) return {};
    const int64_t share = EqualShareColumns(w.matmul.n, std::max(hw.cores, 1));
    int64_t up_to_1024 = 0;
    for (size_t idx = 1; idx < kc.size(); ++idx) {
      if (kc[idx] <= 1024) up_to_1024 = std::max(up_to_1024, kc[idx]);
    }
    const int64_t prefetch = knobs[kPf].values.back();
    std::vector<KnobValues> seeds;
    for (const int64_t block : {up_to_1024, kc[1]}) {
      if (block == 0) continue;
      KnobValues seed = defaults;
      seed[kMr] = 2;
      seed[kNr] = 2;
      if (std::find(knobs[kNc].values.begin(), knobs[kNc].values.end(), share) !=
          knobs[kNc].values.end()) {
        seed[kNc] = share;
      }
      seed[kMc] = knobs[kMc].values.back();  // the whole M
      seed[kKc] = block;
      seed[kPf] = prefetch;
      if (std::find(seeds.begin(), seeds.end(), seed) == seeds.end()) seeds.push_back(seed);
    }
    KnobValues seed = defaults;
    seed[kKc] = kc[1];
    seed[kPf] = prefetch;
    seeds.push_back(seed);
    return seeds;
  }

  absl::StatusOr<ir::LoweredFunc> Lower(const ir::Workload& w, const KnobValues& values,
                                        const std::string& func_name) const override {
    if (values.size() != KnobNames().size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(Name(), " takes ", KnobNames().size(), " decisions"));
    }
    if (const std::string mismatch = Mismatch(w); !mismatch.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(Name(), ": ", mismatch));
    }
    GTCO_ASSIGN_OR_RETURN(const internal::LowpPlan plan,
                          internal::MakeLowpPlan(w, ToDecisions(values, kind_)));
    return internal::LowerLowpMatMul(w, plan, func_name);
  }

 private:
  /// The workload half of the verdict (with the AMX tiles' shape limits).
  std::string Mismatch(const ir::Workload& w) const {
    std::string mismatch = WorkloadMismatch(w, bf16_);
    if (mismatch.empty() && IsAmxKind(kind_)) mismatch = internal::AmxShapeMismatch(w);
    return mismatch;
  }

  /// K elements per AMX tile row: 32 bf16 or 64 int8 values.
  int64_t kAmxTileRowK() const { return internal::kAmxTileRows * (bf16_ ? 2 : 4); }

  const LowpKind kind_;
  const bool bf16_;
  const bool k_blocks_;
  const bool vector_pack_b_;
};

/// The registry entry of one low-precision mapping.
class LowpMapping final : public MappingSketch {
 public:
  LowpMapping(LowpKind kind, const Sketch& sketch)
      : kind_(kind), bf16_(IsBf16Kind(kind)), sketch_(sketch) {}
  const char* Name() const override { return MappingName(kind_); }
  const Sketch& sketch() const override { return sketch_; }
  /// Every matmul whose inputs are of this mapping's family (so a transposed or oversized one
  /// is explained, not silently skipped).
  bool Considers(const ir::Workload& w) const override {
    if (w.anchor != ir::AnchorKind::kMatMul || w.inputs.size() < 2) return false;
    const ir::DType a = w.inputs[0].dtype, b = w.inputs[1].dtype;
    return bf16_ ? a == ir::DType::kBF16 && b == ir::DType::kBF16 : IsInt8(a) && IsInt8(b);
  }
  MappingVerdict Explain(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    return Verdict(w, hw, kind_);
  }

 private:
  const LowpKind kind_;
  const bool bf16_;
  const Sketch& sketch_;
};

}  // namespace

MappingVerdict Avx512Bf16Verdict(const ir::Workload& w, const target::HardwareInfo& hw) {
  return Verdict(w, hw, LowpKind::kBf16);
}

MappingVerdict Avx512VnniVerdict(const ir::Workload& w, const target::HardwareInfo& hw) {
  return Verdict(w, hw, LowpKind::kVnni);
}

MappingVerdict Avx2Int8Verdict(const ir::Workload& w, const target::HardwareInfo& hw) {
  return Verdict(w, hw, LowpKind::kAvx2Int8);
}

const LoopSketch& MatMulBf16Sketch() {
  static const LowpMatMulSketch* const sketch = new LowpMatMulSketch(LowpKind::kBf16, /*v2=*/true);
  return *sketch;
}

const LoopSketch& MatMulVnniSketch() {
  static const LowpMatMulSketch* const sketch = new LowpMatMulSketch(LowpKind::kVnni, /*v2=*/true);
  return *sketch;
}

const Sketch& MatMulBf16SketchV1() {
  static const LowpMatMulSketch* const sketch = new LowpMatMulSketch(LowpKind::kBf16);
  return *sketch;
}

const Sketch& MatMulVnniSketchV1() {
  static const LowpMatMulSketch* const sketch = new LowpMatMulSketch(LowpKind::kVnni);
  return *sketch;
}

const LoopSketch& MatMulAvx2Int8Sketch() {
  static const LowpMatMulSketch* const sketch = new LowpMatMulSketch(LowpKind::kAvx2Int8);
  return *sketch;
}

const MappingSketch& Avx512Bf16MatMulMapping() {
  static const LowpMapping* const mapping = new LowpMapping(LowpKind::kBf16, MatMulBf16Sketch());
  return *mapping;
}

const MappingSketch& Avx512VnniMatMulMapping() {
  static const LowpMapping* const mapping = new LowpMapping(LowpKind::kVnni, MatMulVnniSketch());
  return *mapping;
}

const MappingSketch& Avx2Int8MatMulMapping() {
  static const LowpMapping* const mapping =
      new LowpMapping(LowpKind::kAvx2Int8, MatMulAvx2Int8Sketch());
  return *mapping;
}

MappingVerdict AmxBf16Verdict(const ir::Workload& w, const target::HardwareInfo& hw) {
  return Verdict(w, hw, LowpKind::kAmxBf16);
}

MappingVerdict AmxInt8Verdict(const ir::Workload& w, const target::HardwareInfo& hw) {
  return Verdict(w, hw, LowpKind::kAmxInt8);
}

const LoopSketch& MatMulAmxBf16Sketch() {
  static const LowpMatMulSketch* const sketch =
      new LowpMatMulSketch(LowpKind::kAmxBf16, /*v2=*/true);
  return *sketch;
}

const LoopSketch& MatMulAmxInt8Sketch() {
  static const LowpMatMulSketch* const sketch =
      new LowpMatMulSketch(LowpKind::kAmxInt8, /*v2=*/true);
  return *sketch;
}

const Sketch& MatMulAmxBf16SketchV1() {
  static const LowpMatMulSketch* const sketch = new LowpMatMulSketch(LowpKind::kAmxBf16);
  return *sketch;
}

const Sketch& MatMulAmxInt8SketchV1() {
  static const LowpMatMulSketch* const sketch = new LowpMatMulSketch(LowpKind::kAmxInt8);
  return *sketch;
}

const MappingSketch& AmxBf16MatMulMapping() {
  static const LowpMapping* const mapping =
      new LowpMapping(LowpKind::kAmxBf16, MatMulAmxBf16Sketch());
  return *mapping;
}

const MappingSketch& AmxInt8MatMulMapping() {
  static const LowpMapping* const mapping =
      new LowpMapping(LowpKind::kAmxInt8, MatMulAmxInt8Sketch());
  return *mapping;
}

namespace internal {

absl::StatusOr<std::optional<PrepackedOperand>> PrepackLowpB(const ir::Workload& w,
                                                             const schedule::Trace& t,
                                                             const std::vector<float>& b) {
  // The sketches with a pack_b knob: AMX (both versions) and the AVX-512 ones' "/v2".
  const LowpMatMulSketch* sketch = nullptr;
  for (const Sketch* candidate :
       {static_cast<const Sketch*>(&MatMulAmxBf16Sketch()),
        static_cast<const Sketch*>(&MatMulAmxInt8Sketch()), &MatMulAmxBf16SketchV1(),
        &MatMulAmxInt8SketchV1(), static_cast<const Sketch*>(&MatMulBf16Sketch()),
        static_cast<const Sketch*>(&MatMulVnniSketch())}) {
    if (t.sketch == candidate->Name()) sketch = static_cast<const LowpMatMulSketch*>(candidate);
  }
  if (sketch == nullptr || !ReadsPrepackedInput(t)) return std::optional<PrepackedOperand>();
  KnobValues values;
  for (const std::string& name : sketch->KnobNames()) {
    const std::optional<int64_t> value = t.Get(name);
    if (!value.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(t.sketch, " trace lacks '", name, "'"));
    }
    values.push_back(*value);
  }
  GTCO_ASSIGN_OR_RETURN(const LowpPlan plan, MakeLowpPlan(w, ToDecisions(values, sketch->kind())));
  const ir::MatMulParams& p = plan.p;
  if (static_cast<int64_t>(b.size()) != p.k * p.n) {
    return absl::InvalidArgumentError(
        absl::StrCat("B has ", b.size(), " elements, not ", p.k, " x ", p.n));
  }
  const int64_t columns = PrepackedColumns(plan);
  PrepackedOperand packed;
  packed.trace = t;
  const int64_t rows = PrepackedRows(plan);  // a tail word's padding is 0
  packed.shape = {rows, columns};
  packed.data.assign(static_cast<size_t>(rows * columns), 0.0f);
  for (int64_t col = 0; col < p.n; ++col) {
    for (int64_t k = 0; k < p.k; ++k) {
      const int64_t g = k / plan.group, q = k % plan.group;
      const int64_t word = (col / kLowpLanes * plan.k_groups + g) * kLowpLanes + col % kLowpLanes;
      packed.data[static_cast<size_t>(word * plan.group + q)] =
          b[static_cast<size_t>(p.trans_b ? col * p.k + k : k * p.n + col)];
    }
  }
  return std::optional<PrepackedOperand>(std::move(packed));
}

}  // namespace internal
}  // namespace gtco::kernels
