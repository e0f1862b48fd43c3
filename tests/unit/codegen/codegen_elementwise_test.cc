// Element-wise kernels: vectorized loops with scalar or masked tails, gathers and scatters,
// select/min/max, guarded stores, parallel loops with captured variables.
#include <algorithm>
#include <cmath>
#include <vector>

#include "common/codegen/llvm/runtime.h"
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

ir::Expr AddRelu(const ir::Expr& index) {
  return ir::Max(ir::MakeLoad("A", index) + ir::MakeLoad("B", index), Flt(0.0));
}

/// C = relu(A + B): a vectorized main loop and a scalar tail loop.
ir::LoweredFunc AddReluWithScalarTail(int64_t n) {
  const int64_t main = n / kLanes * kLanes;
  ir::Expr vector_index = Var("io") * Int(kLanes) + Var("ii");
  ir::Stmt main_loop = For("io", 0, n / kLanes, ForKind::kSerial,
                           For("ii", 0, kLanes, ForKind::kVectorized,
                               ir::MakeStore("C", vector_index, AddRelu(vector_index))));
  ir::Stmt tail_loop =
      For("t", main, n - main, ForKind::kSerial, ir::MakeStore("C", Var("t"), AddRelu(Var("t"))));
  return {"add_relu", {{"A", n}, {"B", n}, {"C", n}}, ir::MakeBlock({main_loop, tail_loop})};
}

/// The same with the tail handled by a lane-dependent guard (masked loads and stores).
ir::LoweredFunc AddReluWithMaskedTail(int64_t n) {
  ir::Expr index = Var("io") * Int(kLanes) + Var("ii");
  ir::Stmt body = ir::MakeIf(ir::MakeBinary(ir::ExprKind::kLt, index, Int(n)),
                             ir::MakeStore("C", index, AddRelu(index)));
  return {"add_relu_masked",
          {{"A", n}, {"B", n}, {"C", n}},
          For("io", 0, (n + kLanes - 1) / kLanes, ForKind::kSerial,
              For("ii", 0, kLanes, ForKind::kVectorized, body))};
}

void CheckAddRelu(const ir::LoweredFunc& func, int64_t n) {
  KernelEntry entry = Build(func);
  std::vector<float> a = RandomVector(n, -1, 1, 1), b = RandomVector(n, -1, 1, 2);
  std::vector<float> c(n + kLanes, -7.0f);  // the slack detects writes past the end
  c.resize(n);
  RunKernel(entry, {&a, &b, &c});
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(c[i], std::max(a[i] + b[i], 0.0f)) << "n=" << n << " i=" << i;
  }
  EXPECT_EQ(c.data()[n], -7.0f) << "wrote past the end";
}

TEST(CodegenElementwiseTest, VectorizedWithScalarTail) {
  for (int64_t n : {1, 3, 16, 77, 197}) CheckAddRelu(AddReluWithScalarTail(n), n);
}

TEST(CodegenElementwiseTest, VectorizedWithMaskedTail) {
  for (int64_t n : {1, 3, 77, 197}) CheckAddRelu(AddReluWithMaskedTail(n), n);
}

