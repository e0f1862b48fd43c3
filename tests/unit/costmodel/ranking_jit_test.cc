// End-to-end check of the cost model on real programs: random schedules of a 256^3 matmul are
// lowered, JIT-compiled and timed on this host; a model trained on 100 of them must pick fast
// programs among the 50 it has not seen.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/codegen/llvm/jit.h"
#include "common/codegen/llvm/llvm_codegen.h"
#include "common/costmodel/features.h"
#include "common/ir/reference.h"
#include "common/kernels/registry.h"
#include "common/schedule/space.h"
#include "tests/unit/costmodel/ranking_metrics.h"
#include "tests/unit/schedule/test_workloads.h"

namespace gtco::costmodel {
namespace {

constexpr int kNumPrograms = 150;
constexpr int kNumTrain = 100;
constexpr int kTimingPasses = 4;
constexpr int kRunsPerPass = 5;

struct Measured {
  std::string trace;
  Features features;
  codegen::KernelEntry entry = nullptr;
  double seconds = 1e30;
};

void TimePrograms(const ir::Workload& w, std::vector<Measured>* programs);

/// `count` distinct random programs of `w`, featurized (adding the time spent to
/// `featurize_seconds`) and compiled, then timed: the best of
/// kRunsPerPass runs in each of kTimingPasses round-robin passes over all programs, so that a
/// burst of load from other processes does not single out one program.
std::vector<Measured> MeasureRandomPrograms(const ir::Workload& w, const target::HardwareInfo& hw,
                                            codegen::CpuJit& jit, int count,
                                            double* featurize_seconds) {
  absl::StatusOr<schedule::SearchSpace> space = kernels::CreateSpace(w, hw);
  EXPECT_TRUE(space.ok()) << space.status();
  if (!space.ok()) return {};
  std::mt19937_64 rng(20240611);
  std::set<std::string> seen;
  std::vector<Measured> programs;
  for (int attempt = 0; attempt < 20 * count && static_cast<int>(programs.size()) < count;
       ++attempt) {
    const schedule::Trace trace = space->Sample(rng);
    if (!seen.insert(trace.ToString()).second) continue;
    absl::StatusOr<ir::LoweredFunc> func = kernels::LowerSchedule(w, trace, "kernel");
    EXPECT_TRUE(func.ok()) << func.status();
    absl::StatusOr<std::string> llvm_ir = codegen::EmitLlvmIr(*func);
    EXPECT_TRUE(llvm_ir.ok()) << llvm_ir.status();
    if (!func.ok() || !llvm_ir.ok()) continue;
    absl::StatusOr<codegen::KernelEntry> entry = jit.Compile(*llvm_ir, "kernel");
    EXPECT_TRUE(entry.ok()) << entry.status();
    if (!entry.ok()) continue;
    const auto featurize_start = std::chrono::steady_clock::now();
    Features features = ExtractFeatures(*func, hw);
    *featurize_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - featurize_start).count();
    programs.push_back({trace.ToString(), std::move(features), *entry});
  }
  TimePrograms(w, &programs);
  return programs;
}

/// kTimingPasses more round-robin passes over `programs`, each keeping its best time.
void TimePrograms(const ir::Workload& w, std::vector<Measured>* programs_in) {
  std::vector<Measured>& programs = *programs_in;
  std::vector<std::vector<float>> inputs = ir::RandomInputs(w, 1);
  std::vector<float> output(w.output.NumElements());
  std::vector<void*> args = {inputs[0].data(), inputs[1].data(), output.data()};
  for (int pass = 0; pass < kTimingPasses; ++pass) {
    for (Measured& program : programs) {
      program.entry(args.data());  // warm-up: caches, page faults
      for (int run = 0; run < kRunsPerPass; ++run) {
        const auto start = std::chrono::steady_clock::now();
        program.entry(args.data());
        const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
        program.seconds = std::min(program.seconds, elapsed.count());
      }
    }
  }
}

/// How well `scores` rank programs whose measured times are `seconds`.
struct RankingQuality {
  double tau = 0;              ///< Kendall's tau
  size_t best_rank_top5 = 0;   ///< best true rank (0 = fastest) among the model's top 5
  size_t best_rank_top10 = 0;  ///< ... among its top 10
  double pick_seconds = 0;     ///< time of the model's top pick
  double best_seconds = 0;
  double median_seconds = 0;
};

RankingQuality Evaluate(const std::vector<float>& scores, const std::vector<double>& seconds) {
  RankingQuality quality;
  const std::vector<size_t> order = testing::OrderByScore(scores);
  quality.best_rank_top5 = quality.best_rank_top10 = seconds.size();
  for (size_t pick = 0; pick < std::min<size_t>(10, order.size()); ++pick) {
    const size_t rank = testing::TrueRank(seconds, order[pick]);
    if (pick < 5) quality.best_rank_top5 = std::min(quality.best_rank_top5, rank);
    quality.best_rank_top10 = std::min(quality.best_rank_top10, rank);
  }
  std::vector<double> sorted_seconds = seconds;
  std::sort(sorted_seconds.begin(), sorted_seconds.end());
  quality.tau = testing::KendallTau(scores, seconds);
  quality.pick_seconds = seconds[order[0]];
  quality.best_seconds = sorted_seconds[0];
  quality.median_seconds = sorted_seconds[sorted_seconds.size() / 2];
  return quality;
}

TEST(CostModelRankingJitTest, MatMul256ModelPicksFastHeldOutPrograms) {
  absl::StatusOr<std::unique_ptr<codegen::CpuJit>> jit = codegen::CpuJit::Create();
  ASSERT_TRUE(jit.ok()) << "no LLVM JIT: " << jit.status();
  // Single-threaded programs (a 1-core space): their best-of-N times stay comparable while
  // other processes load the cores, whereas parallel ones swing with that load. Set
  // GTCO_RANKING_ALL_CORES on a quiet machine to include parallel programs.
  target::HardwareInfo hw = target::DetectHostCpu();
  if (std::getenv("GTCO_RANKING_ALL_CORES") == nullptr) hw.cores = 1;
  const ir::Workload w = schedule::testing::MatMul(1, 256, 256, 256);
  const auto start = std::chrono::steady_clock::now();
  double featurize_seconds = 0;
  const std::vector<Measured> programs =
      MeasureRandomPrograms(w, hw, **jit, kNumPrograms, &featurize_seconds);
  ASSERT_EQ(programs.size(), static_cast<size_t>(kNumPrograms));
  const auto measured = std::chrono::steady_clock::now();

  std::vector<Sample> train;
  for (int idx = 0; idx < kNumTrain; ++idx) {
    train.push_back({programs[idx].features, "matmul256", programs[idx].seconds});
  }
  XgbOptions options;
  options.threads = 1;  // OpenMP teams crawl when the test shares a loaded 2-core machine
  std::unique_ptr<CostModel> model = MakeXgbCostModel(options);
  ASSERT_TRUE(model->Update(train).ok());
  ASSERT_TRUE(model->trained());
  std::vector<Features> held_out;
  std::vector<double> held_out_seconds;
  for (int idx = kNumTrain; idx < kNumPrograms; ++idx) {
    held_out.push_back(programs[idx].features);
    held_out_seconds.push_back(programs[idx].seconds);
  }
  absl::StatusOr<std::vector<float>> scores = model->Predict(held_out);
  ASSERT_TRUE(scores.ok()) << scores.status();
  const auto trained = std::chrono::steady_clock::now();

  RankingQuality quality = Evaluate(*scores, held_out_seconds);
  // The model is fixed; the true ranking is only as good as the timings. Under a burst of load
  // from other tests (ctest -j2 on 2 cores: tau 0.32 once, 0.57-0.77 on reruns) the held-out
  // programs get up to two more rounds of timing passes (each keeps its best time) before
  // the ranking is judged.
  for (int retime = 0; retime < 2 && quality.tau <= 0.4; ++retime) {
    std::vector<Measured> again(programs.begin() + kNumTrain, programs.end());
    TimePrograms(w, &again);
    for (size_t idx = 0; idx < again.size(); ++idx) held_out_seconds[idx] = again[idx].seconds;
    quality = Evaluate(*scores, held_out_seconds);
  }
  std::printf(
      "matmul 256^3 on %s: held-out Kendall tau %.3f; best true rank (0 = fastest of %zu) in "
      "model top-5: %zu, top-10: %zu; model's pick %.3f ms vs held-out best %.3f ms, median "
      "%.3f ms; featurize %.1f us/program, measuring %.1f s, train+predict %.3f s\n",
      hw.Summary().c_str(), quality.tau, held_out.size(), quality.best_rank_top5,
      quality.best_rank_top10, quality.pick_seconds * 1e3, quality.best_seconds * 1e3,
      quality.median_seconds * 1e3, featurize_seconds / kNumPrograms * 1e6,
      std::chrono::duration<double>(measured - start).count(),
      std::chrono::duration<double>(trained - measured).count());
  // Fastest 20% of the held-out programs; a random top-5 misses it ~31% of the time.
  EXPECT_LT(quality.best_rank_top5, held_out.size() / 5);
  EXPECT_LT(quality.pick_seconds, quality.median_seconds);
  EXPECT_GT(quality.tau, 0.4);
  EXPECT_TRUE((*jit)->Reset().ok());  // the programs' code stays until the re-timing is done
}

}  // namespace
}  // namespace gtco::costmodel
