// Side by side, in one process: GTCO-tuned CPU kernels vs OpenBLAS sgemm, oneDNN and plain C++.
//   cpu_vs_vendor [--trials N] [--quick] [--shapes id,id] [--search random|evolutionary|model]
//                 [--threads 2] [--curve-shape id] [--curve-trials N] [--curve-kinds k,k]
//                 [--curve-seeds N] [--no-curve] [--out-dir DIR] [--stream-mib MiB]
//                 [--retime TUNED_TSV]
// Tunes every selected case in-process (bench/tuner.h), runs the tuning-curve comparison, then
// (random vs model-guided search, cold and warm-started from the other cases' records, several
// seeds), then re-times every best program beside the baselines back to back with one harness, prints the
// markdown report and writes it (plus tuned_traces.tsv and tuning_curve.csv) to --out-dir.
// --retime skips tuning and the curve and re-times the traces of an earlier run's TSV.
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "bench/bench_cases.h"
#include "bench/case_timing.h"
#include "bench/model_guide.h"
#include "bench/report.h"
#include "bench/timing.h"
#include "bench/tuned_traces.h"
#include "bench/tuner.h"
#include "bench/vendor_baselines.h"
#include "common/codegen/llvm/runtime.h"
#include "common/util/flags.h"
#include "common/util/status.h"
#include "worker/measure.h"