TEST(CodegenElementwiseTest, GatherScatterBroadcastAndNonAffineIndices) {
  constexpr int64_t kRows = 5, kCols = 32;
  ir::Expr i = Var("i"), j = Var("j");
  // T[i, j] = X[j, i] (stride kRows gather), Y[j, i] = X[i, j] (scatter),
  // Z[i, j] = X[i, 0] (uniform load) + X[i, j / 3] (non-affine) + X[i, j % 4].
  auto wrap = [&](ir::Stmt body) {
    // j is let-bound to a ramp of the vectorized jl: its stride must propagate through the let.
    return For("i", 0, kRows, ForKind::kSerial,
               For("jo", 0, kCols / kLanes, ForKind::kSerial,
                   For("jl", 0, kLanes, ForKind::kVectorized,
                       ir::MakeLet("j", Var("jo") * Int(kLanes) + Var("jl"), body))));
  };
  ir::Stmt body = ir::MakeBlock({
      ir::MakeStore("T", i * Int(kCols) + j, ir::MakeLoad("XT", j * Int(kRows) + i)),
      ir::MakeStore("Y", j * Int(kRows) + i, ir::MakeLoad("X", i * Int(kCols) + j)),
      ir::MakeStore("Z", i * Int(kCols) + j,
                    ir::MakeLoad("X", i * Int(kCols)) +
                        ir::MakeLoad("X", i * Int(kCols) + j / Int(3)) +
                        ir::MakeLoad("X", i * Int(kCols) + j % Int(4))),
  });
  const int64_t size = kRows * kCols;
  ir::LoweredFunc func{
      "gather", {{"X", size}, {"XT", size}, {"T", size}, {"Y", size}, {"Z", size}}, wrap(body)};
  std::vector<float> x = RandomVector(size, -1, 1, 3), xt(size), t(size), y(size), z(size);
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t c = 0; c < kCols; ++c) xt[c * kRows + r] = x[r * kCols + c];
  }
  RunKernel(Build(func), {&x, &xt, &t, &y, &z});
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t c = 0; c < kCols; ++c) {
      ASSERT_EQ(t[r * kCols + c], x[r * kCols + c]) << r << "," << c;
      ASSERT_EQ(y[c * kRows + r], x[r * kCols + c]) << r << "," << c;
      const float expected = x[r * kCols] + x[r * kCols + c / 3] + x[r * kCols + c % 4];
      ASSERT_FLOAT_EQ(z[r * kCols + c], expected) << r << "," << c;
    }
  }
}

// A strided vector read of a small local buffer (a register tile, read by columns as the
// channel conv's write-back does) is read element by element; a large one is gathered. Both
// give the transposed values.
TEST(CodegenElementwiseTest, StridedReadsOfLocalBuffersTranspose) {
  for (const int64_t cols : {int64_t{16}, int64_t{128}}) {  // 96 floats: by element; 768: gathered
    constexpr int64_t kRows = 6;
    const int64_t size = kRows * cols;
    ir::Expr r = Var("r"), c = Var("c");
    // tile[r, c] = X[r, c]; Y[c, r] = tile[r, c] with r in the lanes (stride cols).
    ir::Stmt fill = For("fr", 0, kRows, ForKind::kSerial,
                        For("fc", 0, cols, ForKind::kVectorized,
                            ir::MakeStore("tile", Var("fr") * Int(cols) + Var("fc"),
                                          ir::MakeLoad("X", Var("fr") * Int(cols) + Var("fc")))));
    ir::Stmt out = For("c", 0, cols, ForKind::kUnrolled,
                       For("r", 0, kRows, ForKind::kVectorized,
                           ir::MakeStore("Y", c * Int(kRows) + r,
                                         ir::MakeLoad("tile", r * Int(cols) + c) + Flt(1.0))));
    ir::LoweredFunc func{"by_columns",
                         {{"X", size}, {"Y", size}},
                         ir::MakeAllocate("tile", size, ir::MakeBlock({fill, out}))};
    std::vector<float> x = RandomVector(size, -1, 1, 5), y(size, 0.0f);
    RunKernel(Build(func), {&x, &y});
    for (int64_t row = 0; row < kRows; ++row) {
      for (int64_t col = 0; col < cols; ++col) {
        ASSERT_EQ(y[col * kRows + row], x[row * cols + col] + 1.0f) << cols << ": " << row << ","
                                                                  << col;
      }
    }
  }
}

TEST(CodegenElementwiseTest, SelectMinMaxScalarAndVector) {
  constexpr int64_t kSize = 40;
  auto formula = [](const ir::Expr& index) {
    ir::Expr a = ir::MakeLoad("A", index), b = ir::MakeLoad("B", index);
    return ir::MakeSelect(ir::MakeBinary(ir::ExprKind::kLt, a, b), ir::Min(a, Flt(2.0) * b),
                          ir::Max(a, b) - Flt(1.0));
  };
  ir::Expr vector_index = Var("o") * Int(kLanes) + Var("l");
  ir::Stmt body = ir::MakeBlock({For("o", 0, kSize / kLanes, ForKind::kSerial,
                                     For("l", 0, kLanes, ForKind::kVectorized,
                                         ir::MakeStore("C", vector_index, formula(vector_index)))),
                                 For("s", kSize / kLanes * kLanes, kSize % kLanes, ForKind::kSerial,
                                     ir::MakeStore("C", Var("s"), formula(Var("s"))))});
  ir::LoweredFunc func{"select_min_max", {{"A", kSize}, {"B", kSize}, {"C", kSize}}, body};
  std::vector<float> a = RandomVector(kSize, -2, 2, 4), b = RandomVector(kSize, -2, 2, 5), c(kSize);
  RunKernel(Build(func), {&a, &b, &c});
  for (int64_t i = 0; i < kSize; ++i) {
    const float expected = a[i] < b[i] ? std::min(a[i], 2.0f * b[i]) : std::max(a[i], b[i]) - 1.0f;
    ASSERT_EQ(c[i], expected) << i;
  }
}

