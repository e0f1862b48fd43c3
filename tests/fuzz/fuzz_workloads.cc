// Fixed workloads and machine shared by the fuzz targets and the seed-corpus generator.
#include "tests/fuzz/fuzz_workloads.h"

#include <cstdint>

#include "tests/unit/schedule/test_workloads.h"

namespace gtco::fuzz {
namespace {

ir::Workload LowpMatMul(int64_t m, int64_t n, int64_t k, ir::DType a, ir::DType b, ir::DType out,
                        int32_t a_zero_point, int32_t b_zero_point) {
  ir::Workload w = schedule::testing::MatMul(1, m, n, k);
  w.inputs[0].dtype = a;
  w.inputs[1].dtype = b;
  w.output.dtype = out;
  w.matmul.a_zero_point = a_zero_point;
  w.matmul.b_zero_point = b_zero_point;
  return w;
}

}  // namespace

std::vector<ir::Workload> FixedWorkloads() {
  using schedule::testing::Elementwise;
  using schedule::testing::MatMul;
  using schedule::testing::MatMulBiasGelu;
  using schedule::testing::RowWorkload;
  std::vector<ir::Workload> workloads = {
      MatMul(1, 64, 48, 40),
      MatMul(1, 7, 13, 5, /*trans_a=*/true, /*trans_b=*/true),
      MatMulBiasGelu(2, 33, 70, 19, /*trans_b=*/true),
      MatMul(3, 1, 1, 1),
      LowpMatMul(16, 32, 24, ir::DType::kBF16, ir::DType::kBF16, ir::DType::kF32, 0, 0),
      LowpMatMul(5, 17, 9, ir::DType::kBF16, ir::DType::kBF16, ir::DType::kBF16, 0, 0),
      LowpMatMul(12, 40, 36, ir::DType::kU8, ir::DType::kI8, ir::DType::kI32, 3, -2),
      RowWorkload(ir::AnchorKind::kSoftmax, 8, 33),
      RowWorkload(ir::AnchorKind::kLayerNorm, 4, 70),
      RowWorkload(ir::AnchorKind::kReduceMean, 3, 17),
      Elementwise({2, 5, 9}),
  };
  return workloads;
}

target::HardwareInfo FuzzMachine() {
  target::HardwareInfo hw;
  hw.cpu_model = "fuzz cpu";
  hw.cpu_features = {"sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl",
                     "avx512_bf16", "avx512_vnni"};
  hw.cores = 4;
  return hw;
}

}  // namespace gtco::fuzz
