// Markdown report and tuning-curve CSV of the CPU-vs-vendor benchmark.
#include "bench/report.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "bench/machine.h"

namespace gtco::bench {
namespace {

std::string Micros(const std::optional<TimingStats>& stats) {
  if (!stats) return "n/a";
  return absl::StrFormat("%.1f ±%.0f%%", stats->median * 1e6, stats->Spread() * 100);
}

/// Throughput of ours relative to `vendor` (= vendor latency / our latency), e.g. "0.93×".
std::optional<double> Ratio(const CaseTiming& timing, const std::optional<TimingStats>& vendor) {
  if (!timing.ours || !vendor) return std::nullopt;
  return vendor->median / timing.ours->median;
}

/// The median ratio, then in parentheses the ratio of the fastest runs (less sensitive to
/// other processes on a shared machine: interference only ever adds time).
std::string RatioCell(const CaseTiming& timing, const std::optional<TimingStats>& vendor) {
  std::optional<double> ratio = Ratio(timing, vendor);
  if (!ratio) return "n/a";
  return absl::StrFormat("%.2f× (%.2f×)", *ratio, vendor->min / timing.ours->min);
}

std::string Gflops(const BenchCase& bench_case, const std::optional<TimingStats>& stats) {
  if (!stats) return "n/a";
  return absl::StrFormat("%.1f", bench_case.workload.Flops() / stats->median * 1e-9);
}

std::string TuningCells(const CaseTiming& timing) {
  return absl::StrFormat("%d (%d failed) | %.0f", timing.tune.trials, timing.tune.failed,
                         timing.tune.TrialsPerMinute());
}

std::string MachineSection(const ReportContext& context) {
  const target::HardwareInfo& hw = context.hw;
  std::string text = "## Machine and software\n\n";
  absl::StrAppend(&text, "- CPU: ", hw.cpu_model, " (", CpuFamilyModel(), "), ", hw.cores, " cores; L1d ",
                  hw.l1d_bytes / 1024, " KiB, L2 ", hw.l2_bytes / 1024, " KiB, L3 ",
                  hw.l3_bytes / (1024 * 1024), " MiB; memory ",
                  hw.memory_bytes / (1024 * 1024 * 1024), " GiB\n");
  absl::StrAppend(&text, "- CPU features (target::DetectHostCpu): ",
                  absl::StrJoin(hw.cpu_features, " "), "\n");
  absl::StrAppend(&text, "- Date (UTC): ", context.date_utc, "\n");
  absl::StrAppend(&text, "- Command: `", context.command, "`\n");
  absl::StrAppend(&text, "- OpenBLAS: ", context.openblas_version, "\n");
  absl::StrAppend(&text, "- oneDNN: ", context.onednn_version, "\n");
  absl::StrAppend(&text, "- Threads: ", context.threads,
                  " for every implementation (gtco_parallel_for pool, OpenBLAS, OpenMP)\n");
  if (context.retimed_from.empty()) {
    absl::StrAppend(&text, "- Tuning: ", context.trials, " trials per task, ",
                    SearchKindName(context.search),
                    " search, every candidate measured by worker::CandidateMeasurer; then the 8 "
                    "fastest distinct programs re-measured twice more, interleaved, and the one "
                    "with the lowest median over its three measurements kept (confirmation)\n");
  } else {
    absl::StrAppend(&text, "- Tuning: not repeated; best traces, trial counts and tuning rates "
                           "from `", context.retimed_from, "` (an earlier tuning run)\n");
  }
  absl::StrAppend(&text, "- Load average (1/5/15 min) at start: ", context.load_before,
                  "; when timing began: ", context.load_timing, "; at end: ", context.load_after,
                  "\n");
  absl::StrAppend(&text, absl::StrFormat(
                             "- Memory bandwidth (STREAM-like, %d threads, %.0f MiB arrays): "
                             "copy %.1f GB/s, triad %.1f GB/s\n",
                             context.dram.threads, context.dram.array_bytes / 1048576.0,
                             context.dram.copy_gbps, context.dram.triad_gbps));
  absl::StrAppend(&text,
                  "\nLatencies are medians of samples pooled over interleaved rounds (ours, "
                  "vendors, back to back in one process); ±x% is the p10–p90 spread relative "
                  "to the median. Ratios are our throughput over the vendor's (>1: we are "
                  "faster), from the medians; in parentheses from the fastest run of each, which "
                  "other processes on a shared machine cannot make slower. The verdict uses the "
                  "medians.\n\n");
  return text;
}

std::string GemmSection(const std::vector<CaseTiming>& cases, std::vector<std::string>* misses) {
  std::string text =
      "## GEMMs (fp32)\n\n| case | M×K×N | trials | trials/min | ours µs | OpenBLAS µs | "
      "oneDNN µs | ours GFLOP/s | oneDNN GFLOP/s | vs OpenBLAS (min) | vs oneDNN (min) | "
      "≥0.9× oneDNN |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const CaseTiming& timing : cases) {
    if (!timing.bench_case.IsGemm()) continue;
    std::optional<double> vs_onednn = Ratio(timing, timing.onednn);
    std::string verdict = "n/a";
    if (vs_onednn) {
      verdict = *vs_onednn >= kGemmTargetRatio ? "yes" : "**no**";
      if (*vs_onednn < kGemmTargetRatio) {
        misses->push_back(absl::StrFormat(
            "%s (%s): %.2f× oneDNN, %.0f%% short of 0.9× (needs %.2f× the throughput)",
            timing.bench_case.id, timing.bench_case.shape, *vs_onednn,
            (kGemmTargetRatio - *vs_onednn) / kGemmTargetRatio * 100,
            kGemmTargetRatio / *vs_onednn));
      }
    }
    absl::StrAppend(&text, "| ", timing.bench_case.id, " | ", timing.bench_case.shape, " | ",
                    TuningCells(timing), " | ", Micros(timing.ours), " | ",
                    Micros(timing.openblas), " | ", Micros(timing.onednn), " | ",
                    Gflops(timing.bench_case, timing.ours), " | ",
                    Gflops(timing.bench_case, timing.onednn), " | ",
                    RatioCell(timing, timing.openblas), " | ", RatioCell(timing, timing.onednn),
                    " | ", verdict, " |\n");
  }
  return text + "\n";
}

std::string RowWiseSection(const std::vector<CaseTiming>& cases, const StreamBandwidth& dram) {
  std::string text =
      "## Softmax and LayerNorm\n\n"
      "Effective bandwidth = bytes read and written once (Workload::MinBytes) / latency; "
      "\"% DRAM\" is that over the STREAM triad above, \"% cache copy\" over a copy with the "
      "same footprint (these tensors fit in L2/L3, so the cache roof is the one that binds).\n\n"
      "| case | shape | trials | trials/min | ours µs | plain C++ µs | oneDNN µs | ours GB/s | "
      "% DRAM | % cache copy | vs plain C++ (min) | vs oneDNN (min) |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  bool any = false;
  for (const CaseTiming& timing : cases) {
    if (timing.bench_case.IsGemm()) continue;
    any = true;
    std::string bandwidth = "n/a", dram_share = "n/a", cache_share = "n/a";
    if (timing.ours) {
      double gbps = timing.bench_case.workload.MinBytes() / timing.ours->median * 1e-9;
      bandwidth = absl::StrFormat("%.1f", gbps);
      if (dram.triad_gbps > 0) dram_share = absl::StrFormat("%.0f%%", gbps / dram.triad_gbps * 100);
      if (timing.cache_copy_gbps > 0) {
        cache_share = absl::StrFormat("%.0f%%", gbps / timing.cache_copy_gbps * 100);
      }
    }
    absl::StrAppend(&text, "| ", timing.bench_case.id, " | ", timing.bench_case.shape, " | ",
                    TuningCells(timing), " | ", Micros(timing.ours), " | ", Micros(timing.plain),
                    " | ", Micros(timing.onednn), " | ", bandwidth, " | ", dram_share, " | ",
                    cache_share, " | ", RatioCell(timing, timing.plain), " | ",
                    RatioCell(timing, timing.onednn), " |\n");
  }
  return any ? text + "\n" : "";
}

std::string CurveSection(const ReportContext& context, const std::vector<CurveRun>& curve) {
  if (curve.empty()) return "";
  double overall_best = 0;
  for (const CurveRun& run : curve) {
    double best = run.result.best_seconds;
    if (best > 0 && (overall_best == 0 || best < overall_best)) overall_best = best;
  }
  std::string text = absl::StrCat("## Tuning curve (", context.curve_case, ")\n\n");
  absl::StrAppend(
      &text, "Best latency so far against trials on the same task, several seeds per search kind: "
             "`tuning_curve.csv`, plotted in `", context.curve_png,
      "`. \"model\" starts with an untrained cost model; \"model+prior\" starts from one "
      "trained on the other tasks' records of this run (as the farm's model starts from every "
      "earlier job's records on the target; never this task's own). The target is 95% of the "
      "best latency any run found (best / 0.95).\n\n");
  absl::StrAppend(&text, "| search | seed | trials | trials/min | prior records | final best µs | "
                         "trials to 95% of own final | trials to 95% of best overall |\n"
                         "|---|---|---|---|---|---|---|---|\n");
  for (const CurveRun& run : curve) {
    const TuneResult& result = run.result;
    auto reach = [&](double best) {
      int trials = best > 0 ? TrialsToReach(result.best_so_far, best / 0.95) : 0;
      return trials > 0 ? std::to_string(trials) : std::string("never");
    };
    absl::StrAppend(&text, "| ", run.Label(), " | ", run.seed, " | ", result.trials, " | ",
                    absl::StrFormat("%.0f", result.TrialsPerMinute()), " | ",
                    result.prior_samples, " | ",
                    absl::StrFormat("%.1f", result.best_seconds * 1e6), " | ",
                    reach(result.best_seconds), " | ", reach(overall_best), " |\n");
  }
  absl::StrAppend(&text, "\nThe acceptance comparison (model vs random on the same seed) is "
                         "computed from `tuning_curve.csv` by `bench/plot_tuning_curve.py "
                         "--summary` and follows.\n");
  return text + "\n";
}

}  // namespace

