// The CUDA worker on any machine (no GPU needed): the driver loader's errors, gtco-worker's
// refusal to start without a GPU, CUresult conversion, architecture and tolerance rules, and the
// GPU tests' kernels compiling with NVRTC.
#include <cuda.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "common/codegen/cuda/nvrtc.h"
#include "common/ir/conv.h"
#include "common/ir/reference.h"
#include "common/target/target.h"
#include "tests/unit/worker/cuda_test_kernels.h"
#include "tests/unit/worker/process_util.h"
#include "worker/cuda_driver.h"
#include "worker/cuda_measure.h"
#include "tests/unit/codegen_cuda/nvrtc_required.h"

namespace gtco::worker {
namespace {

constexpr const char* kWorker = GTCO_BINARY_DIR "/worker/gtco-worker";

bool DriverLibraryPresent() {
  void* library = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) return false;
  ::dlclose(library);
  return true;
}

TEST(CudaDriverTest, WithoutADriverOpenIsUnavailableAndSaysWhy) {
  if (DriverLibraryPresent()) GTEST_SKIP() << "libcuda.so.1 is installed here";
  EXPECT_FALSE(CudaDriver::LibraryLoads());
  absl::StatusOr<std::unique_ptr<CudaDriver>> driver = CudaDriver::Open(0);
  ASSERT_FALSE(driver.ok());
  EXPECT_EQ(driver.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(driver.status().message().find("libcuda.so.1 could not be loaded ("), std::string::npos)
      << driver.status();
  absl::StatusOr<std::unique_ptr<CudaMeasurer>> measurer = CudaMeasurer::Create(0);
  EXPECT_EQ(measurer.status().code(), absl::StatusCode::kUnavailable);
}

TEST(CudaWorkerProcessTest, WithoutAGpuExitsWithCode2AndNamesTheCpuTarget) {
  if (CudaDriver::Open(0).ok()) GTEST_SKIP() << "a GPU is present: the worker would serve";
  testing::ProcessOutput run =
      testing::RunProcess({kWorker, "--target", "cuda", "--server", "127.0.0.1:1"}, {}, 60);
  EXPECT_FALSE(run.timed_out);
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("gtco-worker: --target cuda needs an NVIDIA GPU"), std::string::npos)
      << run.output;
#ifdef GTCO_WORKER_HAS_CPU
  EXPECT_NE(run.output.find("Run with --target cpu to serve as a CPU worker."), std::string::npos)
      << run.output;
#endif
  if (!DriverLibraryPresent()) {
    EXPECT_NE(run.output.find("needs an NVIDIA GPU driver: libcuda.so.1 could not be loaded"),
              std::string::npos)
        << run.output;
  }
}

#ifdef GTCO_CUDA_STUB_LIBRARY
// The toolkit's stub libcuda exports every driver entry point but has no GPU behind it: loading
// it proves each versioned symbol name resolves, and cuInit's failure is reported.
TEST(CudaWorkerProcessTest, StubDriverResolvesEverySymbolAndReportsNoGpu) {
  if (!std::filesystem::exists(GTCO_CUDA_STUB_LIBRARY)) GTEST_SKIP() << "no stub libcuda";
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("gtco-stub-cuda-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::filesystem::remove(dir / "libcuda.so.1");
  std::filesystem::create_symlink(GTCO_CUDA_STUB_LIBRARY, dir / "libcuda.so.1");
  testing::ProcessOutput run =
      testing::RunProcess({kWorker, "--target", "cuda", "--server", "127.0.0.1:1"},
                          {{"LD_LIBRARY_PATH", dir.string()}}, 60);
  std::filesystem::remove_all(dir);
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_EQ(run.output.find("lacks"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("--target cuda needs an NVIDIA GPU: the NVIDIA driver"),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("cuInit: CUDA_ERROR_STUB_LIBRARY"), std::string::npos) << run.output;
}
#endif

TEST(CudaWorkerProcessTest, UnknownTargetIsAUsageError) {
  testing::ProcessOutput run =
      testing::RunProcess({kWorker, "--target", "tpu", "--server", "127.0.0.1:1"}, {}, 60);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.output.find("unknown target 'tpu'"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("usage:"), std::string::npos) << run.output;
}

TEST(CudaResultTest, ConvertsEachErrorToAStatusNamingIt) {
  EXPECT_TRUE(CudaResultToStatus(CUDA_SUCCESS, "cuInit").ok());
  absl::Status memory = CudaResultToStatus(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc(1 bytes)");
  EXPECT_EQ(memory.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(memory.message().rfind("cuMemAlloc(1 bytes): CUDA_ERROR_OUT_OF_MEMORY", 0), 0u)
      << memory;
  EXPECT_EQ(CudaResultToStatus(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "x").code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(CudaResultToStatus(CUDA_ERROR_NO_DEVICE, "cuInit").code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(CudaResultToStatus(CUDA_ERROR_STUB_LIBRARY, "cuInit").code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(CudaResultToStatus(CUDA_ERROR_INVALID_IMAGE, "cuModuleLoadData").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CudaResultToStatus(CUDA_ERROR_INVALID_VALUE, "cuLaunchKernel").code(),
            absl::StatusCode::kInvalidArgument);
  absl::Status fault = CudaResultToStatus(CUDA_ERROR_ILLEGAL_ADDRESS, "cuCtxSynchronize");
  EXPECT_EQ(fault.code(), absl::StatusCode::kInternal);
  EXPECT_NE(fault.message().find("cuCtxSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos)
      << fault;
  EXPECT_NE(fault.message().find("context is lost"), std::string::npos) << fault;
  absl::Status unknown = CudaResultToStatus(12345, "cuSomething");
  EXPECT_EQ(unknown.code(), absl::StatusCode::kInternal);
  EXPECT_NE(unknown.message().find("12345"), std::string::npos) << unknown;
}

TEST(CudaResultTest, OnlyKernelFaultsLoseTheContext) {
  for (CUresult fatal : {CUDA_ERROR_ILLEGAL_ADDRESS, CUDA_ERROR_ILLEGAL_INSTRUCTION,
                         CUDA_ERROR_MISALIGNED_ADDRESS, CUDA_ERROR_LAUNCH_FAILED, CUDA_ERROR_ASSERT,
                         CUDA_ERROR_HARDWARE_STACK_ERROR, CUDA_ERROR_LAUNCH_TIMEOUT}) {
    EXPECT_TRUE(CudaResultLosesContext(fatal)) << fatal;
  }
  for (CUresult recoverable :
       {CUDA_SUCCESS, CUDA_ERROR_OUT_OF_MEMORY, CUDA_ERROR_INVALID_VALUE,
        CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, CUDA_ERROR_INVALID_IMAGE, CUDA_ERROR_NOT_FOUND}) {
    EXPECT_FALSE(CudaResultLosesContext(recoverable)) << recoverable;
  }
}

TEST(CudaArchTest, CompilesForTheGpuOrACompatibleRequest) {
  const target::HardwareInfo h100 = target::CudaArchPreset(90);
  EXPECT_EQ(*CudaArchFor(h100, ""), "sm_90");
  EXPECT_EQ(*CudaArchFor(h100, "sm_90a"), "sm_90a");
  EXPECT_EQ(*CudaArchFor(h100, "sm_90"), "sm_90");
  EXPECT_EQ(CudaArchFor(h100, "sm_80").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CudaArchFor(h100, "sm_100a").status().code(), absl::StatusCode::kInvalidArgument);
  target::HardwareInfo ada = target::CudaArchPreset(89);
  EXPECT_EQ(*CudaArchFor(ada, ""), "sm_89");
  EXPECT_EQ(*CudaArchFor(ada, "sm_86"), "sm_86");
  EXPECT_EQ(*CudaArchFor(ada, "sm_80"), "sm_80");
  EXPECT_FALSE(CudaArchFor(ada, "sm_90a").ok());
  EXPECT_FALSE(CudaArchFor(ada, "sm_80a").ok());
  absl::Status bad = CudaArchFor(h100, "compute_90").status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("compute_90"), std::string::npos);
  EXPECT_FALSE(CudaArchFor(h100, "sm_").ok());
  EXPECT_FALSE(CudaArchFor(h100, "sm_9x0").ok());
}

ir::Workload F32MatMul(int64_t m, int64_t n, int64_t k) {
  ir::Workload w;
  w.anchor = ir::AnchorKind::kMatMul;
  w.matmul.m = m;
  w.matmul.n = n;
  w.matmul.k = k;
  w.inputs = {{ir::DType::kF32, {m, k}}, {ir::DType::kF32, {k, n}}};
  w.num_anchor_inputs = 2;
  w.output = {ir::DType::kF32, {m, n}};
  return w;
}

TEST(CudaToleranceTest, Tf32MatMulsGetLooserTolerances) {
  const ir::Workload w = F32MatMul(64, 64, 1024);
  double default_rtol = 0, default_atol = 0, rtol = 0, atol = 0;
  ir::DefaultTolerance(w, &default_rtol, &default_atol);
  CudaTolerance(w, "cuda_mm_simt/v1;bm=64;bn=64", &rtol, &atol);
  EXPECT_EQ(rtol, default_rtol);
  EXPECT_EQ(atol, default_atol);
  CudaTolerance(w, "cuda_mm_tf32/v1;bm=128;bn=128", &rtol, &atol);
  EXPECT_NEAR(rtol, 1e-3 * 32, 1e-12);
  EXPECT_NEAR(atol, 3e-3 * 32, 1e-12);
  rtol = atol = 0;  // the K split rounds the same products
  CudaTolerance(w, "cuda_mm_tf32_split/v1;bm=64;split=4", &rtol, &atol);
  EXPECT_NEAR(rtol, 1e-3 * 32, 1e-12);
  EXPECT_NEAR(atol, 3e-3 * 32, 1e-12);
}

TEST(CudaToleranceTest, Tf32ConvsGetTheToleranceOfTheirImplicitGemm) {
  ir::ConvParams p;
  p.in_channels = 64;
  p.in_h = p.in_w = 14;
  p.out_channels = 64;
  p.kernel_h = p.kernel_w = 4;  // K = 64 * 16 = 1024, as F32MatMul(.., 1024) above
  const ir::Workload w = ir::MakeConvWorkload(p);
  double default_rtol = 0, default_atol = 0, rtol = 0, atol = 0;
  ir::DefaultTolerance(w, &default_rtol, &default_atol);
  CudaTolerance(w, "cuda_conv_simt/v1;bm=64;bn=64", &rtol, &atol);
  EXPECT_EQ(rtol, default_rtol);
  EXPECT_EQ(atol, default_atol);
  CudaTolerance(w, "cuda_conv_tf32/v1;bm=128;bn=128", &rtol, &atol);
  EXPECT_NEAR(rtol, std::max(default_rtol, 1e-3 * 32), 1e-12);
  EXPECT_NEAR(atol, std::max(default_atol, 3e-3 * 32), 1e-12);
}

/// `value` with the 13 low mantissa bits cleared: what a Tensor Core reads of an f32 operand
/// that was not rounded to TF32 first (the worse of the two cases).
float TruncateToTf32(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  bits &= ~uint32_t{0x1FFF};
  std::memcpy(&value, &bits, sizeof(bits));
  return value;
}

TEST(CudaToleranceTest, Tf32ToleranceAcceptsTf32ProductsAndRejectsWrongSums) {
  constexpr int64_t kM = 64, kN = 64, kK = 4096;
  const ir::Workload w = F32MatMul(kM, kN, kK);
  const std::vector<std::vector<float>> inputs = ir::RandomInputs(w, 11);
  const std::vector<float> expected = ir::ComputeReference(w, inputs);
  std::vector<float> tf32(kM * kN), wrong(kM * kN);
  for (int64_t row = 0; row < kM; ++row) {
    for (int64_t col = 0; col < kN; ++col) {
      float acc = 0;
      for (int64_t kk = 0; kk < kK; ++kk) {
        if (kk == kK - 16) wrong[row * kN + col] = acc;  // misses the last k-tile
        acc += TruncateToTf32(inputs[0][row * kK + kk]) * TruncateToTf32(inputs[1][kk * kN + col]);
      }
      tf32[row * kN + col] = acc;
    }
  }
  double rtol = 0, atol = 0;
  ir::DefaultTolerance(w, &rtol, &atol);
  EXPECT_FALSE(ir::CompareOutputs(expected, tf32, rtol, atol).ok())
      << "the f32 tolerance would accept TF32 results: the loosening is unneeded";
  CudaTolerance(w, "cuda_mm_tf32/v1;bm=128", &rtol, &atol);
  absl::Status accepted = ir::CompareOutputs(expected, tf32, rtol, atol);
  EXPECT_TRUE(accepted.ok()) << accepted;
  EXPECT_FALSE(ir::CompareOutputs(expected, wrong, rtol, atol).ok());
}

TEST(CudaTestKernelsTest, CompileWithNvrtc) {
  GTCO_REQUIRE_NVRTC();
  for (const std::string& source :
       {testing::CorrectAddOne(), testing::WrongAddOne(), testing::SharedAddOne(),
        testing::FaultingAddOne(), testing::HangingAddOne()}) {
    absl::StatusOr<codegen::CompiledCuda> compiled =
        codegen::CompileCuda(source, "add_one", "sm_80");
    EXPECT_TRUE(compiled.ok()) << compiled.status() << "\n" << source;
  }
  const gtco::v1::Candidate matmul = testing::Bf16MatMulCandidate("mm", 64, 64, 64);
  absl::StatusOr<codegen::CompiledCuda> compiled =
      codegen::CompileCuda(matmul.program(), matmul.entry(), "sm_90");
  EXPECT_TRUE(compiled.ok()) << compiled.status() << "\n" << matmul.program();
  EXPECT_EQ(codegen::CompileCuda(testing::BrokenAddOne(), "add_one", "sm_80").status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gtco::worker
