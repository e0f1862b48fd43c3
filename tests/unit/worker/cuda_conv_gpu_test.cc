// CUDA convolutions and pools on a real GPU (label "gpu"; every test skips without one): the
// kernels of every applicable mapping (default trace and random samples) run through the CUDA
// measurer, which checks each output against the CPU reference (ir::ComputeTypedReference) on
// fresh random inputs before it times anything. Shapes: tests/unit/kernels/conv_test_workloads.h
// (small variants of ResNet-50, ViT-B/16 and MobileNetV2 convs, the unusual windows, the pools).
#include <gtest/gtest.h>

#include <iostream>
#include <random>

#include "common/kernels/build_program.h"
#include "common/kernels/registry.h"
#include "common/schedule/space.h"
#include "tests/unit/kernels/conv_test_workloads.h"
#include "worker/cuda_driver.h"
#include "worker/cuda_measure.h"

namespace gtco::worker {
namespace {

constexpr int kSamplesPerMapping = 2;

/// Empty when a GPU can be used here, else why not.
std::string NoGpuReason() {
  static const std::string* const reason = [] {
    absl::StatusOr<std::unique_ptr<CudaDriver>> driver = CudaDriver::Open(0);
    return new std::string(driver.ok() ? "" : std::string(driver.status().message()));
  }();
  return *reason;
}

/// The candidate a worker would receive for (w, trace).
absl::StatusOr<gtco::v1::Candidate> CandidateFor(const ir::Workload& w,
                                                 const schedule::Trace& trace) {
  absl::StatusOr<kernels::CudaKernel> kernel = kernels::GenerateCudaKernel(w, trace, "gtco_kernel");
  if (!kernel.ok()) return kernel.status();
  gtco::v1::Candidate candidate;
  candidate.set_candidate_id(trace.ToString());
  candidate.set_workload_key(w.Key());
  candidate.set_workload(w.CanonicalString());
  candidate.set_trace(trace.ToString());
  candidate.set_language("cuda-c");
  candidate.set_program(kernel->source);
  candidate.set_entry(kernel->entry);
  gtco::v1::CudaLaunch* launch = candidate.mutable_launch();
  launch->set_grid_x(kernel->plan.grid_x);
  launch->set_grid_y(kernel->plan.grid_y);
  launch->set_grid_z(kernel->plan.grid_z);
  launch->set_block_x(kernel->plan.block_x);
  launch->set_block_y(kernel->plan.block_y);
  launch->set_block_z(kernel->plan.block_z);
  launch->set_dynamic_shared_bytes(kernel->plan.dynamic_shared_bytes);
  launch->set_arch(kernel->plan.arch);
  return candidate;
}

/// Runs every applicable mapping's default trace and samples of each workload; each must match
/// the CPU reference.
void ExpectAllMappingsMatchTheReference(const std::vector<gtco::testing::NamedWorkload>& cases) {
  absl::StatusOr<std::unique_ptr<CudaMeasurer>> measurer = CudaMeasurer::Create(0);
  ASSERT_TRUE(measurer.ok()) << measurer.status();
  const target::HardwareInfo& hw = (*measurer)->hardware();
  std::mt19937_64 rng(7);
  int verified = 0;
  for (const gtco::testing::NamedWorkload& item : cases) {
    absl::StatusOr<std::vector<schedule::SearchSpace>> spaces =
        kernels::CreateMappingSpaces(item.workload, hw);
    ASSERT_TRUE(spaces.ok()) << item.name << ": " << spaces.status();
    for (const schedule::SearchSpace& space : *spaces) {
      std::vector<schedule::Trace> traces = {space.DefaultTrace()};
      for (int sample = 0; sample < kSamplesPerMapping; ++sample) {
        traces.push_back(space.Sample(rng));
      }
      for (const schedule::Trace& trace : traces) {
        SCOPED_TRACE(item.name + " " + item.workload.Description() + " / " + trace.ToString());
        absl::StatusOr<gtco::v1::Candidate> candidate = CandidateFor(item.workload, trace);
        ASSERT_TRUE(candidate.ok()) << candidate.status();
        gtco::v1::MeasureResult result = (*measurer)->Measure(*candidate);
        EXPECT_TRUE(result.ok()) << result.error();
        EXPECT_TRUE(result.verified());
        if (result.ok()) ++verified;
        std::cout << item.name << " " << trace.ToString() << ": " << result.median_seconds() * 1e6
                  << " us\n";
      }
    }
  }
  EXPECT_GT(verified, 0);
}

TEST(CudaConvGpuTest, EveryConvMappingMatchesTheReference) {
  if (!NoGpuReason().empty()) GTEST_SKIP() << "no CUDA GPU: " << NoGpuReason();
  ExpectAllMappingsMatchTheReference(gtco::testing::ConvWorkloads(/*small=*/true));
}

TEST(CudaConvGpuTest, EveryPoolMappingMatchesTheReference) {
  if (!NoGpuReason().empty()) GTEST_SKIP() << "no CUDA GPU: " << NoGpuReason();
  ExpectAllMappingsMatchTheReference(gtco::testing::PoolWorkloads(/*small=*/true));
}

}  // namespace
}  // namespace gtco::worker