namespace gtco::bench {
namespace {

constexpr char kUsage[] =
    "usage: cpu_vs_vendor [--trials N] [--quick] [--shapes id,id] [--search KIND] [--threads T]\n"
    "                     [--curve-shape id] [--curve-trials N] [--curve-kinds k,k] [--no-curve]\n"
    "                     [--curve-seeds N] [--out-dir DIR] [--stream-mib MiB]\n"
    "                     [--retime TUNED_TSV]\n"
    "curve kinds: random, evolutionary, model, model+prior (model warm-started from the other\n"
    "cases' records)\n";

struct BenchOptions {
  std::vector<BenchCase> cases;
  int trials = 1000;
  SearchKind search = SearchKind::kModel;
  int threads = 2;
  std::string curve_case;  ///< "" = no curve
  int curve_trials = 1000;
  std::vector<std::pair<SearchKind, bool>> curve_kinds;  ///< (kind, warm-started from priors)
  int curve_seeds = 3;
  std::string out_dir;
  int64_t stream_bytes = 0;  ///< 0: 4 × L3 (2 × L3 when quick), at most a tenth of memory
  bool quick = false;
  std::string retime_file;  ///< --retime: take the tuned traces from here instead of tuning
};

absl::StatusOr<BenchOptions> ParseOptions(const util::ParsedArgs& args) {
  BenchOptions options;
  const bool quick = args.Has("quick");
  options.quick = quick;
  GTCO_ASSIGN_OR_RETURN(options.cases, SelectCases(args.Get("shapes"), quick));
  GTCO_ASSIGN_OR_RETURN(int64_t trials, args.GetInt("trials", quick ? 100 : 1000));
  GTCO_ASSIGN_OR_RETURN(int64_t threads, args.GetInt("threads", 2));
  GTCO_ASSIGN_OR_RETURN(int64_t curve_trials, args.GetInt("curve-trials", trials));
  GTCO_ASSIGN_OR_RETURN(int64_t stream_mib, args.GetInt("stream-mib", 0));
  GTCO_ASSIGN_OR_RETURN(int64_t curve_seeds, args.GetInt("curve-seeds", quick ? 1 : 3));
  if (trials < 1 || threads < 1 || curve_trials < 1 || stream_mib < 0 || curve_seeds < 1) {
    return absl::InvalidArgumentError(
        "--trials, --threads, --curve-trials, --curve-seeds must be positive");
  }
  options.curve_seeds = static_cast<int>(curve_seeds);
  options.trials = static_cast<int>(trials);
  options.threads = static_cast<int>(threads);
  options.curve_trials = static_cast<int>(curve_trials);
  options.stream_bytes = stream_mib * 1024 * 1024;
  // Model-guided search where the cost model is built in; evolutionary search otherwise.
  const std::string guided = ModelGuideAvailable() ? "model" : "evolutionary";
  GTCO_ASSIGN_OR_RETURN(options.search, ParseSearchKind(args.Get("search", guided)));
  if (!args.Has("no-curve")) {
    GTCO_ASSIGN_OR_RETURN(std::vector<BenchCase> curve_case,
                          SelectCases(args.Get("curve-shape", quick ? "mm512" : "vit_qkv"), false));
    options.curve_case = curve_case.front().id;
    const std::string default_kinds =
        ModelGuideAvailable() ? "random,model,model+prior" : "random,evolutionary";
    for (absl::string_view name :
         absl::StrSplit(args.Get("curve-kinds", default_kinds), ',', absl::SkipWhitespace())) {
      const bool prior = absl::EndsWith(name, "+prior");
      if (prior) name.remove_suffix(6);
      GTCO_ASSIGN_OR_RETURN(SearchKind kind, ParseSearchKind(std::string(name)));
      if (prior && kind != SearchKind::kModel) {
        return absl::InvalidArgumentError("only model search takes +prior (model+prior)");
      }
      options.curve_kinds.emplace_back(kind, prior);
    }
  }
  options.out_dir = args.Get("out-dir");
  options.retime_file = args.Get("retime");
  if (!options.retime_file.empty()) options.curve_case.clear();  // nothing is tuned
  return options;
}

std::string NowUtc() {
  std::time_t now = std::time(nullptr);
  char text[64];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S", std::gmtime(&now));
  return text;
}

std::string LoadAverage() {
  std::ifstream file("/proc/loadavg");
  std::string one, five, fifteen;
  file >> one >> five >> fifteen;
  return absl::StrCat(one, " ", five, " ", fifteen);
}

absl::StatusOr<TuneResult> TuneLogged(const BenchCase& bench_case, const target::HardwareInfo& hw,
                                      TuneOptions tune_options,
                                      worker::CandidateMeasurer& measurer) {
  std::fprintf(stderr, "tuning %-14s %-18s %d trials (%s%s, seed %llu)...\n",
               bench_case.id.c_str(), bench_case.shape.c_str(), tune_options.trials,
               SearchKindName(tune_options.kind), tune_options.prior != nullptr ? "+prior" : "",
               static_cast<unsigned long long>(tune_options.seed));
  GTCO_ASSIGN_OR_RETURN(TuneResult result,
                        Tune(bench_case.workload, hw, tune_options, measurer));
  std::fprintf(stderr,
               "  best %.1f us after %d trials (%d failed), %.0f trials/min; %.1f s proposing, "
               "%.1f s measuring, %.1f s retraining; trials per mapping %s; %d confirmed in "
               "%.1f s; %d prior records\n",
               result.best_seconds * 1e6, result.trials, result.failed, result.TrialsPerMinute(),
               result.propose_seconds, result.measure_seconds, result.retrain_seconds,
               absl::StrJoin(result.trials_per_space, "/").c_str(), result.confirmed,
               result.confirm_seconds, result.prior_samples);
  return result;
}

absl::Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream file(path);
  file << text;
  file.close();
  if (!file) return absl::UnavailableError(absl::StrCat("cannot write ", path));
  std::fprintf(stderr, "wrote %s\n", path.c_str());
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream file(path);
  if (!file) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

/// Tunes every case, or takes the tuning outcome from --retime's file.
absl::StatusOr<std::vector<std::pair<std::string, TuneResult>>> TuneAll(
    const BenchOptions& options, const target::HardwareInfo& hw,
    worker::CandidateMeasurer& measurer) {
  std::vector<std::pair<std::string, TuneResult>> tuned;
  if (!options.retime_file.empty()) {
    GTCO_ASSIGN_OR_RETURN(std::string text, ReadFile(options.retime_file));
    GTCO_ASSIGN_OR_RETURN(auto saved, ParseTunedTraces(text));
    for (const BenchCase& bench_case : options.cases) {
      auto found = saved.find(bench_case.id);
      if (found == saved.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat(options.retime_file, " has no tuned trace for ", bench_case.id));
      }
      tuned.emplace_back(bench_case.id, found->second);
    }
    return tuned;
  }
  for (const BenchCase& bench_case : options.cases) {
    TuneOptions tune_options;
    tune_options.trials = options.trials;
    tune_options.kind = options.search;
    GTCO_ASSIGN_OR_RETURN(TuneResult result, TuneLogged(bench_case, hw, tune_options, measurer));
    tuned.emplace_back(bench_case.id, std::move(result));
  }
  if (!options.out_dir.empty()) {
    GTCO_RETURN_IF_ERROR(
        WriteFile(options.out_dir + "/tuned_traces.tsv", RenderTunedTraces(tuned)));
  }
  return tuned;
}

/// Random vs model-guided search on one task, `curve_seeds` runs of each kind. "+prior" runs
/// warm-start the cost model from the records of every other tuned case (on this target).
absl::StatusOr<std::vector<CurveRun>> RunCurve(
    const BenchOptions& options, const std::vector<std::pair<std::string, TuneResult>>& tuned,
    worker::CandidateMeasurer& measurer, ReportContext* context) {
  std::vector<CurveRun> curve;
  if (options.curve_case.empty()) return curve;
  GTCO_ASSIGN_OR_RETURN(std::vector<BenchCase> curve_case, SelectCases(options.curve_case, false));
  context->curve_case = absl::StrCat(curve_case.front().id, " ", curve_case.front().shape);
  context->curve_png = "tuning_curve.png";
  std::vector<PriorTask> prior;
  for (size_t index = 0; index < tuned.size() && index < options.cases.size(); ++index) {
    const BenchCase& bench_case = options.cases[index];
    if (bench_case.id == curve_case.front().id || !bench_case.IsGemm()) continue;
    prior.push_back(PriorTask{bench_case.workload, tuned[index].second.measured});
  }
  for (int seed = 1; seed <= options.curve_seeds; ++seed) {
    for (const auto& [kind, warm] : options.curve_kinds) {
      TuneOptions tune_options;
      tune_options.trials = options.curve_trials;
      tune_options.kind = kind;
      tune_options.seed = static_cast<uint64_t>(seed) * 1000;
      tune_options.confirm_top = 0;  // the curve is the best measured so far, as searched
      tune_options.prior = warm ? &prior : nullptr;
      GTCO_ASSIGN_OR_RETURN(TuneResult result,
                            TuneLogged(curve_case.front(), context->hw, tune_options, measurer));
      result.measured.clear();
      curve.push_back(CurveRun{kind, warm, static_cast<uint64_t>(seed), std::move(result)});
    }
  }
  return curve;
}

ReportContext MakeContext(const BenchOptions& options, const std::string& command) {
  ReportContext context;
  context.hw = target::DetectHostCpu();
  context.date_utc = NowUtc();
  context.command = command;
  context.threads = options.threads;
  context.trials = options.trials;
  context.search = options.search;
  context.retimed_from = options.retime_file;
  context.load_before = LoadAverage();
  context.openblas_version = OpenBlasVersion();
  context.onednn_version = OneDnnVersion();
  return context;
}

absl::Status RunBenchmark(const BenchOptions& options, const std::string& command) {
  codegen::SetParallelThreads(options.threads);
  SetOpenBlasThreads(options.threads);
  SetOneDnnThreads(options.threads);
  ReportContext context = MakeContext(options, command);
  int64_t stream_bytes = options.stream_bytes;
  if (stream_bytes == 0) {
    stream_bytes = (options.quick ? 2 : 4) * context.hw.l3_bytes;
    if (context.hw.memory_bytes > 0) {
      stream_bytes = std::min(stream_bytes, context.hw.memory_bytes / 10);
    }
  }
  std::fprintf(stderr, "measuring memory bandwidth (%lld MiB arrays)...\n",
               static_cast<long long>(stream_bytes >> 20));
  context.dram = MeasureStreamBandwidth(stream_bytes, options.threads, /*repeats=*/5);

  GTCO_ASSIGN_OR_RETURN(auto measurer, worker::CandidateMeasurer::Create(worker::MeasureOptions{}));
  GTCO_ASSIGN_OR_RETURN(auto tuned, TuneAll(options, context.hw, *measurer));
  GTCO_ASSIGN_OR_RETURN(std::vector<CurveRun> curve,
                        RunCurve(options, tuned, *measurer, &context));

  // All timing after all tuning: the side-by-side numbers come from one stretch of time.
  std::fprintf(stderr, "timing the best programs beside the baselines...\n");
  context.load_timing = LoadAverage();
  GTCO_ASSIGN_OR_RETURN(auto jit, codegen::CpuJit::Create());
  CaseTimingOptions timing_options;
  timing_options.threads = options.threads;
  std::vector<CaseTiming> cases;
  for (size_t index = 0; index < options.cases.size(); ++index) {
    cases.push_back(TimeCase(options.cases[index], tuned[index].second, *jit, timing_options));
  }
  context.load_after = LoadAverage();

  std::string report = RenderReport(context, cases, curve);
  std::cout << report << std::flush;
  if (!options.out_dir.empty()) {
    GTCO_RETURN_IF_ERROR(WriteFile(options.out_dir + "/cpu_vs_vendor.md", report));
    if (!curve.empty()) {
      GTCO_RETURN_IF_ERROR(WriteFile(options.out_dir + "/tuning_curve.csv", RenderCurveCsv(curve)));
    }
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace gtco::bench

int main(int argc, char** argv) {
  std::vector<std::string> arguments(argv + 1, argv + argc);
  gtco::util::FlagSpec spec{{"trials", "shapes", "search", "threads", "curve-shape", "curve-trials",
                             "curve-kinds", "curve-seeds", "out-dir", "stream-mib", "retime"},
                            {"quick", "no-curve"}};
  auto args = gtco::util::ParsedArgs::Parse(arguments, spec);
  absl::StatusOr<gtco::bench::BenchOptions> options =
      args.ok() ? gtco::bench::ParseOptions(*args) : args.status();
  if (!options.ok()) {
    std::cerr << options.status().message() << "\n" << gtco::bench::kUsage;
    return 2;
  }
  std::vector<std::string> words = {"cpu_vs_vendor"};
  words.insert(words.end(), arguments.begin(), arguments.end());
  absl::Status status = gtco::bench::RunBenchmark(*options, absl::StrJoin(words, " "));
  if (!status.ok()) {
    std::cerr << "cpu_vs_vendor: " << status << "\n";
    return 1;
  }
  return 0;
}
