// CI without a GPU: every CUDA kernel the generator produces for the test workloads (the tasks of
// the bundled models, vit_tiny's patch-embedding conv among them, and the benchmark shapes,
// ResNet-50 convs and max pool among them), under every applicable mapping, compiles with NVRTC
// for sm_80 and sm_90 and fits its register and shared-memory budget. Skips cleanly in a build
// without NVRTC.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/codegen/cuda/nvrtc.h"
#include "common/ir/conv.h"
#include "common/ir/pool.h"
#include "common/kernels/build_program.h"
#include "common/kernels/registry.h"
#include "tests/unit/kernels/matmul_test_workloads.h"
#include "tests/unit/schedule/test_workloads.h"
#include "common/onnx/model_analysis.h"
#include "common/schedule/space.h"
#include "common/target/target.h"
#include "tests/unit/codegen_cuda/nvrtc_required.h"

namespace gtco {
namespace {

constexpr int kSamplesPerMapping = 3;

struct Case {
  std::string name;  ///< a model file under tests/data, or "bench"
  int sm;
};

std::string ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << file.rdbuf();
  return bytes.str();
}

ir::Workload MatMul(int64_t batch, int64_t m, int64_t n, int64_t k, ir::DType in, ir::DType out,
                    bool trans_b = false) {
  return testing::MatMulWorkload(batch, m, n, k, in, out, trans_b);
}

ir::Workload Rows(ir::AnchorKind kind, int64_t rows, int64_t cols) {
  ir::Workload w;
  w.anchor = kind;
  w.row.rows = rows;
  w.row.cols = cols;
  w.inputs = {{ir::DType::kF32, {rows, cols}}};
  if (kind == ir::AnchorKind::kLayerNorm) {
    w.inputs.push_back({ir::DType::kF32, {cols}});
    w.inputs.push_back({ir::DType::kF32, {cols}});
  }
  w.num_anchor_inputs = static_cast<int>(w.inputs.size());
  w.output = {ir::DType::kF32, {rows, kind == ir::AnchorKind::kReduceMean ? 1 : cols}};
  return w;
}

/// The benchmark shapes of the CPU and GPU benchmarks (fp32, and f16/bf16 for Tensor Cores).
std::vector<ir::Workload> BenchWorkloads() {
  std::vector<ir::Workload> workloads;
  const int64_t gemms[][3] = {{512, 512, 512},   {128, 768, 3072}, {197, 2304, 768},
                              {197, 768, 3072},  {197, 3072, 768}, {6304, 768, 2304},
                              {4096, 4096, 4096}};
  for (const auto& gemm : gemms) {
    workloads.push_back(MatMul(1, gemm[0], gemm[1], gemm[2], ir::DType::kF32, ir::DType::kF32));
    workloads.push_back(MatMul(1, gemm[0], gemm[1], gemm[2], ir::DType::kF16, ir::DType::kF32));
    workloads.push_back(MatMul(1, gemm[0], gemm[1], gemm[2], ir::DType::kBF16, ir::DType::kBF16));
  }
  workloads.push_back(MatMul(12, 197, 197, 64, ir::DType::kF32, ir::DType::kF32, true));
  workloads.push_back(MatMul(12, 197, 64, 197, ir::DType::kF16, ir::DType::kF32));
  workloads.push_back(Rows(ir::AnchorKind::kSoftmax, 12 * 197, 197));
  workloads.push_back(Rows(ir::AnchorKind::kSoftmax, 32 * 12 * 197, 197));
  workloads.push_back(Rows(ir::AnchorKind::kLayerNorm, 197, 768));
  workloads.push_back(Rows(ir::AnchorKind::kLayerNorm, 32 * 197, 768));
  workloads.push_back(Rows(ir::AnchorKind::kReduceMean, 64, 1000));
  ir::Workload attention;
  attention.anchor = ir::AnchorKind::kAttention;
  attention.attention.batch = 32 * 12;
  attention.attention.seq_q = attention.attention.seq_k = 197;
  attention.attention.head_dim = attention.attention.value_dim = 64;
  attention.attention.scale = 0.125f;
  attention.inputs = {{ir::DType::kF32, {32 * 12, 197, 64}},
                      {ir::DType::kF32, {32 * 12, 197, 64}},
                      {ir::DType::kF32, {32 * 12, 197, 64}}};
  attention.num_anchor_inputs = 3;
  attention.output = {ir::DType::kF32, {32 * 12, 197, 64}};
  workloads.push_back(attention);
  // ResNet-50's stem (7x7 s2 p3 conv, bias, ReLU), a bottleneck 3x3 conv, and its max pool.
  const ir::ConvParams stem = schedule::testing::ResNetStem();
  workloads.push_back(ir::MakeConvWorkload(stem));
  ir::ConvParams bottleneck = stem;
  bottleneck.in_channels = bottleneck.out_channels = 128;
  bottleneck.in_h = bottleneck.in_w = 28;
  bottleneck.kernel_h = bottleneck.kernel_w = 3;
  bottleneck.stride_h = bottleneck.stride_w = 1;
  bottleneck.pad_top = bottleneck.pad_left = bottleneck.pad_bottom = bottleneck.pad_right = 1;
  workloads.push_back(ir::MakeConvWorkload(bottleneck));
  ir::PoolParams pool;
  pool.channels = 64;
  pool.in_h = pool.in_w = 112;
  pool.kernel_h = pool.kernel_w = 3;
  pool.stride_h = pool.stride_w = 2;
  pool.pad_top = pool.pad_left = pool.pad_bottom = pool.pad_right = 1;
  workloads.push_back(ir::MakePoolWorkload(pool));
  return workloads;
}

absl::StatusOr<std::vector<ir::Workload>> WorkloadsOf(const std::string& name) {
  if (name == "bench") return BenchWorkloads();
  const std::string bytes = ReadFile(std::string(GTCO_SOURCE_DIR) + "/tests/data/" + name);
  if (bytes.empty()) return absl::NotFoundError(absl::StrCat("cannot read tests/data/", name));
  graph::PlanOptions options;
  options.target = target::Target::kCuda;  // fuses attention, as the server plans CUDA jobs
  onnx::ShapeOverrides overrides;
  if (name == "patch_vit.onnx") overrides["input"] = {1, 4, 192};  // a dynamic batch
  absl::StatusOr<onnx::ModelAnalysis> analysis = onnx::AnalyzeOnnxModel(bytes, overrides, options);
  if (!analysis.ok()) return analysis.status();
  std::vector<ir::Workload> workloads;
  for (const onnx::ModelTask& task : analysis->tasks) workloads.push_back(task.workload);
  return workloads;
}

/// Compiles `kernel` for its arch on `hw` and checks the compiled resources against the budget.
void ExpectCompilesWithinBudget(const ir::Workload& w, const schedule::Trace& trace,
                                const target::HardwareInfo& hw) {
  SCOPED_TRACE(absl::StrCat(w.Description(), " / ", trace.ToString()));
  absl::StatusOr<kernels::CudaKernel> kernel = kernels::GenerateCudaKernel(w, trace, "gtco_kernel");
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  const std::string arch =
      kernel->plan.arch.empty() ? absl::StrCat("sm_", hw.SmVersion()) : kernel->plan.arch;
  absl::StatusOr<codegen::CompiledCuda> compiled =
      codegen::CompileCuda(kernel->source, kernel->entry, arch);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  const codegen::CudaResourceUsage& usage = compiled->usage;
  const int64_t threads = kernel->plan.Threads();
  EXPECT_GT(usage.registers, 0) << compiled->log;
  EXPECT_LE(usage.registers, 255);
  EXPECT_LE(int64_t{usage.registers} * threads, hw.registers_per_block)
      << usage.registers << " registers x " << threads << " threads";
  EXPECT_LE(usage.static_shared_bytes + kernel->plan.dynamic_shared_bytes,
            hw.shared_bytes_per_block);
}

class AllWorkloadsCompileTest : public ::testing::TestWithParam<Case> {};

TEST_P(AllWorkloadsCompileTest, EveryMappingCompilesWithinBudget) {
  GTCO_REQUIRE_NVRTC();
  const target::HardwareInfo hw = target::CudaArchPreset(GetParam().sm);
  absl::StatusOr<std::vector<ir::Workload>> workloads = WorkloadsOf(GetParam().name);
  ASSERT_TRUE(workloads.ok()) << workloads.status();
  ASSERT_FALSE(workloads->empty());
  std::mt19937_64 rng(GetParam().sm);
  int compiled = 0;
  for (const ir::Workload& w : *workloads) {
    if (ir::IsIntegerDType(w.inputs.front().dtype)) continue;  // no CUDA mapping (verdict test)
    absl::StatusOr<std::vector<schedule::SearchSpace>> spaces = kernels::CreateMappingSpaces(w, hw);
    ASSERT_TRUE(spaces.ok()) << w.Description() << ": " << spaces.status();
    for (const schedule::SearchSpace& space : *spaces) {
      ExpectCompilesWithinBudget(w, space.DefaultTrace(), hw);
      for (int sample = 0; sample < kSamplesPerMapping; ++sample) {
        ExpectCompilesWithinBudget(w, space.Sample(rng), hw);
      }
      compiled += 1 + kSamplesPerMapping;
    }
  }
  EXPECT_GT(compiled, 0);
  RecordProperty("kernels_compiled", compiled);
}

std::vector<Case> Cases() {
  std::vector<Case> cases;
  for (int sm : {80, 90}) {
    for (const char* name : {"bench", "transformer_block.onnx", "mlp.onnx", "matmul_bf16.onnx",
                             "matmul_f16.onnx", "patch_vit.onnx", "vit_tiny.onnx"}) {
      cases.push_back({name, sm});
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Models, AllWorkloadsCompileTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string name = absl::StrCat(info.param.name, "_sm", info.param.sm);
                           for (char& c : name) {
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

TEST(CudaVerdictTest, IntegerMatMulHasNoCudaMappingAndSaysWhy) {
  const target::HardwareInfo hw = target::CudaArchPreset(90);
  ir::Workload w = MatMul(1, 64, 64, 64, ir::DType::kI8, ir::DType::kI32);
  absl::StatusOr<std::vector<schedule::SearchSpace>> spaces = kernels::CreateMappingSpaces(w, hw);
  ASSERT_FALSE(spaces.ok());
  EXPECT_EQ(spaces.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CudaVerdictTest, CpuMappingsAreNotConsideredOnCuda) {
  const target::HardwareInfo hw = target::CudaArchPreset(80);
  for (const schedule::MappingVerdict& verdict :
       kernels::ExplainMappings(MatMul(1, 64, 64, 64, ir::DType::kF32, ir::DType::kF32), hw)) {
    EXPECT_NE(verdict.mapping, "avx512_fma");
    EXPECT_NE(verdict.mapping, "vector");
  }
}

}  // namespace
}  // namespace gtco
