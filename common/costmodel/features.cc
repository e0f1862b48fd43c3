// Program features for the cost model: one pass of the loop-nest analysis, then whole-program
// summaries (totals, work-weighted means over statements, and the dominant statement's shape).
#include "common/costmodel/features.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <unordered_map>

#include "common/costmodel/loop_nest_analysis.h"

namespace gtco::costmodel {
namespace {

// Vector order of the features; kFeatureNames below spells them in the same order.
enum FeatureIdx : int {
  // Work.
  kLogFlops,
  kLogIntOps,
  kLogIntOpsPerFlop,
  kLogMathCalls,
  kLogExpCalls,
  kLogErfTanhCalls,
  kLogSqrtCalls,
  kLogBranches,
  // Memory traffic and arithmetic intensity.
  kLogGlobalLoadBytes,
  kLogGlobalStoreBytes,
  kLogLocalAccesses,
  kLogUniqueGlobalBytes,
  kLogMaxBufferBytes,
  kLogGlobalReread,
  kLogIntensityDynamic,
  kLogIntensityUnique,
  kLogTrafficL1,
  kLogTrafficL2,
  kLogTrafficL3,
  kLogIntensityL1,
  kLogIntensityL2,
  // Loop structure and parallelism.
  kLogNumLoops,
  kLogSerialLoops,
  kLogParallelLoops,
  kLogVectorizedLoops,
  kLogUnrolledLoops,
  kMaxLoopDepth,
  kHasParallel,
  kLogParallelExtent,
  kLogParallelPerCore,
  kParallelBalance,
  kParallelFlopFraction,
  kLogFlopsPerTask,
  // Vectorization.
  kMaxVectorWidth,
  kVectorWidthWeighted,
  kVectorWidthVsHw,
  kVectorizedFlopFraction,
  kVectorizedAccessFraction,
  kVecContiguousFraction,
  kVecStridedFraction,
  kVecBroadcastFraction,
  kVecGatherFraction,
  kLogVecContiguousCount,
  kLogVecStridedCount,
  kLogVecBroadcastCount,
  kLogVecGatherCount,
  // Unrolling and the innermost serial loop.
  kLogMaxUnrollProduct,
  kLogUnrollWeighted,
  kLogInnermostExtentWeighted,
  kInnermostInvariantFraction,
  kInnermostUnitStrideFraction,
  kInnermostLargeStrideFraction,
  // Cache footprints (work-weighted) relative to the hardware's caches.
  kLog2FootprintLvl1,
  kLog2FootprintLvl2,
  kLog2FootprintLvl3,
  kFootprintLvl1VsL1,
  kFootprintLvl2VsL1,
  kFootprintLvl2VsL2,
  kFootprintLvl3VsL2,
  kLogReuseLvl1,
  kLogReuseLvl2,
  kLogReuseLvl3,
  // Local buffers (register tiles, accumulators).
  kLogNumAllocates,
  kLogAllocTotalBytes,
  kLogMaxAllocBytes,
  // Stores and accumulation.
  kLogNumStores,
  kAccumulationFraction,
  kLoopCarriedAccumFraction,
  kGlobalAccumFraction,
  // The dominant statement (the most work).
  kDominantWorkFraction,
  kLogDominantInnermostExtent,
  kDominantSerialDepth,
  kDominantVectorWidth,
  kLogDominantUnroll,
  kLogDominantLocalBytes,
  kDominantTileVsRegisters,
  kNumFeatures
};

// Features indexed as a run (base + offset) below.
static_assert(kVecGatherFraction == kVecContiguousFraction + 3, "lane pattern run");
static_assert(kLogVecGatherCount == kLogVecContiguousCount + 3, "lane pattern run");
static_assert(kLog2FootprintLvl3 == kLog2FootprintLvl1 + 2, "footprint run");
static_assert(kLogReuseLvl3 == kLogReuseLvl1 + 2, "reuse run");

constexpr std::array<const char*, kNumFeatures> kFeatureNames = {"log_flops",
                                                                 "log_int_ops",
                                                                 "log_int_ops_per_flop",
                                                                 "log_math_calls",
                                                                 "log_exp_calls",
                                                                 "log_erf_tanh_calls",
                                                                 "log_sqrt_calls",
                                                                 "log_branches",
                                                                 "log_global_load_bytes",
                                                                 "log_global_store_bytes",
                                                                 "log_local_accesses",
                                                                 "log_unique_global_bytes",
                                                                 "log_max_buffer_bytes",
                                                                 "log_global_reread",
                                                                 "log_intensity_dynamic",
                                                                 "log_intensity_unique",
                                                                 "log_traffic_l1",
                                                                 "log_traffic_l2",
                                                                 "log_traffic_l3",
                                                                 "log_intensity_l1",
                                                                 "log_intensity_l2",
                                                                 "log_num_loops",
                                                                 "log_serial_loops",
                                                                 "log_parallel_loops",
                                                                 "log_vectorized_loops",
                                                                 "log_unrolled_loops",
                                                                 "max_loop_depth",
                                                                 "has_parallel",
                                                                 "log_parallel_extent",
                                                                 "log_parallel_per_core",
                                                                 "parallel_balance",
                                                                 "parallel_flop_fraction",
                                                                 "log_flops_per_task",
                                                                 "max_vector_width",
                                                                 "vector_width_weighted",
                                                                 "vector_width_vs_hw",
                                                                 "vectorized_flop_fraction",
                                                                 "vectorized_access_fraction",
                                                                 "vec_contiguous_fraction",
                                                                 "vec_strided_fraction",
                                                                 "vec_broadcast_fraction",
                                                                 "vec_gather_fraction",
                                                                 "log_vec_contiguous_count",
                                                                 "log_vec_strided_count",
                                                                 "log_vec_broadcast_count",
                                                                 "log_vec_gather_count",
                                                                 "log_max_unroll_product",
                                                                 "log_unroll_weighted",
                                                                 "log_innermost_extent_weighted",
                                                                 "innermost_invariant_fraction",
                                                                 "innermost_unit_stride_fraction",
                                                                 "innermost_large_stride_fraction",
                                                                 "log2_footprint_lvl1",
                                                                 "log2_footprint_lvl2",
                                                                 "log2_footprint_lvl3",
                                                                 "footprint_lvl1_vs_l1",
                                                                 "footprint_lvl2_vs_l1",
                                                                 "footprint_lvl2_vs_l2",
                                                                 "footprint_lvl3_vs_l2",
                                                                 "log_reuse_lvl1",
                                                                 "log_reuse_lvl2",
                                                                 "log_reuse_lvl3",
                                                                 "log_num_allocates",
                                                                 "log_alloc_total_bytes",
                                                                 "log_max_alloc_bytes",
                                                                 "log_num_stores",
                                                                 "accumulation_fraction",
                                                                 "loop_carried_accum_fraction",
                                                                 "global_accum_fraction",
                                                                 "dominant_work_fraction",
                                                                 "log_dominant_innermost_extent",
                                                                 "dominant_serial_depth",
                                                                 "dominant_vector_width",
                                                                 "log_dominant_unroll",
                                                                 "log_dominant_local_bytes",
                                                                 "dominant_tile_vs_registers"};

using FeatureValues = std::vector<double>;  // computed in double, stored as float

double Log1p(double value) { return std::log1p(std::max(0.0, value)); }
double Ratio(double numerator, double denominator) {
  return denominator > 0 ? numerator / denominator : 0.0;
}
/// log2(bytes / cache) clipped to [-16, 16].
double Log2Relative(double bytes, double cache_bytes) {
  if (bytes <= 0 || cache_bytes <= 0) return -16.0;
  return std::clamp(std::log2(bytes / cache_bytes), -16.0, 16.0);
}

/// Work of a site: its executions times its operations (at least one per execution).
double Work(const StmtSummary& stmt) { return stmt.executions * std::max(1.0, stmt.float_ops); }

int64_t Lanes(const StmtSummary& stmt) {
  for (const LoopFrame& loop : stmt.loops) {
    if (loop.kind == ir::ForKind::kVectorized) return loop.extent;
  }
  return 1;
}

double UnrollProduct(const StmtSummary& stmt) {
  double product = 1.0;
  for (const LoopFrame& loop : stmt.loops) {
    if (loop.kind == ir::ForKind::kUnrolled) product *= static_cast<double>(loop.extent);
  }
  return product;
}

/// Extent of the innermost serial/parallel loop (0 when none).
int64_t InnermostExtent(const StmtSummary& stmt) {
  const int start = LevelStart(stmt, 0);
  return start > 0 ? stmt.loops[start - 1].extent : 0;
}

/// Work-weighted mean of per-site values.
class WeightedMean {
 public:
  void Add(double value, double weight) {
    sum_ += value * weight;
    weight_ += weight;
  }
  double Get() const { return weight_ > 0 ? sum_ / weight_ : 0.0; }

