// Prelude, signatures, epilogue emission and the NVRTC wrapper (compile + resource report).
#include "common/codegen/cuda/cuda_source.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <string>

#include "common/codegen/cuda/nvrtc.h"
#include "tests/unit/codegen_cuda/nvrtc_required.h"

namespace gtco::codegen {
namespace {

ir::Workload BiasGeluMatMul() {
  ir::Workload w;
  w.anchor = ir::AnchorKind::kMatMul;
  w.matmul.batch = 1;
  w.matmul.m = 4;
  w.matmul.n = 8;
  w.matmul.k = 16;
  w.inputs = {{ir::DType::kF32, {4, 16}}, {ir::DType::kF32, {16, 8}}, {ir::DType::kF32, {8}}};
  w.num_anchor_inputs = 2;
  using K = ir::Operand::Kind;
  w.epilogue = {{ir::EwOp::kAdd, {{K::kAcc, 0, 0}, {K::kInput, 2, 0}}},
                {ir::EwOp::kErf, {{K::kValue, 0, 0}}},
                {ir::EwOp::kMul, {{K::kValue, 1, 0}, {K::kConst, 0, 0.5f}}}};
  w.output = {ir::DType::kF32, {4, 8}};
  return w;
}

TEST(CudaSourceTest, EpilogueReadsBroadcastBiasAndEndsInResult) {
  absl::StatusOr<std::string> code = cuda::EmitEpilogue(BiasGeluMatMul(), "acc", "r", "c");
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_NE(code->find("in2[(long long)(c)]"), std::string::npos) << *code;
  EXPECT_NE(code->find("erff("), std::string::npos) << *code;
  EXPECT_NE(code->find("const float result = gtco_ew2;"), std::string::npos) << *code;
}

TEST(CudaSourceTest, EpilogueRejectsMissingInput) {
  ir::Workload w = BiasGeluMatMul();
  w.epilogue[0].args[1].index = 7;
  EXPECT_EQ(cuda::EmitEpilogue(w, "acc", "r", "c").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(CudaSourceTest, SignatureListsInputsThenOutput) {
  const std::string signature = cuda::KernelSignature(BiasGeluMatMul(), "k", 128);
  EXPECT_NE(signature.find("__launch_bounds__(128) k(const float* __restrict__ in0"),
            std::string::npos)
      << signature;
  EXPECT_NE(signature.find("float* __restrict__ out)"), std::string::npos) << signature;
}

TEST(NvrtcTest, ParsesPtxasReportForTheNamedEntryOnly) {
  const std::string log =
      "ptxas info    : Compiling entry function 'other' for 'sm_80'\n"
      "ptxas info    : Function properties for other\n"
      "ptxas         .     8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
      "ptxas info    : Used 99 registers, used 1 barriers, 4096 bytes smem\n"
      "ptxas info    : Compiling entry function 'k' for 'sm_80'\n"
      "ptxas info    : Function properties for k\n"
      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 40 registers, used 1 barriers, 1024 bytes smem, 368 bytes cmem[0]\n";
  CudaResourceUsage usage = ParsePtxasReport(log, "k");
  EXPECT_EQ(usage.registers, 40);
  EXPECT_EQ(usage.static_shared_bytes, 1024);
  EXPECT_EQ(usage.spill_store_bytes, 0);
}

TEST(NvrtcTest, CompilesPreludeAndEpilogueForSm80AndSm90) {
  GTCO_REQUIRE_NVRTC();
  const ir::Workload w = BiasGeluMatMul();
  absl::StatusOr<std::string> epilogue = cuda::EmitEpilogue(w, "acc", "r", "c");
  ASSERT_TRUE(epilogue.ok());
  const std::string source = cuda::Prelude() + cuda::KernelSignature(w, "k", 32) +
                             " {\n  const int r = blockIdx.x, c = threadIdx.x % 8;\n"
                             "  const float acc = in0[r * 16] * in1[c];\n" +
                             *epilogue + "  out[r * 8 + c] = result;\n}\n";
  for (const char* arch : {"sm_80", "sm_90"}) {
    absl::StatusOr<CompiledCuda> compiled = CompileCuda(source, "k", arch);
    ASSERT_TRUE(compiled.ok()) << arch << ": " << compiled.status() << "\n" << source;
    EXPECT_FALSE(compiled->cubin.empty());
    EXPECT_GT(compiled->usage.registers, 0) << compiled->log;
  }
}

TEST(NvrtcTest, ReportsCompileErrorsWithTheLog) {
  GTCO_REQUIRE_NVRTC();
  absl::StatusOr<CompiledCuda> compiled =
      CompileCuda("extern \"C\" __global__ void k() { undefined_thing(); }", "k", "sm_80");
  ASSERT_EQ(compiled.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(compiled.status().message().find("undefined_thing"), std::string::npos);
}

/// Runs this test program again with `env` (NAME=value) set, on `filter`; returns its output and
/// sets `exit_code`.
std::string RunSelf(const std::string& env, const std::string& filter, int* exit_code) {
  const std::string command = env + " /proc/" + std::to_string(getpid()) +
                              "/exe --gtest_filter=" + filter + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  std::string output;
  std::array<char, 4096> buffer;
  while (pipe != nullptr && fgets(buffer.data(), buffer.size(), pipe) != nullptr) {
    output += buffer.data();
  }
  const int status = pipe == nullptr ? -1 : pclose(pipe);
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return output;
}

// A library that is not NVRTC, or none, is refused with the reason; the compile tests then fail
// (they never skip in a build with CUDA).
TEST(NvrtcTest, UnusableLibraryIsUnavailableAndCompileTestsFail) {
  if (!NvrtcBuilt()) GTEST_SKIP() << NvrtcLoadStatus().message();
  const std::string filter = "NvrtcTest.ReportsCompileErrorsWithTheLog";
  int exit_code = 0;
  std::string output = RunSelf("GTCO_NVRTC_LIBRARY=/nonexistent/libnvrtc.so.13", filter,
                               &exit_code);
  EXPECT_NE(exit_code, 0) << output;
  EXPECT_NE(output.find("UNAVAILABLE: GTCO_NVRTC_LIBRARY=/nonexistent/libnvrtc.so.13 cannot be "
                        "used as NVRTC"),
            std::string::npos)
      << output;
  EXPECT_EQ(output.find("SKIPPED"), std::string::npos) << output;
  output = RunSelf("GTCO_NVRTC_LIBRARY=libz.so.1", filter, &exit_code);
  EXPECT_NE(exit_code, 0) << output;
  EXPECT_NE(output.find("libz.so.1 lacks an NVRTC entry point"), std::string::npos) << output;
}

}  // namespace
}  // namespace gtco::codegen
