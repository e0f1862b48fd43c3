// Back-to-back timing of one case: ours, OpenBLAS, oneDNN and plain C++ on shared inputs.
#include "bench/case_timing.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/plain_kernels.h"
#include "bench/vendor_baselines.h"
#include "common/ir/reference.h"

namespace gtco::bench {
namespace {

/// One implementation under test: its output buffer, its run and where its timing goes.
struct Contender {
  std::string name;
  std::vector<float> output;
  std::function<void()> run;
  std::optional<TimingStats>* slot = nullptr;
};

std::optional<std::function<void()>> OurRun(const BenchCase& bench_case, const TuneResult& tuned,
                                            codegen::CpuJit& jit, std::vector<void*> args,
                                            CaseTiming* timing) {
  if (tuned.best_seconds <= 0) {
    timing->notes.push_back(absl::StrCat("no successful candidate: ", tuned.first_error));
    return std::nullopt;
  }
  absl::StatusOr<std::string> program = ProgramFor(bench_case.workload, tuned.best_trace, "best");
  // GTCO_DUMP_IR=PREFIX writes each case's LLVM IR to PREFIX.<case>.ll (for opt / llc).
  if (const char* dump = std::getenv("GTCO_DUMP_IR"); dump != nullptr && program.ok()) {
    std::ofstream(absl::StrCat(dump, ".", bench_case.id, ".ll")) << *program;
  }
  absl::StatusOr<codegen::KernelEntry> entry =
      program.ok() ? jit.Compile(*program, "best") : program.status();
  if (!entry.ok()) {
    timing->notes.push_back(absl::StrCat("recompiling our best failed: ", entry.status().message()));
    return std::nullopt;
  }
  codegen::KernelEntry kernel = *entry;
  return [kernel, args]() mutable { kernel(args.data()); };
}

/// The plain C++ loop for row-wise cases (nullopt for GEMMs, where the vendors are the baseline).
std::optional<std::function<void()>> PlainRun(const BenchCase& bench_case,
                                              const std::vector<float*>& inputs, float* out) {
  const ir::RowParams row = bench_case.workload.row;
  switch (bench_case.workload.anchor) {
    case ir::AnchorKind::kSoftmax:
      return [=] { PlainSoftmax(inputs[0], row.rows, row.cols, out); };
    case ir::AnchorKind::kLayerNorm:
      return [=] {
        PlainLayerNorm(inputs[0], inputs[1], inputs[2], row.rows, row.cols, row.epsilon, out);
      };
    default:
      return std::nullopt;
  }
}

}  // namespace

CaseTiming TimeCase(const BenchCase& bench_case, const TuneResult& tuned, codegen::CpuJit& jit,
                    const CaseTimingOptions& options) {
  CaseTiming timing;
  timing.bench_case = bench_case;
  timing.tune = tuned;
  const ir::Workload& workload = bench_case.workload;
  std::vector<std::vector<float>> inputs = ir::RandomInputs(workload, options.seed);
  std::vector<float> expected = ir::ComputeReference(workload, inputs);
  double rtol = 0, atol = 0;
  ir::DefaultTolerance(workload, &rtol, &atol);
  std::vector<float*> input_pointers;
  for (auto& input : inputs) input_pointers.push_back(input.data());

  std::vector<Contender> contenders(4);
  contenders[0] = {"ours", {}, nullptr, &timing.ours};
  contenders[1] = {"OpenBLAS", {}, nullptr, &timing.openblas};
  contenders[2] = {"oneDNN", {}, nullptr, &timing.onednn};
  contenders[3] = {"plain C++", {}, nullptr, &timing.plain};
  for (Contender& contender : contenders) contender.output.assign(expected.size(), 0.0f);

  std::vector<void*> args(input_pointers.begin(), input_pointers.end());
  args.push_back(contenders[0].output.data());
  if (auto run = OurRun(bench_case, tuned, jit, args, &timing)) contenders[0].run = *run;
  if (bench_case.IsGemm()) {
    auto openblas = MakeOpenBlasRun(workload, input_pointers, contenders[1].output.data());
    if (openblas.ok()) contenders[1].run = *openblas;
    else timing.notes.push_back(std::string(openblas.status().message()));
  }
  auto onednn = MakeOneDnnRun(workload, input_pointers, contenders[2].output.data());
  if (onednn.ok()) contenders[2].run = *onednn;
  else timing.notes.push_back(std::string(onednn.status().message()));
  if (auto plain = PlainRun(bench_case, input_pointers, contenders[3].output.data())) {
    contenders[3].run = *plain;
  }

  std::vector<std::function<void()>> runs;
  std::vector<Contender*> timed;
  for (Contender& contender : contenders) {
    if (!contender.run) continue;
    contender.run();
    absl::Status verified = ir::CompareOutputs(expected, contender.output, rtol, atol);
    if (!verified.ok()) {
      timing.notes.push_back(absl::StrCat(contender.name, " output differs from the reference: ",
                                          verified.message()));
    }
    runs.push_back(contender.run);
    timed.push_back(&contender);
  }
  std::vector<TimingStats> stats = TimeBackToBack(runs, options.rounds, options.seconds_per_round);
  for (size_t index = 0; index < timed.size(); ++index) *timed[index]->slot = stats[index];
  timing.cache_copy_gbps =
      bench_case.IsGemm()
          ? 0
          : MeasureStreamBandwidth(std::max<int64_t>(workload.MinBytes() / 2, 4096),
                                   options.threads, /*repeats=*/20)
                .copy_gbps;
  return timing;
}

}  // namespace gtco::bench
