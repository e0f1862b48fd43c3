// Math calls (exp, erf, tanh, sigmoid, sqrt, pow, fabs) on vectors and scalars, and a row
// softmax built from them.
#include <xmmintrin.h>

#include <cmath>
#include <limits>
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
using testing::Var;

constexpr int kLanes = 16;

/// Y[i] = f(X[i]) (and f(X[i], Z[i]) for pow) with a vectorized body and a scalar tail.
ir::LoweredFunc UnaryKernel(const std::string& function, int64_t n) {
  auto call = [&](const ir::Expr& index) {
    std::vector<ir::Expr> args = {ir::MakeLoad("X", index)};
    if (function == "pow") args.push_back(ir::MakeLoad("Z", index));
    return ir::MakeCall(function, args);
  };
  ir::Expr vector_index = Var("o") * Int(kLanes) + Var("l");
  ir::Stmt body = ir::MakeBlock({For("o", 0, n / kLanes, ForKind::kSerial,
                                     For("l", 0, kLanes, ForKind::kVectorized,
                                         ir::MakeStore("Y", vector_index, call(vector_index)))),
                                 For("t", n / kLanes * kLanes, n % kLanes, ForKind::kSerial,
                                     ir::MakeStore("Y", Var("t"), call(Var("t"))))});
  return {"math_" + function, {{"X", n}, {"Z", n}, {"Y", n}}, body};
}

double Reference(const std::string& function, float x, float z) {
  if (function == "exp") return std::exp(static_cast<double>(x));
  if (function == "erf") return std::erf(x);
  if (function == "tanh") return std::tanh(x);
  if (function == "sigmoid") return 1.0 / (1.0 + std::exp(-static_cast<double>(x)));
  if (function == "sqrt") return std::sqrt(x);
  if (function == "fabs") return std::fabs(x);
  return std::pow(static_cast<double>(x), static_cast<double>(z));
}

void CheckMath(const std::string& function, std::vector<float> x) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<float> z = RandomVector(n, 0.5f, 2.5f, 21), y(n);
  RunKernel(Build(UnaryKernel(function, n)), {&x, &z, &y});
  for (int64_t i = 0; i < n; ++i) {
    const double expected = Reference(function, x[i], z[i]);
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(y[i])) << function << "(" << x[i] << ") = " << y[i];
    } else if (std::isinf(expected)) {
      EXPECT_EQ(y[i], static_cast<float>(expected)) << function << "(" << x[i] << ")";
    } else {
      EXPECT_NEAR(y[i], expected, 4e-7 * std::fabs(expected) + 1e-30)
          << function << "(" << x[i] << ") at " << i;
    }
  }
}

TEST(CodegenMathTest, VectorizedCallsMatchLibm) {
  for (const char* function : {"exp", "erf", "tanh", "sigmoid", "sqrt", "pow", "fabs"}) {
    const bool positive = std::string(function) == "sqrt" || std::string(function) == "pow";
    std::vector<float> x = RandomVector(77, positive ? 0.0f : -6.0f, 6.0f, 20);
    CheckMath(function, x);
  }
}

TEST(CodegenMathTest, ErfAndTanhEdgeCases) {
  const float inf = std::numeric_limits<float>::infinity();
  for (const char* function : {"erf", "tanh"}) {
    std::vector<float> x = {inf, -inf, 0.0f, 1e-6f, -1e-6f, 0.9999f, 1.0f, 0.6249f, 0.625f,
                            12.0f, -12.0f, std::numeric_limits<float>::quiet_NaN()};
    CheckMath(function, x);
  }
}

TEST(CodegenMathTest, ExpEdgeCases) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {0.0f,
                          -0.0f,
                          1.0f,
                          -1.0f,
                          88.7f,
                          88.72f,
                          88.73f,
                          89.0f,
                          100.0f,
                          inf,
                          -inf,
                          -87.0f,
                          -90.0f,
                          -103.0f,
                          -110.0f,
                          1e-8f,
                          std::numeric_limits<float>::quiet_NaN(),
                          10.5f,
                          -20.25f,
                          3.0f};
  // Values below the normal range may flush; compare those against 0 with an absolute bound.
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<float> z(n, 1.0f), y(n);
  RunKernel(Build(UnaryKernel("exp", n)), {&x, &z, &y});
  for (int64_t i = 0; i < n; ++i) {
    const double expected = std::exp(static_cast<double>(x[i]));
    if (std::isnan(x[i])) {
      EXPECT_TRUE(std::isnan(y[i]));
    } else if (expected > std::numeric_limits<float>::max()) {
      EXPECT_EQ(y[i], inf) << x[i];
    } else if (expected < std::numeric_limits<float>::min()) {
      EXPECT_NEAR(y[i], expected, 2e-38) << x[i];
    } else {
      EXPECT_NEAR(y[i], expected, 4e-7 * expected) << x[i];
    }
  }
}

