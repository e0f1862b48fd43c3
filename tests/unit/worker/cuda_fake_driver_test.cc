// The CUDA worker end to end on a fake driver (fake_libcuda.cc, found through LD_LIBRARY_PATH by
// the runner and worker processes): NVRTC compiles for real, the fake "runs" kernels by name on
// the host. Covers what a machine without a GPU can: the measurer's calls in order, verification
// before timing, the dynamic shared memory opt-in, a fault losing the context and the runner
// being replaced, and gtco-worker --target cuda starting and describing the device.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "tests/unit/worker/cuda_test_kernels.h"
#include "tests/unit/worker/process_util.h"
#include "worker/runner.h"

namespace gtco::worker {
namespace {

constexpr const char* kWorker = GTCO_BINARY_DIR "/worker/gtco-worker";
constexpr int kElements = 1 << 16;
constexpr int kBlock = 256;

/// Child processes load the fake driver.
class CudaFakeDriverTest : public ::testing::Test {
 protected:
  void SetUp() override { ::setenv("LD_LIBRARY_PATH", GTCO_FAKE_CUDA_DIR, 1); }
  void TearDown() override { ::unsetenv("LD_LIBRARY_PATH"); }
};

/// A candidate for out[i] = in0[i] + 1 over kElements whose kernel is `entry` (the fake runs it
/// by that name: fake_add_one, fake_copy, fake_fault, fake_hang).
gtco::v1::Candidate FakeCandidate(const std::string& id, const std::string& entry,
                                  int64_t dynamic_shared_bytes = 0) {
  gtco::v1::Candidate candidate;
  candidate.set_candidate_id(id);
  candidate.set_workload_key("test-fake-add-one");
  candidate.set_workload(testing::AddOneWorkload(kElements).CanonicalString());
  candidate.set_language("cuda-c");
  candidate.set_entry(entry);
  candidate.set_program(absl::StrCat("extern \"C\" __global__ void ", entry,
                                     "(const float* in0, float* out) {\n"
                                     "  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                                     "  out[i] = in0[i] + 1.0f;\n}\n"));
  candidate.set_program_hash(entry);
  candidate.mutable_launch()->set_grid_x(kElements / kBlock);
  candidate.mutable_launch()->set_block_x(kBlock);
  candidate.mutable_launch()->set_dynamic_shared_bytes(dynamic_shared_bytes);
  return candidate;
}

void ExpectTimed(const gtco::v1::MeasureResult& result) {
  EXPECT_TRUE(result.ok()) << result.error();
  EXPECT_TRUE(result.verified());
  EXPECT_GT(result.median_seconds(), 0);
  EXPECT_GE(result.repeats(), 10);
  EXPECT_LE(result.min_seconds(), result.median_seconds());
  EXPECT_GE(result.max_seconds(), result.median_seconds());
  EXPECT_GT(result.compile_seconds(), 0);
}

TEST_F(CudaFakeDriverTest, MeasuresVerifiesAndRejects) {
  RunnerProcess runner(kWorker, RunnerConfig{target::Target::kCuda, 0, 0});
  ExpectTimed(runner.Run(FakeCandidate("ok", "fake_add_one"), 60));
  ExpectTimed(runner.Run(FakeCandidate("ok-again", "fake_add_one"), 60));  // cached kernel
  gtco::v1::MeasureResult wrong = runner.Run(FakeCandidate("wrong", "fake_copy"), 60);
  EXPECT_EQ(wrong.error_kind(), gtco::v1::ERROR_KIND_WRONG_RESULT) << wrong.error();
  EXPECT_EQ(wrong.repeats(), 0);
  EXPECT_EQ(wrong.median_seconds(), 0);
  gtco::v1::Candidate broken = FakeCandidate("broken", "fake_add_one");
  broken.set_program("extern \"C\" __global__ void fake_add_one(float* out) { out[0] = nope; }");
  broken.set_program_hash("broken");
  gtco::v1::MeasureResult compile = runner.Run(broken, 60);
  EXPECT_EQ(compile.error_kind(), gtco::v1::ERROR_KIND_COMPILE) << compile.error();
  EXPECT_NE(compile.error().find("nope"), std::string::npos) << compile.error();
  gtco::v1::Candidate cpu = FakeCandidate("cpu", "fake_add_one");
  cpu.set_language("");
  EXPECT_EQ(runner.Run(cpu, 60).error_kind(), gtco::v1::ERROR_KIND_COMPILE);
  gtco::v1::Candidate wrong_arch = FakeCandidate("sm80a", "fake_add_one");
  wrong_arch.mutable_launch()->set_arch("sm_80a");
  gtco::v1::MeasureResult arch = runner.Run(wrong_arch, 60);
  EXPECT_EQ(arch.error_kind(), gtco::v1::ERROR_KIND_RUNTIME);
  EXPECT_NE(arch.error().find("sm_80a"), std::string::npos) << arch.error();
}

TEST_F(CudaFakeDriverTest, OptsIntoDynamicSharedMemoryAbove48KiB) {
  RunnerProcess runner(kWorker, RunnerConfig{target::Target::kCuda, 0, 0});
  ExpectTimed(runner.Run(FakeCandidate("shared", "fake_add_one", 100 * 1024), 60));
  gtco::v1::MeasureResult too_much =
      runner.Run(FakeCandidate("too-much", "fake_add_one", 300 * 1024), 60);
  EXPECT_EQ(too_much.error_kind(), gtco::v1::ERROR_KIND_RUNTIME);
  EXPECT_NE(too_much.error().find("shared memory"), std::string::npos) << too_much.error();
}

TEST_F(CudaFakeDriverTest, FaultLosesTheContextAndAFreshRunnerTakesTheNextCandidate) {
  RunnerProcess runner(kWorker, RunnerConfig{target::Target::kCuda, 0, 0});
  ExpectTimed(runner.Run(FakeCandidate("before", "fake_add_one"), 60));
  const pid_t first = runner.pid();
  gtco::v1::MeasureResult fault = runner.Run(FakeCandidate("fault", "fake_fault"), 60);
  EXPECT_EQ(fault.error_kind(), gtco::v1::ERROR_KIND_RUNTIME) << fault.error();
  EXPECT_NE(fault.error().find("CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was "
                               "encountered)"),
            std::string::npos)
      << fault.error();
  EXPECT_FALSE(fault.verified());
  EXPECT_EQ(fault.median_seconds(), 0);
  gtco::v1::MeasureResult next = runner.Run(FakeCandidate("after", "fake_add_one"), 60);
  ExpectTimed(next);
  EXPECT_NE(runner.pid(), first);
  EXPECT_EQ(next.candidate_id(), "after");
}

TEST_F(CudaFakeDriverTest, HangIsKilledAfterTheTimeout) {
  RunnerProcess runner(kWorker, RunnerConfig{target::Target::kCuda, 0, 0});
  gtco::v1::MeasureResult hung = runner.Run(FakeCandidate("hang", "fake_hang"), 3);
  EXPECT_EQ(hung.error_kind(), gtco::v1::ERROR_KIND_TIMEOUT) << hung.error();
  ExpectTimed(runner.Run(FakeCandidate("after-hang", "fake_add_one"), 60));
}

TEST_F(CudaFakeDriverTest, WorkerStartsAndDescribesTheGpu) {
  // No server listens: the worker keeps retrying to register until the deadline kills it.
  testing::ProcessOutput run =
      testing::RunProcess({kWorker, "--target", "cuda", "--server", "127.0.0.1:1"}, {}, 4);
  EXPECT_TRUE(run.timed_out) << run.output;
  EXPECT_NE(run.output.find("CUDA driver 12.4"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("worker for target cuda on GTCO Fake GPU (sm_90, 4 SMs, 227 KiB "
                            "shared/block, 2 MiB L2)"),
            std::string::npos)
      << run.output;
}

TEST_F(CudaFakeDriverTest, AMissingDeviceIsAClearStartupError) {
  testing::ProcessOutput run = testing::RunProcess(
      {kWorker, "--target", "cuda", "--device", "3", "--server", "127.0.0.1:1"}, {}, 60);
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("GPU 3 was asked for but the NVIDIA driver (CUDA 12.4) sees 1 "
                            "device(s); pass --device 0..0"),
            std::string::npos)
      << run.output;
}

}  // namespace
}  // namespace gtco::worker
