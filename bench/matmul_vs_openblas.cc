// Side-by-side, in one process: GTCO-tuned fp32 matmul vs OpenBLAS sgemm.
//   bench/matmul_vs_openblas [--trials N] [--shape MxNxK]...
// Tunes each shape with the farm's search (random + evolutionary) and the worker's measurer,
// then times the best program and cblas_sgemm with the same harness and prints both.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <random>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "common/codegen/llvm/llvm_codegen.h"
#include "common/ir/workload.h"
#include "common/schedule/space.h"
#include "common/search/search_strategy.h"
#include "common/target/target.h"
#include "common/util/flags.h"
#include "common/util/hash.h"
#include "worker/measure.h"

namespace {

using gtco::ir::Workload;

Workload MatMul(int64_t m, int64_t n, int64_t k) {
  Workload workload;
  workload.anchor = gtco::ir::AnchorKind::kMatMul;
  workload.matmul.batch = 1;
  workload.matmul.m = m;
  workload.matmul.n = n;
  workload.matmul.k = k;
  workload.inputs = {{gtco::ir::DType::kF32, {1, m, k}}, {gtco::ir::DType::kF32, {1, k, n}}};
  workload.num_anchor_inputs = 2;
  workload.output = {gtco::ir::DType::kF32, {1, m, n}};
  return workload;
}

double MedianSeconds(const std::function<void()>& run, double min_seconds) {
  run();
  std::vector<double> samples;
  double total = 0;
  while (total < min_seconds || samples.size() < 10) {
    auto start = std::chrono::steady_clock::now();
    run();
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    samples.push_back(seconds);
    total += seconds;
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

struct Tuned {
  gtco::schedule::Trace trace;
  double seconds = 0;
  int trials = 0, failed = 0;
  double tuning_seconds = 0;
};

Tuned Tune(const Workload& workload, const gtco::target::HardwareInfo& hardware, int trials,
           gtco::worker::CandidateMeasurer& measurer) {
  auto space = gtco::schedule::SearchSpace::Create(workload, hardware);
  if (!space.ok()) {
    std::cerr << space.status() << "\n";
    std::exit(1);
  }
  gtco::search::EvolutionarySearch search(*space, gtco::search::EvolutionaryOptions{});
  Tuned tuned;
  auto start = std::chrono::steady_clock::now();
  while (tuned.trials < trials) {
    std::vector<gtco::schedule::Trace> round = search.Propose(std::min(8, trials - tuned.trials));
    if (round.empty()) break;
    for (const auto& trace : round) {
      ++tuned.trials;
      auto func = gtco::schedule::LowerSchedule(workload, trace, "gtco_kernel");
      auto program = func.ok() ? gtco::codegen::EmitLlvmIr(*func)
                               : absl::StatusOr<std::string>(func.status());
      if (!program.ok()) {
        ++tuned.failed;
        search.Observe(trace, false, 0);
        continue;
      }
      gtco::v1::Candidate candidate;
      candidate.set_candidate_id(std::to_string(tuned.trials));
      candidate.set_workload_key(workload.Key());
      candidate.set_workload(workload.CanonicalString());
      candidate.set_entry("gtco_kernel");
      candidate.set_program(*program);
      gtco::v1::MeasureResult result = measurer.Measure(candidate);
      search.Observe(trace, result.ok(), result.median_seconds());
      if (!result.ok()) {
        ++tuned.failed;
        continue;
      }
      if (tuned.seconds == 0 || result.median_seconds() < tuned.seconds) {
        tuned.seconds = result.median_seconds();
        tuned.trace = trace;
      }
    }
  }
  tuned.tuning_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return tuned;
}

}  // namespace

int main(int argc, char** argv) {
  gtco::util::FlagSpec spec{{"trials", "shape"}, {}};
  auto args = gtco::util::ParsedArgs::Parse(std::vector<std::string>(argv + 1, argv + argc), spec);
  if (!args.ok()) {
    std::cerr << args.status().message() << "\nusage: matmul_vs_openblas [--trials N] [--shape MxNxK]...\n";
    return 2;
  }
  int trials = static_cast<int>(args->GetInt("trials", 200).value_or(200));
  std::vector<std::string> shapes = args->GetAll("shape");
  if (shapes.empty()) shapes = {"512x512x512"};
  gtco::target::HardwareInfo hardware = gtco::target::DetectHostCpu();
  auto measurer = gtco::worker::CandidateMeasurer::Create(gtco::worker::MeasureOptions{});
  if (!measurer.ok()) {
    std::cerr << measurer.status() << "\n";
    return 1;
  }
  std::printf("machine: %s\nOpenBLAS: %s, %d threads\n\n", hardware.Summary().c_str(),
              openblas_get_config(), openblas_get_num_threads());
  std::printf("%-16s %7s %12s %10s %12s %10s %8s %10s\n", "shape (MxNxK)", "trials", "gtco",
              "GFLOP/s", "openblas", "GFLOP/s", "ratio", "trials/min");
  for (const std::string& shape : shapes) {
    std::vector<int64_t> dims;
    for (absl::string_view part : absl::StrSplit(shape, 'x')) {
      int64_t value = 0;
      if (!absl::SimpleAtoi(part, &value) || value <= 0) {
        std::cerr << "bad shape " << shape << "\n";
        return 2;
      }
      dims.push_back(value);
    }
    if (dims.size() != 3) {
      std::cerr << "bad shape " << shape << "\n";
      return 2;
    }
    int64_t m = dims[0], n = dims[1], k = dims[2];
    Workload workload = MatMul(m, n, k);
    Tuned tuned = Tune(workload, hardware, trials, **measurer);
    // Re-time the best program and sgemm back to back with one harness.
    auto func = gtco::schedule::LowerSchedule(workload, tuned.trace, "gtco_kernel");
    auto program = gtco::codegen::EmitLlvmIr(*func);
    auto jit = gtco::codegen::CpuJit::Create();
    auto entry = (*jit)->Compile(*program, "gtco_kernel");
    std::vector<float> a(m * k), b(k * n), c(m * n);
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> uniform(-1, 1);
    for (float& value : a) value = uniform(rng);
    for (float& value : b) value = uniform(rng);
    void* kernel_args[] = {a.data(), b.data(), c.data()};
    double ours = MedianSeconds([&] { (*entry)(kernel_args); }, 0.5);
    double theirs = MedianSeconds(
        [&] {
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a.data(), k,
                      b.data(), n, 0.0f, c.data(), n);
        },
        0.5);
    double flops = 2.0 * m * n * k;
    std::printf("%-16s %7d %9.1f us %10.1f %9.1f us %10.1f %7.2fx %10.0f\n", shape.c_str(),
                tuned.trials, ours * 1e6, flops / ours * 1e-9, theirs * 1e6,
                flops / theirs * 1e-9, theirs / ours, tuned.trials / tuned.tuning_seconds * 60);
    std::printf("  best trace: %s (%d of %d trials failed)\n", tuned.trace.ToString().c_str(),
                tuned.failed, tuned.trials);
  }
  return 0;
}