TEST(CodegenElementwiseTest, GuardedStoresWithUniformAndLaneConditions) {
  constexpr int64_t kRows = 4, kCols = 16;
  ir::Expr index = Var("r") * Int(kCols) + Var("c");
  ir::Expr x = ir::MakeLoad("X", index);
  // Rows < 2: even columns get x * 2, odd ones x + 100. Other rows: -x.
  ir::Stmt lane_branch = ir::MakeIf(ir::MakeBinary(ir::ExprKind::kEq, Var("c") % Int(2), Int(0)),
                                    ir::MakeStore("Y", index, x * Flt(2.0)),
                                    ir::MakeStore("Y", index, x + Flt(100.0)));
  ir::Stmt body = For("r", 0, kRows, ForKind::kSerial,
                      ir::MakeIf(ir::MakeBinary(ir::ExprKind::kLt, Var("r"), Int(2)),
                                 For("c", 0, kCols, ForKind::kVectorized, lane_branch),
                                 For("c", 0, kCols, ForKind::kVectorized,
                                     ir::MakeStore("Y", index, Flt(0.0) - x))));
  ir::LoweredFunc func{"guarded", {{"X", kRows * kCols}, {"Y", kRows * kCols}}, body};
  std::vector<float> x_data = RandomVector(kRows * kCols, -1, 1, 6), y(kRows * kCols);
  RunKernel(Build(func), {&x_data, &y});
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t c = 0; c < kCols; ++c) {
      const float v = x_data[r * kCols + c];
      const float expected = r < 2 ? (c % 2 == 0 ? v * 2 : v + 100) : -v;
      ASSERT_EQ(y[r * kCols + c], expected) << r << "," << c;
    }
  }
}

// Comparisons of an affine lane expression (base + lane * stride) with a uniform bound, which
// the emitter turns into a lane-index comparison against one scalar-computed count: every form
// (<, <=, either side), strides up and down and wider than one, bounds below, inside and past the
// vector, 16, 64 and 128 lanes (past 127 the lane indices are compared as i32, not bytes).
TEST(CodegenElementwiseTest, LaneRangeComparisonsOfRampsAndBounds) {
  constexpr int64_t kBounds = 161;  // bound = t - 80 for t < kBounds
  for (const int64_t lanes : {int64_t{16}, int64_t{64}, int64_t{128}}) {
    for (const int64_t stride : {1, 2, 3, -1, -2, -3}) {
      for (int form = 0; form < 4; ++form) {
        SCOPED_TRACE(::testing::Message() << lanes << " lanes, stride " << stride << ", form "
                                          << form);
        const ir::Expr ramp = Var("c") * Int(stride) + Int(3);
        const ir::Expr bound = Var("t") - Int(80);
        const ir::ExprKind kind = form % 2 == 0 ? ir::ExprKind::kLt : ir::ExprKind::kLe;
        const ir::Expr cond =
            form < 2 ? ir::MakeBinary(kind, ramp, bound) : ir::MakeBinary(kind, bound, ramp);
        const ir::Expr index = Var("t") * Int(lanes) + Var("c");
        ir::LoweredFunc func{
            "lane_range",
            {{"Y", kBounds * lanes}},
            For("t", 0, kBounds, ForKind::kSerial,
                For("c", 0, lanes, ForKind::kVectorized,
                    ir::MakeStore("Y", index, ir::MakeSelect(cond, Flt(1.0), Flt(0.0)))))};
        std::vector<float> y(kBounds * lanes, -1.0f);
        RunKernel(Build(func), {&y});
        for (int64_t t = 0; t < kBounds; ++t) {
          for (int64_t c = 0; c < lanes; ++c) {
            const int64_t r = c * stride + 3, b = t - 80;
            const bool expected =
                form == 0 ? r < b : form == 1 ? r <= b : form == 2 ? b < r : b <= r;
            ASSERT_EQ(y[t * lanes + c], expected ? 1.0f : 0.0f) << "bound " << b << " lane " << c;
          }
        }
      }
    }
  }
}

