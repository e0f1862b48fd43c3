// The server side of the CUDA target without a GPU: a CUDA worker registers with an H100's
// limits, a transformer block is submitted for target cuda, and every leased candidate is CUDA C
// with a launch plan that compiles with NVRTC within the device's budget. The measuring worker is
// simulated here (results carry a latency computed from the kernel's plan, marked verified), so
// the job's scheduling, cost-model training and completion run exactly as with a GPU worker.
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/codegen/cuda/nvrtc.h"
#include "common/db/database.h"
#include "common/target/target.h"
#include "server/farm_core.h"
#include "server/proto_convert.h"

namespace gtco::server {
namespace {

std::string ReadModel(const std::string& name) {
  std::ifstream in(std::string(GTCO_SOURCE_DIR) + "/tests/data/" + name, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

std::unique_ptr<FarmCore> MemoryFarm() {
  auto database = db::OpenSqliteDatabase(":memory:");
  EXPECT_TRUE(database.ok()) << database.status();
  FarmOptions options;
  options.seed = 1;
  auto core = FarmCore::Create(std::move(*database), options, /*metrics=*/nullptr);
  EXPECT_TRUE(core.ok()) << core.status();
  return std::move(*core);
}

/// A CUDA worker's registration as it arrives over gRPC, translated as the handler does.
WorkerHello CudaWorker(const target::HardwareInfo& gpu, int sm_major = -1) {
  gtco::v1::RegisterRequest request;
  request.set_hostname("gpu-host");
  gtco::v1::Hardware& hardware = *request.mutable_hardware();
  hardware.set_target("cuda");
  hardware.set_cpu_model(gpu.cpu_model);
  hardware.set_sm_major(gpu.sm_major);
  hardware.set_sm_minor(gpu.sm_minor);
  hardware.set_sm_count(gpu.sm_count);
  hardware.set_shared_bytes_per_block(gpu.shared_bytes_per_block);
  hardware.set_shared_bytes_per_sm(gpu.shared_bytes_per_sm);
  hardware.set_registers_per_block(gpu.registers_per_block);
  hardware.set_registers_per_sm(gpu.registers_per_sm);
  hardware.set_max_threads_per_block(gpu.max_threads_per_block);
  hardware.set_max_threads_per_sm(gpu.max_threads_per_sm);
  hardware.set_max_blocks_per_sm(gpu.max_blocks_per_sm);
  hardware.set_l2_bytes(gpu.l2_bytes);
  hardware.set_memory_bytes(gpu.memory_bytes);
  if (sm_major >= 0) hardware.set_sm_major(sm_major);
  absl::StatusOr<WorkerHello> hello = WorkerHelloFromProto(request);
  EXPECT_TRUE(hello.ok()) << hello.status();
  return *hello;
}

JobSpec Spec(target::Target target, int64_t budget) {
  JobSpec spec;
  spec.target = target;
  spec.budget = budget;
  return spec;
}

/// A deterministic stand-in latency: work over the launched threads, so plans differ.
double SimulatedSeconds(const LeasedCandidate& candidate) {
  const double threads = static_cast<double>(candidate.launch.Blocks() * candidate.launch.Threads());
  return 1e-6 + 1e-3 / (1.0 + threads / 1e5) + (candidate.program.size() % 97) * 1e-8;
}

TEST(FarmCudaTest, CudaWorkerWithoutComputeCapabilityIsRefused) {
  std::unique_ptr<FarmCore> core = MemoryFarm();
  auto reply = core->Register(CudaWorker(target::CudaArchPreset(90), /*sm_major=*/0));
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(FarmCudaTest, TransformerBlockTunesWithCudaCandidates) {
  // The first 12 candidates are compiled too, in every build configured with CUDA.
  if (codegen::NvrtcBuilt()) ASSERT_TRUE(codegen::NvrtcAvailable()) << codegen::NvrtcLoadStatus();
  std::unique_ptr<FarmCore> core = MemoryFarm();
  const target::HardwareInfo gpu = target::CudaArchPreset(90);
  auto registered = core->Register(CudaWorker(gpu));
  ASSERT_TRUE(registered.ok()) << registered.status();
  const std::string model = ReadModel("transformer_block.onnx");
  ASSERT_FALSE(model.empty());
  auto submitted = core->Submit(Spec(target::Target::kCuda, 48), model);
  ASSERT_TRUE(submitted.ok()) << submitted.status();

  std::set<std::string> mappings_seen;
  int compiled = 0;
  for (int round = 0; round < 40; ++round) {
    auto leased = core->Lease(registered->worker_id, /*max_candidates=*/8, /*wait_ms=*/0);
    ASSERT_TRUE(leased.ok()) << leased.status();
    if (leased->empty()) break;
    std::vector<TrialResult> results;
    for (const LeasedCandidate& candidate : *leased) {
      EXPECT_EQ(candidate.language, "cuda-c");
      EXPECT_GT(candidate.launch.block_x, 0);
      EXPECT_NE(candidate.program.find("__global__"), std::string::npos);
      mappings_seen.insert(candidate.trace.substr(0, candidate.trace.find(';')));
      if (codegen::NvrtcBuilt() && compiled < 12) {
        const std::string arch = candidate.launch.arch.empty()
                                     ? absl::StrCat("sm_", gpu.SmVersion())
                                     : candidate.launch.arch;
        auto binary = codegen::CompileCuda(candidate.program, candidate.entry, arch);
        ASSERT_TRUE(binary.ok()) << candidate.trace << ": " << binary.status();
        EXPECT_LE(int64_t{binary->usage.registers} * candidate.launch.Threads(),
                  gpu.registers_per_block);
        ++compiled;
      }
      TrialResult result;
      result.candidate_id = candidate.candidate_id;
      result.ok = true;
      result.verified = true;
      result.median_seconds = SimulatedSeconds(candidate);
      result.min_seconds = result.median_seconds;
      result.max_seconds = result.median_seconds;
      result.repeats = 10;
      results.push_back(result);
    }
    ASSERT_TRUE(core->Report(registered->worker_id, results).ok());
  }
  auto status = core->GetJob(submitted->job_id);
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->state, db::JobState::kDone) << status->error;
  EXPECT_GE(status->trials_done, 40);
  // Matmul and row-wise tasks both got CUDA schedules.
  bool matmul_sketch = false, row_sketch = false;
  for (const std::string& sketch : mappings_seen) {
    matmul_sketch |= sketch.rfind("cuda_mm_", 0) == 0;
    row_sketch |= sketch == "cuda_softmax/v1" || sketch == "cuda_layernorm/v1";
  }
  EXPECT_TRUE(matmul_sketch);
  EXPECT_TRUE(row_sketch);
  if (codegen::NvrtcBuilt()) EXPECT_EQ(compiled, 12);
}

TEST(FarmCudaTest, IntegerModelOnCudaIsRefusedWithTheVerdict) {
  std::unique_ptr<FarmCore> core = MemoryFarm();
  ASSERT_TRUE(core->Register(CudaWorker(target::CudaArchPreset(80))).ok());
  auto submitted = core->Submit(Spec(target::Target::kCuda, 8), ReadModel("matmul_integer.onnx"));
  ASSERT_FALSE(submitted.ok());
  EXPECT_EQ(submitted.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(std::string(submitted.status().message()).find("try --target cpu"), std::string::npos)
      << submitted.status();
}

TEST(FarmCudaTest, F16ModelRunsOnCudaAndIsRefusedForCpu) {
  std::unique_ptr<FarmCore> core = MemoryFarm();
  auto on_cpu = core->Submit(Spec(target::Target::kCpu, 8), ReadModel("matmul_f16.onnx"));
  ASSERT_FALSE(on_cpu.ok());
  EXPECT_EQ(on_cpu.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(std::string(on_cpu.status().message()).find("try --target cuda"), std::string::npos)
      << on_cpu.status();
  auto on_cuda = core->Submit(Spec(target::Target::kCuda, 8), ReadModel("matmul_f16.onnx"));
  EXPECT_TRUE(on_cuda.ok()) << on_cuda.status();
}

}  // namespace
}  // namespace gtco::server
