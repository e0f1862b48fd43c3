// Results of the CPU-vs-vendor benchmark and their rendering: the markdown report (machine,
// versions, command, tables, misses, tuning-curve summary) and the tuning-curve CSV.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "bench/bench_cases.h"
#include "bench/timing.h"
#include "bench/tuner.h"
#include "common/target/target.h"

namespace gtco::bench {

/// The minimum fraction of oneDNN's throughput each GEMM must reach (the benchmark's acceptance target).
inline constexpr double kGemmTargetRatio = 0.9;

/// One case: how it was tuned and the back-to-back latencies of every implementation.
struct CaseTiming {
  BenchCase bench_case;
  TuneResult tune;
  std::optional<TimingStats> ours, openblas, onednn, plain;
  /// Bandwidth of a copy whose footprint equals the case's MinBytes (cache-resident roof).
  double cache_copy_gbps = 0;
  std::vector<std::string> notes;  ///< verification failures and unavailable baselines
};

/// One tuning run of the curve task.
struct CurveRun {
  SearchKind kind;
  bool prior = false;  ///< the cost model was warm-started from the other tasks' records
  uint64_t seed = 1;
  TuneResult result;

  /// "random", "model", "model+prior", ...
  std::string Label() const;
};


struct ReportContext {
  target::HardwareInfo hw;
  std::string date_utc;
  std::string command;
  std::string openblas_version, onednn_version;
  int threads = 2;
  int trials = 0;
  SearchKind search = SearchKind::kEvolutionary;
  StreamBandwidth dram;
  std::string curve_case;  ///< id of the curve task ("" when no curve was run)
  std::string curve_png;   ///< file name of the plotted curve
  std::string load_before, load_timing, load_after;  ///< /proc/loadavg: start, timing, end
  std::string retimed_from;  ///< the tuned-traces TSV when tuning was skipped (--retime)
};

/// 1-based trial at which best_so_far first reaches `target_seconds` or better; 0 when never.
int TrialsToReach(const std::vector<double>& best_so_far, double target_seconds);

/// The full markdown report.
std::string RenderReport(const ReportContext& context, const std::vector<CaseTiming>& cases,
                         const std::vector<CurveRun>& curve);

/// "trial,<label>_s<seed>_best_us,..." with one row per trial (empty cell when a run is shorter or has no
/// success yet).
std::string RenderCurveCsv(const std::vector<CurveRun>& curve);

}  // namespace gtco::bench