std::string CurveRun::Label() const {
  return absl::StrCat(SearchKindName(kind), prior ? "+prior" : "");
}

int TrialsToReach(const std::vector<double>& best_so_far, double target_seconds) {
  for (size_t index = 0; index < best_so_far.size(); ++index) {
    if (best_so_far[index] > 0 && best_so_far[index] <= target_seconds) {
      return static_cast<int>(index) + 1;
    }
  }
  return 0;
}

std::string RenderReport(const ReportContext& context, const std::vector<CaseTiming>& cases,
                         const std::vector<CurveRun>& curve) {
  std::string text = "# GTCO-tuned CPU kernels vs OpenBLAS and oneDNN\n\n";
  absl::StrAppend(&text, MachineSection(context));
  std::vector<std::string> misses;
  absl::StrAppend(&text, GemmSection(cases, &misses));
  if (!misses.empty()) {
    absl::StrAppend(&text, "GEMMs below 0.9× oneDNN:\n\n");
    for (const std::string& miss : misses) absl::StrAppend(&text, "- ", miss, "\n");
    absl::StrAppend(&text, "\n");
  }
  absl::StrAppend(&text, RowWiseSection(cases, context.dram));
  absl::StrAppend(&text, CurveSection(context, curve));
  std::string traces = "## Best schedules\n\n";
  for (const CaseTiming& timing : cases) {
    absl::StrAppend(&traces, "- ", timing.bench_case.id, ": `",
                    timing.tune.best_seconds > 0 ? timing.tune.best_trace.ToString() : "none",
                    "`\n");
    for (const std::string& note : timing.notes) absl::StrAppend(&traces, "  - ", note, "\n");
  }
  return text + traces;
}

std::string RenderCurveCsv(const std::vector<CurveRun>& curve) {
  std::string text = "trial";
  size_t longest = 0;
  for (const CurveRun& run : curve) {
    absl::StrAppend(&text, ",", run.Label(), "_s", run.seed, "_best_us");
    longest = std::max(longest, run.result.best_so_far.size());
  }
  text += "\n";
  for (size_t trial = 0; trial < longest; ++trial) {
    absl::StrAppend(&text, trial + 1);
    for (const CurveRun& run : curve) {
      const std::vector<double>& best = run.result.best_so_far;
      text += ",";
      if (trial < best.size() && best[trial] > 0) {
        absl::StrAppend(&text, absl::StrFormat("%.3f", best[trial] * 1e6));
      }
    }
    text += "\n";
  }
  return text;
}

}  // namespace gtco::bench