TEST(CodegenElementwiseTest, UniformStoresInVectorizedLoops) {
  // Per row r, with c vectorized over 16 lanes:
  //   S[r] = X[r, c]                      -> every lane writes S[r]; the last lane's value stays
  //   if (c == 5) S[4 + r] = X[r, 0] + 1   -> uniform value under a lane mask: written
  //   if (c < 0)  S[8 + r] = 7             -> no lane active: not written
  constexpr int64_t kRows = 4, kCols = 16;
  ir::Expr c = Var("c"), r = Var("r");
  ir::Expr first = ir::MakeLoad("X", r * Int(kCols));
  ir::Stmt body = ir::MakeBlock({
      ir::MakeStore("S", r, ir::MakeLoad("X", r * Int(kCols) + c)),
      ir::MakeIf(ir::MakeBinary(ir::ExprKind::kEq, c, Int(5)),
                 ir::MakeStore("S", Int(4) + r, first + Flt(1.0))),
      ir::MakeIf(ir::MakeBinary(ir::ExprKind::kLt, c, Int(0)),
                 ir::MakeStore("S", Int(8) + r, Flt(7.0))),
  });
  ir::LoweredFunc func{
      "uniform_stores",
      {{"X", kRows * kCols}, {"S", 3 * kRows}},
      For("r", 0, kRows, ForKind::kSerial, For("c", 0, kCols, ForKind::kVectorized, body))};
  std::vector<float> x = RandomVector(kRows * kCols, -1, 1, 8), s(3 * kRows, -5.0f);
  RunKernel(Build(func), {&x, &s});
  for (int64_t row = 0; row < kRows; ++row) {
    EXPECT_EQ(s[row], x[row * kCols + kCols - 1]) << row;
    EXPECT_EQ(s[4 + row], x[row * kCols] + 1.0f) << row;
    EXPECT_EQ(s[8 + row], -5.0f) << row;
  }
}

TEST(CodegenElementwiseTest, ParallelLoopsCaptureLetsAndNest) {
  // for s in 2 (serial): let scale = f32(s) + 0.5: parallel for i in 37:
  //   parallel for j in 3: Y[s*111 + i*3 + j] = X[i*3 + j] * scale + f32(s)
  constexpr int64_t kRows = 37, kCols = 3;
  ir::Expr f32_s = ir::MakeCast(ir::ScalarType::kF32, Var("s"));
  ir::Stmt store =
      ir::MakeStore("Y", Var("s") * Int(kRows * kCols) + Var("i") * Int(kCols) + Var("j"),
                    ir::MakeLoad("X", Var("i") * Int(kCols) + Var("j")) *
                            ir::MakeVar("scale", ir::ScalarType::kF32) +
                        f32_s);
  ir::Stmt body = For("s", 0, 2, ForKind::kSerial,
                      ir::MakeLet("scale", f32_s + Flt(0.5),
                                  For("i", 0, kRows, ForKind::kParallel,
                                      For("j", 0, kCols, ForKind::kParallel, store))));
  ir::LoweredFunc func{"parallel_nest", {{"X", kRows * kCols}, {"Y", 2 * kRows * kCols}}, body};
  KernelEntry entry = Build(func);
  for (int threads : {1, 2, 3}) {
    SetParallelThreads(threads);
    EXPECT_EQ(ParallelThreads(), threads);
    std::vector<float> x = RandomVector(kRows * kCols, -1, 1, 7), y(2 * kRows * kCols, 0.0f);
    RunKernel(entry, {&x, &y});
    for (int64_t s = 0; s < 2; ++s) {
      for (int64_t k = 0; k < kRows * kCols; ++k) {
        ASSERT_NEAR(y[s * kRows * kCols + k], x[k] * (s + 0.5f) + s, 1e-6) << threads << " " << k;
      }
    }
  }
  SetParallelThreads(0);
}

}  // namespace
}  // namespace gtco::codegen