 private:
  double sum_ = 0, weight_ = 0;
};

/// Whole-program sums over the statement summaries.
struct ProgramTotals {
  double flops = 0, int_ops = 0, exp_calls = 0, erf_calls = 0, sqrt_calls = 0;
  double global_load_bytes = 0, global_store_bytes = 0, local_accesses = 0;
  double max_buffer_bytes = 0;  ///< the most-accessed kernel parameter's dynamic bytes
};

ProgramTotals SumTotals(const NestSummary& nest) {
  ProgramTotals totals;
  totals.int_ops = nest.overhead_int_ops;
  std::unordered_map<std::string, double> buffer_bytes;
  for (const StmtSummary& stmt : nest.stmts) {
    totals.flops += stmt.executions * stmt.float_ops;
    totals.int_ops += stmt.executions * stmt.int_ops;
    totals.exp_calls += stmt.executions * stmt.calls.exp_like;
    totals.erf_calls += stmt.executions * stmt.calls.erf_tanh;
    totals.sqrt_calls += stmt.executions * stmt.calls.sqrt_abs;
    for (const Access& access : stmt.accesses) {
      const double executions = stmt.executions / RegisterReuse(stmt, access);
      if (!access.is_global) {
        totals.local_accesses += executions;
        continue;
      }
      const double bytes = executions * access.access_bytes;
      (access.is_store ? totals.global_store_bytes : totals.global_load_bytes) += bytes;
      buffer_bytes[access.buffer] += bytes;
    }
  }
  for (const auto& [buffer, bytes] : buffer_bytes) {
    totals.max_buffer_bytes = std::max(totals.max_buffer_bytes, bytes);
  }
  return totals;
}

/// Work, math calls, memory traffic and arithmetic intensity.
void AddWorkAndMemory(const NestSummary& nest, FeatureValues& f) {
  const ProgramTotals totals = SumTotals(nest);
  const double global_bytes = totals.global_load_bytes + totals.global_store_bytes;
  const double unique_bytes = static_cast<double>(nest.global_bytes);
  f[kLogFlops] = Log1p(totals.flops);
  f[kLogIntOps] = Log1p(totals.int_ops);
  f[kLogIntOpsPerFlop] = Log1p(Ratio(totals.int_ops, std::max(totals.flops, 1.0)));
  f[kLogMathCalls] = Log1p(totals.exp_calls + totals.erf_calls + totals.sqrt_calls);
  f[kLogExpCalls] = Log1p(totals.exp_calls);
  f[kLogErfTanhCalls] = Log1p(totals.erf_calls);
  f[kLogSqrtCalls] = Log1p(totals.sqrt_calls);
  f[kLogBranches] = Log1p(nest.branch_executions);
  f[kLogGlobalLoadBytes] = Log1p(totals.global_load_bytes);
  f[kLogGlobalStoreBytes] = Log1p(totals.global_store_bytes);
  f[kLogLocalAccesses] = Log1p(totals.local_accesses);
  f[kLogUniqueGlobalBytes] = Log1p(unique_bytes);
  f[kLogMaxBufferBytes] = Log1p(totals.max_buffer_bytes);
  f[kLogGlobalReread] = Log1p(Ratio(global_bytes, unique_bytes));
  f[kLogIntensityDynamic] = Log1p(Ratio(totals.flops, global_bytes));
  f[kLogIntensityUnique] = Log1p(Ratio(totals.flops, unique_bytes));
}

/// Stores, and the share of work in read-modify-write accumulations: loop-carried ones (the
/// element stays fixed along the innermost serial loop) and ones into kernel parameters.
void AddAccumulationFeatures(const NestSummary& nest, FeatureValues& f) {
  double accumulation = 0, loop_carried = 0, global_accum = 0, total_work = 0, num_stores = 0;
  for (const StmtSummary& stmt : nest.stmts) {
    const double work = Work(stmt);
    total_work += work;
    if (!stmt.is_store) continue;
    num_stores += 1;
    if (!stmt.accumulates) continue;
    accumulation += work;
    const Access& store = stmt.accesses.back();
    const int inner = LevelStart(stmt, 0) - 1;
    if (inner >= 0 && store.evaluable && store.strides[inner] == 0) loop_carried += work;
    if (store.is_global) global_accum += work;
  }
  f[kLogNumStores] = Log1p(num_stores);
  f[kAccumulationFraction] = Ratio(accumulation, total_work);
  f[kLoopCarriedAccumFraction] = Ratio(loop_carried, total_work);
  f[kGlobalAccumFraction] = Ratio(global_accum, total_work);
}

double AccessBytesPerExecution(const StmtSummary& stmt) {
  double bytes = 0;
  for (const Access& access : stmt.accesses) bytes += access.access_bytes;
  return bytes;
}

/// Bytes brought into a cache of `cache_bytes` by `stmt`: the footprint of the outermost loop
/// level whose footprint still fits, times the trips of the loops outside that level.
double CacheTraffic(const StmtSummary& stmt, double cache_bytes) {
  const int num_loops = static_cast<int>(stmt.loops.size());
  const double all_trips = TripCount(stmt, 0, num_loops);
  if (stmt.accesses.empty() || all_trips <= 0) return 0;
  int chosen_start = num_loops;
  double chosen_bytes = FootprintBytes(stmt, num_loops);
  const int depth = SerialDepth(stmt);
  for (int level = 0; level <= depth; ++level) {
    const int start = LevelStart(stmt, level);
    const double bytes = FootprintBytes(stmt, start);
    if (bytes > cache_bytes) break;
    chosen_start = start;
    chosen_bytes = bytes;
    if (start == 0) break;
  }
  const double branch_factor = stmt.executions / all_trips;
  return chosen_bytes * TripCount(stmt, 0, chosen_start) * branch_factor;
}

void AddCacheFeatures(const NestSummary& nest, const target::HardwareInfo& hw, FeatureValues& f) {
  const double l1 = static_cast<double>(hw.l1d_bytes), l2 = static_cast<double>(hw.l2_bytes);
  const double l3 = static_cast<double>(hw.l3_bytes);
  double traffic_l1 = 0, traffic_l2 = 0, traffic_l3 = 0, flops = 0;
  WeightedMean footprint[3], reuse[3], lvl1_vs_l1, lvl2_vs_l1, lvl2_vs_l2, lvl3_vs_l2;
  for (const StmtSummary& stmt : nest.stmts) {
    flops += stmt.executions * stmt.float_ops;
    traffic_l1 += CacheTraffic(stmt, l1);
    traffic_l2 += CacheTraffic(stmt, l2);
    traffic_l3 += CacheTraffic(stmt, l3);
    if (stmt.accesses.empty()) continue;
    const double work = Work(stmt);
    double bytes[3];
    for (int level = 1; level <= 3; ++level) {
      const int start = LevelStart(stmt, level);
      bytes[level - 1] = FootprintBytes(stmt, start);
      const double touched = AccessBytesPerExecution(stmt) *
                             TripCount(stmt, start, static_cast<int>(stmt.loops.size()));
      footprint[level - 1].Add(std::log2(bytes[level - 1]), work);
      reuse[level - 1].Add(Log1p(Ratio(touched, bytes[level - 1])), work);
    }
    lvl1_vs_l1.Add(Log2Relative(bytes[0], l1), work);
    lvl2_vs_l1.Add(Log2Relative(bytes[1], l1), work);
    lvl2_vs_l2.Add(Log2Relative(bytes[1], l2), work);
    lvl3_vs_l2.Add(Log2Relative(bytes[2], l2), work);
  }
  f[kLogTrafficL1] = Log1p(traffic_l1);
  f[kLogTrafficL2] = Log1p(traffic_l2);
  f[kLogTrafficL3] = Log1p(traffic_l3);
  f[kLogIntensityL1] = Log1p(Ratio(flops, traffic_l1));
  f[kLogIntensityL2] = Log1p(Ratio(flops, traffic_l2));
  for (int level = 0; level < 3; ++level) {
    f[kLog2FootprintLvl1 + level] = footprint[level].Get();
    f[kLogReuseLvl1 + level] = reuse[level].Get();
  }
  f[kFootprintLvl1VsL1] = lvl1_vs_l1.Get();
  f[kFootprintLvl2VsL1] = lvl2_vs_l1.Get();
  f[kFootprintLvl2VsL2] = lvl2_vs_l2.Get();
  f[kFootprintLvl3VsL2] = lvl3_vs_l2.Get();
}

void AddLoopFeatures(const NestSummary& nest, const target::HardwareInfo& hw, FeatureValues& f) {
  const int* loops = nest.num_loops;
  f[kLogNumLoops] = Log1p(loops[0] + loops[1] + loops[2] + loops[3]);
  f[kLogSerialLoops] = Log1p(loops[static_cast<int>(ir::ForKind::kSerial)]);
  f[kLogParallelLoops] = Log1p(loops[static_cast<int>(ir::ForKind::kParallel)]);
  f[kLogVectorizedLoops] = Log1p(loops[static_cast<int>(ir::ForKind::kVectorized)]);
  f[kLogUnrolledLoops] = Log1p(loops[static_cast<int>(ir::ForKind::kUnrolled)]);
  f[kMaxLoopDepth] = nest.max_loop_depth;
  const double cores = std::max(1, hw.cores);
  const double parallel_extent = static_cast<double>(nest.max_parallel_extent);
  f[kHasParallel] = parallel_extent > 0 ? 1.0 : 0.0;
  f[kLogParallelExtent] = Log1p(parallel_extent);
  f[kLogParallelPerCore] = Log1p(parallel_extent / cores);
  // Fraction of the cores' time slots used when the iterations are dealt out evenly.
  f[kParallelBalance] =
      parallel_extent > 0 ? parallel_extent / (std::ceil(parallel_extent / cores) * cores) : 0.0;
  double flops = 0, parallel_flops = 0;
  for (const StmtSummary& stmt : nest.stmts) {
    const double stmt_flops = stmt.executions * stmt.float_ops;
    flops += stmt_flops;
    for (const LoopFrame& loop : stmt.loops) {
      if (loop.kind != ir::ForKind::kParallel) continue;
      parallel_flops += stmt_flops;
      break;
    }
  }
  f[kParallelFlopFraction] = Ratio(parallel_flops, flops);
  f[kLogFlopsPerTask] = Log1p(flops / std::max(1.0, parallel_extent));
}

/// How a vectorized access walks memory along its vector lanes.
enum class LanePattern { kContiguous, kStrided, kBroadcast, kGather };

LanePattern ClassifyLanes(const StmtSummary& stmt, const Access& access) {
  int vector_loop = -1;
  for (int loop_idx = 0; loop_idx < static_cast<int>(stmt.loops.size()); ++loop_idx) {
    if (stmt.loops[loop_idx].kind == ir::ForKind::kVectorized) vector_loop = loop_idx;
  }
  if (!access.evaluable || !access.affine[vector_loop]) return LanePattern::kGather;
  const int64_t stride = access.strides[vector_loop];
  if (stride == 0) return LanePattern::kBroadcast;
  return stride == 1 ? LanePattern::kContiguous : LanePattern::kStrided;
}

void AddVectorFeatures(const NestSummary& nest, const target::HardwareInfo& hw, FeatureValues& f) {
  double flops = 0, vector_flops = 0, accesses = 0, vector_accesses = 0, max_lanes = 0;
  double pattern_weight[4] = {0, 0, 0, 0}, pattern_count[4] = {0, 0, 0, 0};
  double max_unroll = 1;
  WeightedMean lanes_mean, unroll_mean, innermost_mean;
  for (const StmtSummary& stmt : nest.stmts) {
    const int64_t lanes = Lanes(stmt);
    const double work = Work(stmt), unroll = UnrollProduct(stmt);
    flops += stmt.executions * stmt.float_ops;
    accesses += stmt.executions * static_cast<double>(stmt.accesses.size());
    max_lanes = std::max(max_lanes, static_cast<double>(lanes));
    max_unroll = std::max(max_unroll, unroll);
    lanes_mean.Add(static_cast<double>(lanes), work);
    unroll_mean.Add(Log1p(unroll), work);
    innermost_mean.Add(Log1p(static_cast<double>(InnermostExtent(stmt))), work);
    if (lanes <= 1) continue;
    vector_flops += stmt.executions * stmt.float_ops;
    vector_accesses += stmt.executions * static_cast<double>(stmt.accesses.size());
    for (const Access& access : stmt.accesses) {
      const int pattern = static_cast<int>(ClassifyLanes(stmt, access));
      pattern_weight[pattern] += stmt.executions / static_cast<double>(lanes);
      pattern_count[pattern] += 1;
    }
  }
  const double pattern_total =
      pattern_weight[0] + pattern_weight[1] + pattern_weight[2] + pattern_weight[3];
  f[kMaxVectorWidth] = max_lanes;
  f[kVectorWidthWeighted] = lanes_mean.Get();
  f[kVectorWidthVsHw] = lanes_mean.Get() / std::max(1, hw.MaxFloatLanes());
  f[kVectorizedFlopFraction] = Ratio(vector_flops, flops);
  f[kVectorizedAccessFraction] = Ratio(vector_accesses, accesses);
  for (int pattern = 0; pattern < 4; ++pattern) {
    f[kVecContiguousFraction + pattern] = Ratio(pattern_weight[pattern], pattern_total);
    f[kLogVecContiguousCount + pattern] = Log1p(pattern_count[pattern]);
  }
  f[kLogMaxUnrollProduct] = Log1p(max_unroll);
  f[kLogUnrollWeighted] = unroll_mean.Get();
  f[kLogInnermostExtentWeighted] = innermost_mean.Get();
}

/// Strides of global loads along the innermost serial loop: reused, same line, new line.
void AddInnermostStrideFeatures(const NestSummary& nest, FeatureValues& f) {
  double invariant = 0, unit = 0, large = 0;
  for (const StmtSummary& stmt : nest.stmts) {
    const int inner = LevelStart(stmt, 0) - 1;
    if (inner < 0) continue;
    for (const Access& access : stmt.accesses) {
      if (!access.is_global || access.is_store) continue;
      if (!access.evaluable || !access.affine[inner]) {
        large += stmt.executions;
        continue;
      }
      const int64_t stride = std::llabs(access.strides[inner]);
      (stride == 0 ? invariant : stride < 16 ? unit : large) += stmt.executions;
    }
  }
  const double total = invariant + unit + large;
  f[kInnermostInvariantFraction] = Ratio(invariant, total);
  f[kInnermostUnitStrideFraction] = Ratio(unit, total);
  f[kInnermostLargeStrideFraction] = Ratio(large, total);
}

void AddLocalAndDominantFeatures(const NestSummary& nest, const target::HardwareInfo& hw,
                                 FeatureValues& f) {
  double alloc_total = 0, alloc_max = 0;
  for (int64_t bytes : nest.allocate_bytes) {
    alloc_total += static_cast<double>(bytes);
    alloc_max = std::max(alloc_max, static_cast<double>(bytes));
  }
  f[kLogNumAllocates] = Log1p(static_cast<double>(nest.allocate_bytes.size()));
  f[kLogAllocTotalBytes] = Log1p(alloc_total);
  f[kLogMaxAllocBytes] = Log1p(alloc_max);
  const StmtSummary* dominant = nullptr;
  double total_work = 0;
  for (const StmtSummary& stmt : nest.stmts) {
    total_work += Work(stmt);
    if (dominant == nullptr || Work(stmt) > Work(*dominant)) dominant = &stmt;
  }
  if (dominant == nullptr) return;
  // The register tile: the local buffer the dominant statement accumulates into (else the
  // largest local buffer it reads).
  double local_bytes = 0;
  for (const Access& access : dominant->accesses) {
    if (access.is_global) continue;
    const double bytes = static_cast<double>(access.buffer_elements) * access.buffer_element_bytes;
    local_bytes = access.is_store ? bytes : std::max(local_bytes, bytes);
  }
  const double register_file_bytes =
      (hw.HasFeature("avx512f") ? 32.0 : 16.0) * hw.MaxFloatLanes() * 4.0;
  f[kDominantWorkFraction] = Ratio(Work(*dominant), total_work);
  f[kLogDominantInnermostExtent] = Log1p(static_cast<double>(InnermostExtent(*dominant)));
  f[kDominantSerialDepth] = SerialDepth(*dominant);
  f[kDominantVectorWidth] = static_cast<double>(Lanes(*dominant));
  f[kLogDominantUnroll] = Log1p(UnrollProduct(*dominant));
  f[kLogDominantLocalBytes] = Log1p(local_bytes);
  f[kDominantTileVsRegisters] = local_bytes / register_file_bytes;
}

}  // namespace

const std::vector<std::string>& FeatureNames() {
  static const std::vector<std::string>* const names =
      new std::vector<std::string>(kFeatureNames.begin(), kFeatureNames.end());
  return *names;
}

Features ExtractFeatures(const ir::LoweredFunc& func, const target::HardwareInfo& hw) {
  const NestSummary nest = AnalyzeLoopNest(func);
  Features features(kNumFeatures, 0.0f);
  std::vector<double> values(kNumFeatures, 0.0);
  AddWorkAndMemory(nest, values);
  AddAccumulationFeatures(nest, values);
  AddCacheFeatures(nest, hw, values);
  AddLoopFeatures(nest, hw, values);
  AddVectorFeatures(nest, hw, values);
  AddInnermostStrideFeatures(nest, values);
  AddLocalAndDominantFeatures(nest, hw, values);
  for (int feature_idx = 0; feature_idx < kNumFeatures; ++feature_idx) {
    const double value = values[feature_idx];
    features[feature_idx] = std::isfinite(value) ? static_cast<float>(value) : 0.0f;
  }
  return features;
}

}  // namespace gtco::costmodel