// Subnormal intermediates cost a microcode assist per instruction on Intel cores (a GEMM's GELU
// epilogue ran 5x slower on large values): exp, erf, tanh and sigmoid must produce none over
// the whole float range where their result is normal or an exact 0 / +-1. The kernel runs on
// this thread (no parallel loop), so its floating-point status flags land in this MXCSR.
TEST(CodegenMathTest, NoSubnormalIntermediates) {
  constexpr unsigned kDenormalFlag = 0x02, kUnderflowFlag = 0x10;
  std::vector<float> x;
  for (float magnitude = 1e-3f; magnitude < 300.0f; magnitude *= 1.07f) {
    x.push_back(magnitude);
    x.push_back(-magnitude);
  }
  x.push_back(std::numeric_limits<float>::infinity());
  x.push_back(-std::numeric_limits<float>::infinity());
  while (x.size() % kLanes != 0) x.push_back(0.5f);
  const int64_t n = static_cast<int64_t>(x.size());
  for (const char* function : {"exp", "erf", "tanh", "sigmoid"}) {
    std::vector<float> z(n, 1.0f), y(n);
    const KernelEntry entry = Build(UnaryKernel(function, n));
    _mm_setcsr(_mm_getcsr() & ~0x3Fu);  // clear the sticky exception flags
    RunKernel(entry, {&x, &z, &y});
    const unsigned flags = _mm_getcsr() & (kDenormalFlag | kUnderflowFlag);
    EXPECT_EQ(flags, 0u) << function << " raised " << (flags & kDenormalFlag ? "denormal " : "")
                         << (flags & kUnderflowFlag ? "underflow" : "");
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_FALSE(std::fpclassify(y[i]) == FP_SUBNORMAL) << function << "(" << x[i] << ")";
    }
  }
}

/// out[r, :] = softmax(X[r, :]) with per-row scratch (max, sum) and a parallel row loop.
ir::LoweredFunc RowSoftmax(int64_t rows, int64_t cols) {
  ir::Expr r = Var("r");
  auto element = [&](const ir::Expr& c) { return r * Int(cols) + c; };
  ir::Expr max_value = ir::MakeLoad("row_max", Int(0));
  ir::Expr sum_value = ir::MakeLoad("row_sum", Int(0));
  ir::Stmt find_max =
      ir::MakeBlock({ir::MakeStore("row_max", Int(0), Flt(-3.0e38)),
                     For("c", 0, cols, ForKind::kSerial,
                         ir::MakeStore("row_max", Int(0),
                                       ir::Max(max_value, ir::MakeLoad("X", element(Var("c"))))))});
  // Exponentials: vectorized blocks with a masked tail.
  ir::Expr vc = Var("co") * Int(kLanes) + Var("cl");
  ir::Stmt exps = For(
      "co", 0, (cols + kLanes - 1) / kLanes, ForKind::kSerial,
      For("cl", 0, kLanes, ForKind::kVectorized,
          ir::MakeIf(
              ir::MakeBinary(ir::ExprKind::kLt, vc, Int(cols)),
              ir::MakeStore("Y", element(vc),
                            ir::MakeCall("exp", {ir::MakeLoad("X", element(vc)) - max_value})))));
  ir::Stmt sum = ir::MakeBlock(
      {ir::MakeStore("row_sum", Int(0), Flt(0.0)),
       For("c", 0, cols, ForKind::kSerial,
           ir::MakeStore("row_sum", Int(0), sum_value + ir::MakeLoad("Y", element(Var("c")))))});
  ir::Stmt normalize =
      For("c", 0, cols, ForKind::kSerial,
          ir::MakeStore("Y", element(Var("c")), ir::MakeLoad("Y", element(Var("c"))) / sum_value));
  ir::Stmt row = ir::MakeAllocate(
      "row_max", 1,
      ir::MakeAllocate("row_sum", 1, ir::MakeBlock({find_max, exps, sum, normalize})));
  return {"softmax",
          {{"X", rows * cols}, {"Y", rows * cols}},
          For("r", 0, rows, ForKind::kParallel, row)};
}

TEST(CodegenMathTest, RowSoftmax) {
  constexpr int64_t kRows = 7, kCols = 77;
  std::vector<float> x = RandomVector(kRows * kCols, -8, 8, 22), y(kRows * kCols);
  RunKernel(Build(RowSoftmax(kRows, kCols)), {&x, &y});
  for (int64_t r = 0; r < kRows; ++r) {
    double max_value = -1e30, sum = 0;
    for (int64_t c = 0; c < kCols; ++c) max_value = std::max<double>(max_value, x[r * kCols + c]);
    for (int64_t c = 0; c < kCols; ++c) sum += std::exp(x[r * kCols + c] - max_value);
    for (int64_t c = 0; c < kCols; ++c) {
      const double expected = std::exp(x[r * kCols + c] - max_value) / sum;
      ASSERT_NEAR(y[r * kCols + c], expected, 1e-6 * expected + 1e-9) << r << "," << c;
    }
  }
}

}  // namespace
}  // namespace gtco::codegen
