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

gtco::v1::RegisterRequest CudaWorker(const target::HardwareInfo& gpu) {
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
  return request;
}

/// A deterministic stand-in latency: work over the launched threads, so plans differ.
double SimulatedSeconds(const gtco::v1::Candidate& candidate) {
  const gtco::v1::CudaLaunch& launch = candidate.launch();
  const double threads = static_cast<double>(launch.grid_x() * launch.grid_y() * launch.grid_z()) *
                         launch.block_x() * launch.block_y() * launch.block_z();
  return 1e-6 + 1e-3 / (1.0 + threads / 1e5) + (candidate.program().size() % 97) * 1e-8;
}

TEST(FarmCudaTest, CudaWorkerWithoutComputeCapabilityIsRefused) {
  std::unique_ptr<FarmCore> core = MemoryFarm();
  gtco::v1::RegisterRequest request = CudaWorker(target::CudaArchPreset(90));
  request.mutable_hardware()->set_sm_major(0);
  auto reply = core->Register(request);
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
  gtco::v1::SubmitHeader header;
  header.set_target("cuda");
  header.set_budget(48);
  auto submitted = core->Submit(header, model);
  ASSERT_TRUE(submitted.ok()) << submitted.status();

  std::set<std::string> mappings_seen;
  int compiled = 0;
  for (int round = 0; round < 40; ++round) {
    gtco::v1::LeaseRequest lease;
    lease.set_worker_id(registered->worker_id());
    lease.set_max_candidates(8);
    auto leased = core->Lease(lease);
    ASSERT_TRUE(leased.ok()) << leased.status();
    if (leased->candidates().empty()) break;
    gtco::v1::ReportRequest report;
    report.set_worker_id(registered->worker_id());
    for (const gtco::v1::Candidate& candidate : leased->candidates()) {
      EXPECT_EQ(candidate.language(), "cuda-c");
      EXPECT_GT(candidate.launch().block_x(), 0);
      EXPECT_NE(candidate.program().find("__global__"), std::string::npos);
      mappings_seen.insert(candidate.trace().substr(0, candidate.trace().find(';')));
      if (codegen::NvrtcBuilt() && compiled < 12) {
        const std::string arch = candidate.launch().arch().empty()
                                     ? absl::StrCat("sm_", gpu.SmVersion())
                                     : candidate.launch().arch();
        auto binary = codegen::CompileCuda(candidate.program(), candidate.entry(), arch);
        ASSERT_TRUE(binary.ok()) << candidate.trace() << ": " << binary.status();
        EXPECT_LE(int64_t{binary->usage.registers} * candidate.launch().block_x() *
                      candidate.launch().block_y() * candidate.launch().block_z(),
                  gpu.registers_per_block);
        ++compiled;
      }
      gtco::v1::MeasureResult& result = *report.add_results();
      result.set_candidate_id(candidate.candidate_id());
      result.set_ok(true);
      result.set_verified(true);
      result.set_median_seconds(SimulatedSeconds(candidate));
      result.set_min_seconds(result.median_seconds());
      result.set_max_seconds(result.median_seconds());
      result.set_repeats(10);
    }
    ASSERT_TRUE(core->Report(report).ok());
  }
  auto status = core->GetJob(submitted->job_id());
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->state(), "done") << status->DebugString();
  EXPECT_GE(status->trials_done(), 40);
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
  gtco::v1::SubmitHeader header;
  header.set_target("cuda");
  header.set_budget(8);
  auto submitted = core->Submit(header, ReadModel("matmul_integer.onnx"));
  ASSERT_FALSE(submitted.ok());
  EXPECT_EQ(submitted.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(std::string(submitted.status().message()).find("try --target cpu"), std::string::npos)
      << submitted.status();
}

TEST(FarmCudaTest, F16ModelRunsOnCudaAndIsRefusedForCpu) {
  std::unique_ptr<FarmCore> core = MemoryFarm();
  gtco::v1::SubmitHeader header;
  header.set_budget(8);
  header.set_target("cpu");
  auto on_cpu = core->Submit(header, ReadModel("matmul_f16.onnx"));
  ASSERT_FALSE(on_cpu.ok());
  EXPECT_EQ(on_cpu.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(std::string(on_cpu.status().message()).find("try --target cuda"), std::string::npos)
      << on_cpu.status();
  header.set_target("cuda");
  auto on_cuda = core->Submit(header, ReadModel("matmul_f16.onnx"));
  EXPECT_TRUE(on_cuda.ok()) << on_cuda.status();
}

}  // namespace
}  // namespace gtco::server
