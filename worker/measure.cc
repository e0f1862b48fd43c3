// Compile, verify and time one candidate.
#include "worker/measure.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <random>

#include "common/ir/reference.h"
#include "common/ir/workload.h"
#include "common/util/status.h"

namespace gtco::worker {
namespace {

constexpr int kResetEveryCompiles = 256;
constexpr int64_t kMaxCachedBytes = int64_t{1} << 30;

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

gtco::v1::MeasureResult Failure(const gtco::v1::Candidate& candidate, gtco::v1::ErrorKind kind,
                                const std::string& message) {
  gtco::v1::MeasureResult result;
  result.set_candidate_id(candidate.candidate_id());
  result.set_ok(false);
  result.set_error_kind(kind);
  result.set_error(message);
  return result;
}

void FillStatistics(std::vector<double> samples, gtco::v1::MeasureResult* result) {
  std::sort(samples.begin(), samples.end());
  size_t count = samples.size();
  double median = count % 2 ? samples[count / 2]
                            : 0.5 * (samples[count / 2 - 1] + samples[count / 2]);
  double mean = 0;
  for (double sample : samples) mean += sample;
  mean /= count;
  double variance = 0;
  for (double sample : samples) variance += (sample - mean) * (sample - mean);
  result->set_median_seconds(median);
  result->set_min_seconds(samples.front());
  result->set_max_seconds(samples.back());
  result->set_stddev_seconds(count > 1 ? std::sqrt(variance / (count - 1)) : 0.0);
  result->set_repeats(static_cast<int>(count));
}

}  // namespace

CandidateMeasurer::CandidateMeasurer(std::unique_ptr<codegen::CpuJit> jit, MeasureOptions options)
    : jit_(std::move(jit)), options_(options) {
  seed_ = options.seed != 0 ? options.seed : std::random_device{}();
}

absl::StatusOr<std::unique_ptr<CandidateMeasurer>> CandidateMeasurer::Create(
    MeasureOptions options) {
  GTCO_ASSIGN_OR_RETURN(std::unique_ptr<codegen::CpuJit> jit, codegen::CpuJit::Create());
  return std::unique_ptr<CandidateMeasurer>(new CandidateMeasurer(std::move(jit), options));
}

absl::StatusOr<const CandidateMeasurer::ReferenceData*> CandidateMeasurer::Reference(
    const gtco::v1::Candidate& candidate) {
  auto found = references_.find(candidate.workload_key());
  if (found != references_.end()) return found->second.get();
  GTCO_ASSIGN_OR_RETURN(ir::Workload workload, ir::ParseWorkload(candidate.workload()));
  auto data = std::make_unique<ReferenceData>();
  data->inputs = ir::RandomInputs(workload, seed_++);
  data->expected = ir::ComputeReference(workload, data->inputs);
  ir::DefaultTolerance(workload, &data->rtol, &data->atol);
  int64_t bytes = static_cast<int64_t>(data->expected.size()) * 4;
  for (const auto& input : data->inputs) bytes += static_cast<int64_t>(input.size()) * 4;
  if (cached_bytes_ + bytes > kMaxCachedBytes) {
    references_.clear();
    cached_bytes_ = 0;
  }
  cached_bytes_ += bytes;
  const ReferenceData* pointer = data.get();
  references_[candidate.workload_key()] = std::move(data);
  return pointer;
}

gtco::v1::MeasureResult CandidateMeasurer::Measure(const gtco::v1::Candidate& candidate) {
  if (++compiled_since_reset_ > kResetEveryCompiles) {
    (void)jit_->Reset();
    compiled_since_reset_ = 1;
  }
  auto compile_start = Clock::now();
  absl::StatusOr<codegen::KernelEntry> entry = jit_->Compile(candidate.program(), candidate.entry());
  double compile_seconds = SecondsSince(compile_start);
  if (!entry.ok()) {
    auto result = Failure(candidate, gtco::v1::ERROR_KIND_COMPILE,
                          absl::StrCat("compile failed: ", entry.status().message()));
    result.set_compile_seconds(compile_seconds);
    return result;
  }
  absl::StatusOr<const ReferenceData*> reference = Reference(candidate);
  if (!reference.ok()) {
    return Failure(candidate, gtco::v1::ERROR_KIND_RUNTIME,
                   absl::StrCat("bad workload: ", reference.status().message()));
  }
  const ReferenceData& data = **reference;
  // Fresh copies of the inputs: a kernel that writes its inputs must not poison later ones.
  std::vector<std::vector<float>> inputs = data.inputs;
  std::vector<float> output(data.expected.size(), std::numeric_limits<float>::quiet_NaN());
  std::vector<void*> args;
  for (auto& input : inputs) args.push_back(input.data());
  args.push_back(output.data());

  (*entry)(args.data());
  absl::Status verified = ir::CompareOutputs(data.expected, output, data.rtol, data.atol);
  if (!verified.ok()) {
    auto result = Failure(candidate, gtco::v1::ERROR_KIND_WRONG_RESULT,
                          absl::StrCat("output differs from the reference: ", verified.message()));
    result.set_compile_seconds(compile_seconds);
    return result;
  }
  (*entry)(args.data());  // warm-up
  std::vector<double> samples;
  auto measure_start = Clock::now();
  double measured = 0;
  while (static_cast<int>(samples.size()) < options_.max_repeats) {
    auto start = Clock::now();
    (*entry)(args.data());
    double seconds = SecondsSince(start);
    samples.push_back(seconds);
    measured += seconds;
    bool enough = measured >= options_.min_seconds &&
                  static_cast<int>(samples.size()) >= options_.min_repeats;
    if (enough || SecondsSince(measure_start) > options_.max_seconds) break;
  }
  gtco::v1::MeasureResult result;
  result.set_candidate_id(candidate.candidate_id());
  result.set_ok(true);
  result.set_verified(true);
  result.set_compile_seconds(compile_seconds);
  FillStatistics(std::move(samples), &result);
  return result;
}

}  // namespace gtco::worker
