// The CUDA worker on a real GPU (label "gpu"; every test skips without one): the device's facts,
// hand-written and generated kernels measured end to end, and the failures (compile errors,
// wrong results, a faulting kernel, a hang) that must be results while the next candidate still
// measures.
#include <gtest/gtest.h>

#include <iostream>

#include "common/kernels/build_program.h"
#include "common/kernels/registry.h"
#include "common/schedule/space.h"
#include "tests/unit/worker/cuda_test_kernels.h"
#include "worker/cuda_driver.h"
#include "worker/cuda_measure.h"
#include "worker/runner.h"

namespace gtco::worker {
namespace {

constexpr const char* kWorker = GTCO_BINARY_DIR "/worker/gtco-worker";

/// Empty when a GPU can be used here, else why not.
std::string NoGpuReason() {
  static const std::string* const reason = [] {
    absl::StatusOr<std::unique_ptr<CudaDriver>> driver = CudaDriver::Open(0);
    return new std::string(driver.ok() ? "" : std::string(driver.status().message()));
  }();
  return *reason;
}

#define GTCO_SKIP_WITHOUT_GPU()                                                   \
  do {                                                                            \
    if (!NoGpuReason().empty()) GTEST_SKIP() << "no CUDA GPU: " << NoGpuReason(); \
  } while (0)

std::unique_ptr<CudaMeasurer> NewMeasurer() {
  absl::StatusOr<std::unique_ptr<CudaMeasurer>> measurer = CudaMeasurer::Create(0);
  EXPECT_TRUE(measurer.ok()) << measurer.status();
  return measurer.ok() ? std::move(*measurer) : nullptr;
}

void ExpectTimed(const gtco::v1::MeasureResult& result) {
  EXPECT_TRUE(result.ok()) << result.error();
  EXPECT_TRUE(result.verified());
  EXPECT_GT(result.median_seconds(), 0);
  EXPECT_GE(result.repeats(), DefaultCudaMeasureOptions().min_repeats);
  EXPECT_LE(result.min_seconds(), result.median_seconds());
  EXPECT_GE(result.max_seconds(), result.median_seconds());
}

TEST(CudaGpuTest, ReadsTheDevicesFacts) {
  GTCO_SKIP_WITHOUT_GPU();
  std::unique_ptr<CudaMeasurer> measurer = NewMeasurer();
  ASSERT_NE(measurer, nullptr);
  const target::HardwareInfo& hw = measurer->hardware();
  EXPECT_EQ(hw.target, target::Target::kCuda);
  EXPECT_FALSE(hw.cpu_model.empty());
  EXPECT_GE(hw.sm_major, 7);
  EXPECT_GT(hw.sm_count, 0);
  EXPECT_GE(hw.shared_bytes_per_block, 48 * 1024);
  EXPECT_GE(hw.shared_bytes_per_sm, hw.shared_bytes_per_block);
  EXPECT_GT(hw.registers_per_block, 0);
  EXPECT_GT(hw.registers_per_sm, 0);
  EXPECT_GE(hw.max_threads_per_block, 1024);
  EXPECT_GE(hw.max_threads_per_sm, hw.max_threads_per_block);
  EXPECT_GT(hw.max_blocks_per_sm, 0);
  EXPECT_GT(hw.l2_bytes, 0);
  EXPECT_GT(hw.memory_bytes, int64_t{1} << 30);
  std::cout << hw.Summary() << ", driver " << measurer->DriverVersion() << "\n";
}

TEST(CudaGpuTest, MeasuresAHandWrittenKernel) {
  GTCO_SKIP_WITHOUT_GPU();
  std::unique_ptr<CudaMeasurer> measurer = NewMeasurer();
  ASSERT_NE(measurer, nullptr);
  gtco::v1::MeasureResult result =
      measurer->Measure(testing::AddOneCandidate("add-one", testing::CorrectAddOne()));
  ExpectTimed(result);
  EXPECT_GT(result.compile_seconds(), 0);
  // 8 MiB in, 8 MiB out: no GPU does that in under a microsecond or over 100 ms.
  EXPECT_GT(result.median_seconds(), 1e-6);
  EXPECT_LT(result.median_seconds(), 0.1);
  // Cached: the same program measures again without recompiling.
  ExpectTimed(measurer->Measure(testing::AddOneCandidate("add-one", testing::CorrectAddOne())));
}

TEST(CudaGpuTest, OptsIntoLargeDynamicSharedMemory) {
  GTCO_SKIP_WITHOUT_GPU();
  std::unique_ptr<CudaMeasurer> measurer = NewMeasurer();
  ASSERT_NE(measurer, nullptr);
  ASSERT_GT(measurer->hardware().shared_bytes_per_block, testing::kSharedAddOneBytes);
  ExpectTimed(measurer->Measure(
      testing::AddOneCandidate("shared", testing::SharedAddOne(), testing::kSharedAddOneBytes)));
}

TEST(CudaGpuTest, MeasuresBf16Inputs) {
  GTCO_SKIP_WITHOUT_GPU();
  std::unique_ptr<CudaMeasurer> measurer = NewMeasurer();
  ASSERT_NE(measurer, nullptr);
  ExpectTimed(measurer->Measure(testing::Bf16MatMulCandidate("mm-bf16", 128, 64, 256)));
}

TEST(CudaGpuTest, WrongResultIsNeverTimed) {
  GTCO_SKIP_WITHOUT_GPU();
  std::unique_ptr<CudaMeasurer> measurer = NewMeasurer();
  ASSERT_NE(measurer, nullptr);
  gtco::v1::MeasureResult wrong =
      measurer->Measure(testing::AddOneCandidate("wrong", testing::WrongAddOne()));
  EXPECT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error_kind(), gtco::v1::ERROR_KIND_WRONG_RESULT) << wrong.error();
  EXPECT_FALSE(wrong.verified());
  EXPECT_EQ(wrong.median_seconds(), 0);
  EXPECT_EQ(wrong.repeats(), 0);
}

TEST(CudaGpuTest, CompileErrorsAndForeignCandidatesAreResults) {
  GTCO_SKIP_WITHOUT_GPU();
  std::unique_ptr<CudaMeasurer> measurer = NewMeasurer();
  ASSERT_NE(measurer, nullptr);
  gtco::v1::MeasureResult broken =
      measurer->Measure(testing::AddOneCandidate("broken", testing::BrokenAddOne()));
  EXPECT_EQ(broken.error_kind(), gtco::v1::ERROR_KIND_COMPILE);
  EXPECT_NE(broken.error().find("undeclared"), std::string::npos) << broken.error();
  gtco::v1::Candidate llvm = testing::AddOneCandidate("llvm", testing::CorrectAddOne());
  llvm.set_language("llvm-ir");
  EXPECT_EQ(measurer->Measure(llvm).error_kind(), gtco::v1::ERROR_KIND_COMPILE);
  gtco::v1::Candidate too_big = testing::AddOneCandidate("too-big", testing::CorrectAddOne());
  too_big.mutable_launch()->set_block_x(4096);
  gtco::v1::MeasureResult rejected = measurer->Measure(too_big);
  EXPECT_EQ(rejected.error_kind(), gtco::v1::ERROR_KIND_RUNTIME);
  EXPECT_TRUE(measurer->Usable());
  ExpectTimed(measurer->Measure(testing::AddOneCandidate("after", testing::CorrectAddOne())));
}

TEST(CudaGpuTest, FaultIsARuntimeErrorAndTheNextCandidateMeasures) {
  GTCO_SKIP_WITHOUT_GPU();
  RunnerProcess runner(kWorker, RunnerConfig{target::Target::kCuda, 0, 0});
  ExpectTimed(runner.Run(testing::AddOneCandidate("before", testing::CorrectAddOne()), 60));
  const pid_t first_runner = runner.pid();
  gtco::v1::MeasureResult fault =
      runner.Run(testing::AddOneCandidate("fault", testing::FaultingAddOne()), 60);
  EXPECT_FALSE(fault.ok());
  EXPECT_EQ(fault.error_kind(), gtco::v1::ERROR_KIND_RUNTIME) << fault.error();
  EXPECT_NE(fault.error().find("CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos) << fault.error();
  EXPECT_EQ(fault.median_seconds(), 0);
  EXPECT_FALSE(fault.verified());
  // The runner whose context was lost ended; a fresh one measures the next candidate.
  gtco::v1::MeasureResult next =
      runner.Run(testing::AddOneCandidate("after-fault", testing::CorrectAddOne()), 60);
  ExpectTimed(next);
  EXPECT_NE(runner.pid(), first_runner);
}

TEST(CudaGpuTest, HangIsKilledAfterTheTimeout) {
  GTCO_SKIP_WITHOUT_GPU();
  RunnerProcess runner(kWorker, RunnerConfig{target::Target::kCuda, 0, 0});
  gtco::v1::MeasureResult hung =
      runner.Run(testing::AddOneCandidate("hang", testing::HangingAddOne()), 5);
  EXPECT_EQ(hung.error_kind(), gtco::v1::ERROR_KIND_TIMEOUT) << hung.error();
  ExpectTimed(runner.Run(testing::AddOneCandidate("after-hang", testing::CorrectAddOne()), 60));
}

ir::Workload MatMulF32(int64_t m, int64_t n, int64_t k) {
  ir::Workload w = testing::Bf16MatMulWorkload(m, n, k);
  for (ir::TensorDesc& input : w.inputs) input.dtype = ir::DType::kF32;
  return w;
}

ir::Workload Softmax(int64_t rows, int64_t cols) {
  ir::Workload w;
  w.anchor = ir::AnchorKind::kSoftmax;
  w.row.rows = rows;
  w.row.cols = cols;
  w.inputs = {{ir::DType::kF32, {rows, cols}}};
  w.num_anchor_inputs = 1;
  w.output = {ir::DType::kF32, {rows, cols}};
  return w;
}

// A generated kernel (default trace of the first applicable CUDA mapping) measured end to end,
// for each workload here: CUDA mappings cover all three on every GPU GTCO supports (sm_80 on).
TEST(CudaGpuTest, MeasuresGeneratedKernels) {
  GTCO_SKIP_WITHOUT_GPU();
  std::unique_ptr<CudaMeasurer> measurer = NewMeasurer();
  ASSERT_NE(measurer, nullptr);
  for (const ir::Workload& w :
       {MatMulF32(512, 512, 512), testing::Bf16MatMulWorkload(256, 256, 512), Softmax(512, 1024)}) {
    absl::StatusOr<schedule::SearchSpace> space = kernels::CreateSpace(w, measurer->hardware());
    ASSERT_TRUE(space.ok()) << "no CUDA space for " << w.Description() << ": " << space.status();
    const schedule::Trace trace = space->DefaultTrace();
    absl::StatusOr<gtco::v1::Candidate> candidate = testing::GeneratedCandidate(w, trace);
    EXPECT_TRUE(candidate.ok()) << trace.ToString() << ": " << candidate.status();
    if (!candidate.ok()) continue;
    gtco::v1::MeasureResult result = measurer->Measure(*candidate);
    ExpectTimed(result);
    std::cout << w.Description() << " with " << trace.ToString() << ": "
              << result.median_seconds() * 1e6 << " us\n";
  }
}

}  // namespace
}  // namespace gtco::worker
