// Matmul with a parallel outer loop, tiling and a register-blocked micro-kernel: an
// Allocate'd accumulator tile indexed by unrolled rows and vectorized columns.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <regex>
#include <string>
#include <vector>

#include "tests/unit/codegen/codegen_test_util.h"

namespace gtco::codegen {
namespace {

using ir::ForKind;
using testing::Build;
using testing::Flt;
using testing::For;
using testing::Int;
using testing::RandomVector;
using testing::RunKernel;
using testing::SharedJit;
using testing::Var;

constexpr int kLanes = 16;

/// Runs `make_body(acc_index, row, column)` for every element of an mr x (nr*16) tile:
/// unrolled rows `i`, unrolled column vectors `jv`, vectorized lanes `jl`.
template <typename MakeBody>
ir::Stmt ForTile(int mr, int nr, MakeBody make_body) {
  ir::Expr acc_index = Var("i") * Int(nr * kLanes) + Var("jv") * Int(kLanes) + Var("jl");
  ir::Expr column = Var("jv") * Int(kLanes) + Var("jl");
  return For(
      "i", 0, mr, ForKind::kUnrolled,
      For("jv", 0, nr, ForKind::kUnrolled,
          For("jl", 0, kLanes, ForKind::kVectorized, make_body(acc_index, Var("i"), column))));
}

/// C[M, N] = A[M, K] * B[K, N]; M % mr == 0, N % (nr * 16) == 0.
ir::LoweredFunc MakeMatmul(int64_t m, int64_t n, int64_t k, int mr, int nr) {
  const int64_t tile_cols = nr * kLanes;
  ir::Expr row_base = Var("io") * Int(mr);
  ir::Expr col_base = Var("jo") * Int(tile_cols);
  ir::Stmt init = ForTile(mr, nr, [&](ir::Expr acc, ir::Expr, ir::Expr) {
    return ir::MakeStore("acc", acc, Flt(0.0));
  });
  ir::Stmt update =
      For("kk", 0, k, ForKind::kSerial, ForTile(mr, nr, [&](ir::Expr acc, ir::Expr i, ir::Expr j) {
            ir::Expr a = ir::MakeLoad("A", (row_base + i) * Int(k) + Var("kk"));
            ir::Expr b = ir::MakeLoad("B", Var("kk") * Int(n) + col_base + j);
            return ir::MakeStore("acc", acc, ir::MakeLoad("acc", acc) + a * b);
          }));
  ir::Stmt write = ForTile(mr, nr, [&](ir::Expr acc, ir::Expr i, ir::Expr j) {
    return ir::MakeStore("C", (row_base + i) * Int(n) + col_base + j, ir::MakeLoad("acc", acc));
  });
  ir::Stmt tile = ir::MakeAllocate("acc", mr * tile_cols, ir::MakeBlock({init, update, write}));
  ir::Stmt body =
      For("io", 0, m / mr, ForKind::kParallel, For("jo", 0, n / tile_cols, ForKind::kSerial, tile));
  return {"matmul", {{"A", m * k}, {"B", k * n}, {"C", m * n}}, body};
}

std::vector<float> ReferenceMatmul(const std::vector<float>& a, const std::vector<float>& b,
                                   int64_t m, int64_t n, int64_t k) {
  std::vector<float> c(m * n, 0.0f);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t p = 0; p < k; ++p) {
      for (int64_t j = 0; j < n; ++j) c[i * n + j] += a[i * k + p] * b[p * n + j];
    }
  }
  return c;
}

void ExpectMatmulClose(const std::vector<float>& c, const std::vector<float>& expected, int64_t k) {
  for (size_t i = 0; i < c.size(); ++i) {
    ASSERT_NEAR(c[i], expected[i], 1e-5 * k + 1e-4 * std::fabs(expected[i])) << i;
  }
}

TEST(CodegenMatmulTest, RegisterBlockedMicroKernelIsCorrect) {
  constexpr int64_t kM = 24, kN = 64, kK = 37;
  ir::LoweredFunc func = MakeMatmul(kM, kN, kK, 6, 2);
  std::vector<float> a = RandomVector(kM * kK, -1, 1, 11), b = RandomVector(kK * kN, -1, 1, 12);
  std::vector<float> c(kM * kN, 0.0f);
  RunKernel(Build(func), {&a, &b, &c});
  ExpectMatmulClose(c, ReferenceMatmul(a, b, kM, kN, kK), kK);
}

bool HostHas(const std::string& feature) {
  const auto& features = SharedJit().host_features();
  return std::find(features.begin(), features.end(), feature) != features.end();
}

TEST(CodegenMatmulTest, AccumulatorTileLivesInRegisters) {
  if (!HostHas("avx512f")) GTEST_SKIP() << "register-tile check written for AVX-512 hosts";
  auto text = EmitLlvmIr(MakeMatmul(64, 64, 64, 4, 4));
  ASSERT_TRUE(text.ok()) << text.status();
  auto assembly = SharedJit().EmitAssembly(*text);
  ASSERT_TRUE(assembly.ok()) << assembly.status();
  EXPECT_NE(assembly->find("vfmadd"), std::string::npos) << "no FMA contraction";
  // A 4x64 tile is 1 KiB; had it stayed in memory the frame would be at least that large.
  std::smatch frame;
  std::string text_left = *assembly;
  std::regex frame_size(R"(subq\s+\$(\d+), %rsp)");
  while (std::regex_search(text_left, frame, frame_size)) {
    EXPECT_LT(std::stoll(frame[1]), 1024) << "accumulator tile spilled to the stack";
    text_left = frame.suffix();
  }
  // 16 zmm accumulators with 4 broadcasts of A and 4 vectors of B per k step.
  EXPECT_EQ(assembly->find("(%rsp), %zmm"), std::string::npos) << "stack reloads in kernel";
}

TEST(CodegenMatmulTest, Matmul512) {
  constexpr int64_t kSize = 512;
  ir::LoweredFunc func = MakeMatmul(kSize, kSize, kSize, 4, 4);
  auto text = EmitLlvmIr(func);
  ASSERT_TRUE(text.ok()) << text.status();
  const auto compile_start = std::chrono::steady_clock::now();
  auto entry = SharedJit().Compile(*text, func.name);
  const double compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - compile_start)
          .count();
  ASSERT_TRUE(entry.ok()) << entry.status();
  std::vector<float> a = RandomVector(kSize * kSize, -1, 1, 13);
  std::vector<float> b = RandomVector(kSize * kSize, -1, 1, 14);
  std::vector<float> c(kSize * kSize, 0.0f);
  RunKernel(*entry, {&a, &b, &c});
  ExpectMatmulClose(c, ReferenceMatmul(a, b, kSize, kSize, kSize), kSize);
  double best_seconds = 1e9;
  for (int repeat = 0; repeat < 5; ++repeat) {
    const auto start = std::chrono::steady_clock::now();
    RunKernel(*entry, {&a, &b, &c});
    best_seconds =
        std::min(best_seconds,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  // Informative only (no timing assertions in unit tests).
  std::printf("[ info ] matmul 512^3: compile %.1f ms, best %.3f ms, %.1f GFLOP/s (%s)\n",
              compile_ms, best_seconds * 1e3, 2.0 * kSize * kSize * kSize / best_seconds / 1e9,
              SharedJit().host_cpu().c_str());
}

}  // namespace
}  // namespace gtco::codegen
