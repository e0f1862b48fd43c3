// Tests of the typed loop IR in the CPU code generator: typed buffers, casts (bf16 rounding),
// i32 arithmetic, 32-bit words loaded from byte/bf16 buffers, and the dot-product calls in
// their intrinsic (4/8/16 lanes, skipped without the CPU feature) and portable forms.
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/ir/reference.h"
#include "tests/unit/codegen/codegen_test_util.h"

namespace gtco::codegen {
namespace {

using ir::ScalarType;
using testing::For;
using testing::Int;
using testing::SharedJit;
using testing::Var;

bool HostHas(const std::string& llvm_feature) {
  const std::vector<std::string>& features = SharedJit().host_features();
  return std::find(features.begin(), features.end(), llvm_feature) != features.end();
}

ir::Expr I32(int64_t value) { return ir::MakeTypedInt(value, ScalarType::kI32); }

/// Compiles `func` and runs it on raw buffers (in parameter order).
absl::Status CompileAndRun(const ir::LoweredFunc& func, const std::vector<void*>& buffers) {
  absl::StatusOr<std::string> text = EmitLlvmIr(func);
  if (!text.ok()) return text.status();
  absl::StatusOr<KernelEntry> entry = SharedJit().Compile(*text, func.name);
  if (!entry.ok()) return entry.status();
  std::vector<void*> args = buffers;
  (*entry)(args.data());
  return absl::OkStatus();
}

/// Reference of dot_u8s8x4 on one lane.
int32_t DotU8S8(int32_t acc, uint32_t a, uint32_t b) {
  int64_t sum = acc;
  for (int q = 0; q < 4; ++q) {
    sum += static_cast<int64_t>((a >> (8 * q)) & 0xFF) *
           static_cast<int8_t>(static_cast<uint8_t>((b >> (8 * q)) & 0xFF));
  }
  return static_cast<int32_t>(static_cast<uint32_t>(sum));
}

/// Reference of dot_bf16x2 on one lane (high pair first, f32 steps; products are exact).
float DotBF16(float acc, uint32_t a, uint32_t b) {
  const auto half = [](uint32_t word, int index) {
    return ir::BF16ToFloat(static_cast<uint16_t>(word >> (16 * index)));
  };
  acc += half(a, 1) * half(b, 1);
  acc += half(a, 0) * half(b, 0);
  return acc;
}

TEST(CodegenLowpTest, TypedIrPrintsTypes) {
  ir::LoweredFunc func{
      "typed",
      {{"a", 8, ScalarType::kU8}, {"out", 2, ScalarType::kI32}},
      ir::MakeTypedAllocate(
          "tmp", 4, ScalarType::kI32,
          ir::MakeStore("out", Int(0), ir::MakeTypedLoad("a", Int(4), ScalarType::kI32) + I32(7)))};
  const std::string text = ir::ToString(func);
  EXPECT_NE(text.find("a[8]:u8, out[2]:i32"), std::string::npos) << text;
  EXPECT_NE(text.find("allocate tmp[4]:i32"), std::string::npos) << text;
  EXPECT_NE(text.find("a<i32>[4] + 7i32"), std::string::npos) << text;
  // i32 immediates fold with wrap-around; storage types have no arithmetic.
  const ir::Expr folded = I32(INT32_MAX) + I32(1);
  ASSERT_EQ(folded->kind, ir::ExprKind::kIntImm);
  EXPECT_EQ(folded->int_value, INT32_MIN);
  EXPECT_EQ(folded->type, ScalarType::kI32);
}

TEST(CodegenLowpTest, CastsBetweenStorageAndArithmeticTypes) {
  constexpr int kCount = 16;
  std::vector<uint8_t> u8(kCount);
  std::vector<int8_t> i8(kCount);
  std::vector<float> f32 = {1.0f,     1.00390625f, 1.01171875f, -2.5f, 3.1415927f, 1e-40f,
                            INFINITY, -INFINITY,   NAN,         0.0f,  -0.0f,      65504.0f,
                            1e30f,    -7.75f,      0.3333333f,  255.9f};
  for (int idx = 0; idx < kCount; ++idx) {
    u8[idx] = static_cast<uint8_t>(250 + idx);  // wraps past 255
    i8[idx] = static_cast<int8_t>(-100 + 13 * idx);
  }
  for (bool vectorized : {true, false}) {
    SCOPED_TRACE(vectorized ? "vectorized" : "scalar");
    std::vector<int32_t> ints(kCount, 0);
    std::vector<uint16_t> bf16(kCount, 0);
    std::vector<float> back(kCount, 0.0f);
    const ir::Expr i = Var("i");
    const ir::Expr sum =
        ir::MakeCast(ScalarType::kI32, ir::MakeTypedLoad("u8", i, ScalarType::kU8)) +
        ir::MakeCast(ScalarType::kI32, ir::MakeTypedLoad("i8", i, ScalarType::kI8)) * I32(3);
    const ir::Expr rounded = ir::MakeCast(ScalarType::kBF16, ir::MakeLoad("f32", i));
    ir::Stmt body =
        ir::MakeBlock({ir::MakeStore("ints", i, sum), ir::MakeStore("bf16", i, rounded),
                       ir::MakeStore("back", i, ir::MakeCast(ScalarType::kF32, rounded))});
    ir::LoweredFunc func{
        "casts",
        {{"u8", kCount, ScalarType::kU8},
         {"i8", kCount, ScalarType::kI8},
         {"f32", kCount},
         {"ints", kCount, ScalarType::kI32},
         {"bf16", kCount, ScalarType::kBF16},
         {"back", kCount}},
        For("i", 0, kCount, vectorized ? ir::ForKind::kVectorized : ir::ForKind::kSerial, body)};
    ASSERT_TRUE(CompileAndRun(
                    func, {u8.data(), i8.data(), f32.data(), ints.data(), bf16.data(), back.data()})
                    .ok());
    for (int idx = 0; idx < kCount; ++idx) {
      EXPECT_EQ(ints[idx], u8[idx] + 3 * i8[idx]) << idx;
      EXPECT_EQ(bf16[idx], ir::FloatToBF16(f32[idx])) << idx << " " << f32[idx];
      if (std::isnan(f32[idx])) {
        EXPECT_TRUE(std::isnan(back[idx]));
      } else {
        EXPECT_EQ(back[idx], ir::BF16ToFloat(ir::FloatToBF16(f32[idx]))) << idx;
      }
    }
  }
  // Ties round to even: 1 + 2^-8 -> 1, 1 + 3 * 2^-8 -> 1 + 2^-6.
  EXPECT_EQ(ir::BF16ToFloat(ir::FloatToBF16(1.00390625f)), 1.0f);
  EXPECT_EQ(ir::BF16ToFloat(ir::FloatToBF16(1.01171875f)), 1.015625f);
}

TEST(CodegenLowpTest, WordLoadsFromByteAndBf16Buffers) {
  constexpr int kWords = 16;
  std::vector<uint8_t> bytes(8 * kWords);
  for (size_t idx = 0; idx < bytes.size(); ++idx) bytes[idx] = static_cast<uint8_t>(idx * 37 + 1);
  std::vector<uint16_t> halves(2 * kWords);
  for (size_t idx = 0; idx < halves.size(); ++idx) halves[idx] = static_cast<uint16_t>(idx * 4099);
  std::vector<int32_t> contiguous(kWords), strided(kWords), pairs(kWords);
  const ir::Expr i = Var("i");
  ir::Stmt body = ir::MakeBlock(
      {ir::MakeStore("contiguous", i, ir::MakeTypedLoad("bytes", i * Int(4), ScalarType::kI32)),
       ir::MakeStore("strided", i,
                     ir::MakeTypedLoad("bytes", i * Int(8) + Int(1), ScalarType::kI32)),
       ir::MakeStore("pairs", i, ir::MakeTypedLoad("halves", i * Int(2), ScalarType::kI32))});
  ir::LoweredFunc func{"words",
                       {{"bytes", 8 * kWords, ScalarType::kU8},
                        {"halves", 2 * kWords, ScalarType::kBF16},
                        {"contiguous", kWords, ScalarType::kI32},
                        {"strided", kWords, ScalarType::kI32},
                        {"pairs", kWords, ScalarType::kI32}},
                       For("i", 0, kWords, ir::ForKind::kVectorized, body)};
  ASSERT_TRUE(CompileAndRun(func, {bytes.data(), halves.data(), contiguous.data(), strided.data(),
                                   pairs.data()})
                  .ok());
  for (int word = 0; word < kWords; ++word) {
    int32_t expected;
    std::memcpy(&expected, bytes.data() + 4 * word, 4);
    EXPECT_EQ(contiguous[word], expected);
    std::memcpy(&expected, bytes.data() + 8 * word + 1, 4);
    EXPECT_EQ(strided[word], expected);
    std::memcpy(&expected, halves.data() + 2 * word, 4);
    EXPECT_EQ(pairs[word], expected);
  }
}

/// acc[i] = dot(acc[i], a[i], b[i]) over `lanes`-wide vector loops (0 = scalar loop).
void CheckDot(bool bf16, int lanes) {
  SCOPED_TRACE(std::string(bf16 ? "dot_bf16x2" : "dot_u8s8x4") + " lanes " + std::to_string(lanes));
  constexpr int kCount = 80;  // a multiple of 4, 8, 16 and 5
  std::mt19937 rng(lanes * 2 + bf16);
  std::vector<uint32_t> a(kCount), b(kCount);
  std::vector<int32_t> int_acc(kCount);
  std::vector<float> float_acc(kCount);
  std::uniform_real_distribution<float> values(-2.0f, 2.0f);
  for (int idx = 0; idx < kCount; ++idx) {
    if (bf16) {
      a[idx] = ir::FloatToBF16(values(rng)) | uint32_t{ir::FloatToBF16(values(rng))} << 16;
      b[idx] = ir::FloatToBF16(values(rng)) | uint32_t{ir::FloatToBF16(values(rng))} << 16;
      float_acc[idx] = values(rng);
    } else {
      a[idx] = rng();
      b[idx] = rng();
      int_acc[idx] = static_cast<int32_t>(rng());
    }
  }
  std::vector<int32_t> int_expected = int_acc;
  std::vector<float> float_expected = float_acc;
  for (int idx = 0; idx < kCount; ++idx) {
    if (bf16) {
      float_expected[idx] = DotBF16(float_acc[idx], a[idx], b[idx]);
    } else {
      int_expected[idx] = DotU8S8(int_acc[idx], a[idx], b[idx]);
    }
  }
  const ScalarType acc_type = bf16 ? ScalarType::kF32 : ScalarType::kI32;
  const ir::Expr i = lanes > 0 ? Var("o") * Int(lanes) + Var("v") : Var("o");
  const ir::Expr dot = ir::MakeTypedCall(
      bf16 ? "dot_bf16x2" : "dot_u8s8x4", acc_type,
      {ir::MakeTypedLoad("acc", i, acc_type), ir::MakeTypedLoad("a", i, ScalarType::kI32),
       ir::MakeTypedLoad("b", i, ScalarType::kI32)});
  ir::Stmt body = ir::MakeStore("acc", i, dot);
  if (lanes > 0) body = For("v", 0, lanes, ir::ForKind::kVectorized, body);
  body = For("o", 0, lanes > 0 ? kCount / lanes : kCount, ir::ForKind::kSerial, body);
  ir::LoweredFunc func{
      "dot",
      {{"a", kCount, ScalarType::kI32}, {"b", kCount, ScalarType::kI32}, {"acc", kCount, acc_type}},
      body};
  void* acc = bf16 ? static_cast<void*>(float_acc.data()) : static_cast<void*>(int_acc.data());
  const absl::Status status = CompileAndRun(func, {a.data(), b.data(), acc});
  ASSERT_TRUE(status.ok()) << status;
  for (int idx = 0; idx < kCount; ++idx) {
    if (bf16) {
      EXPECT_NEAR(float_acc[idx], float_expected[idx], 1e-6f * (1 + std::fabs(float_expected[idx])))
          << idx;
    } else {
      EXPECT_EQ(int_acc[idx], int_expected[idx]) << idx;
    }
  }
}

TEST(CodegenLowpTest, PortableDotProductsOnAnyHost) {
  for (bool bf16 : {false, true}) {
    CheckDot(bf16, 0);  // scalar
    CheckDot(bf16, 5);  // no intrinsic of that width
  }
}

TEST(CodegenLowpTest, VnniDotProductIntrinsics) {
  if (!HostHas("avx512vnni") || !HostHas("avx512vl")) GTEST_SKIP() << "host lacks avx512vnni";
  for (int lanes : {4, 8, 16}) CheckDot(false, lanes);
}

TEST(CodegenLowpTest, Bf16DotProductIntrinsics) {
  if (!HostHas("avx512bf16") || !HostHas("avx512vl")) GTEST_SKIP() << "host lacks avx512bf16";
  for (int lanes : {4, 8, 16}) CheckDot(true, lanes);
}

TEST(CodegenLowpTest, PackCallsBuildWords) {
  constexpr int kCount = 16;
  std::vector<int32_t> ints(4 * kCount);
  std::vector<float> floats(2 * kCount);
  for (int idx = 0; idx < 4 * kCount; ++idx) ints[idx] = idx * 77 - 1000;
  for (int idx = 0; idx < 2 * kCount; ++idx) floats[idx] = 0.1f * idx - 1.3f;
  std::vector<int32_t> quads(kCount), pairs(kCount), flipped(kCount);
  const ir::Expr i = Var("i");
  std::vector<ir::Expr> parts;
  for (int q = 0; q < 4; ++q) {
    parts.push_back(ir::MakeTypedLoad("ints", i * Int(4) + Int(q), ScalarType::kI32));
  }
  const ir::Expr quad = ir::MakeTypedCall("pack_i8x4", ScalarType::kI32, parts);
  ir::Stmt body = ir::MakeBlock(
      {ir::MakeStore("quads", i, quad),
       ir::MakeStore("flipped", i,
                     ir::MakeTypedCall("bitxor", ScalarType::kI32,
                                       {quad, I32(static_cast<int32_t>(0x80808080u))})),
       ir::MakeStore("pairs", i,
                     ir::MakeTypedCall("pack_bf16x2", ScalarType::kI32,
                                       {ir::MakeLoad("floats", i * Int(2)),
                                        ir::MakeLoad("floats", i * Int(2) + Int(1))}))});
  ir::LoweredFunc func{"packs",
                       {{"ints", 4 * kCount, ScalarType::kI32},
                        {"floats", 2 * kCount},
                        {"quads", kCount, ScalarType::kI32},
                        {"pairs", kCount, ScalarType::kI32},
                        {"flipped", kCount, ScalarType::kI32}},
                       For("i", 0, kCount, ir::ForKind::kVectorized, body)};
  ASSERT_TRUE(
      CompileAndRun(func, {ints.data(), floats.data(), quads.data(), pairs.data(), flipped.data()})
          .ok());
  for (int idx = 0; idx < kCount; ++idx) {
    uint32_t quad_expected = 0;
    for (int q = 0; q < 4; ++q) quad_expected |= (ints[4 * idx + q] & 0xFFu) << (8 * q);
    EXPECT_EQ(static_cast<uint32_t>(quads[idx]), quad_expected);
    EXPECT_EQ(static_cast<uint32_t>(flipped[idx]), quad_expected ^ 0x80808080u);
    const uint32_t pair_expected =
        ir::FloatToBF16(floats[2 * idx]) | uint32_t{ir::FloatToBF16(floats[2 * idx + 1])} << 16;
    EXPECT_EQ(static_cast<uint32_t>(pairs[idx]), pair_expected);
  }
}

TEST(CodegenLowpTest, JitRefusesIntrinsicsTheHostLacks) {
  ir::LoweredFunc func{
      "vnni",
      {{"a", 16, ScalarType::kI32}, {"acc", 16, ScalarType::kI32}},
      For("v", 0, 16, ir::ForKind::kVectorized,
          ir::MakeStore("acc", Var("v"),
                        ir::MakeTypedCall("dot_u8s8x4", ScalarType::kI32,
                                          {ir::MakeTypedLoad("acc", Var("v"), ScalarType::kI32),
                                           ir::MakeTypedLoad("a", Var("v"), ScalarType::kI32),
                                           ir::MakeTypedLoad("a", Var("v"), ScalarType::kI32)})))};
  absl::StatusOr<std::string> text = EmitLlvmIr(func);
  ASSERT_TRUE(text.ok()) << text.status();
  absl::StatusOr<KernelEntry> entry = SharedJit().Compile(*text, "vnni");
  if (HostHas("avx512vnni")) {
    EXPECT_TRUE(entry.ok()) << entry.status();
  } else {
    ASSERT_FALSE(entry.ok());
    EXPECT_EQ(entry.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(entry.status().message().find("avx512vnni"), std::string::npos) << entry.status();
  }
}

TEST(CodegenLowpTest, TypeMismatchesAreErrors) {
  const ir::Expr i = Var("i");
  ir::LoweredFunc store_mismatch{
      "bad_store",
      {{"ints", 4, ScalarType::kI32}},
      For("i", 0, 4, ir::ForKind::kSerial, ir::MakeStore("ints", i, ir::MakeFloat(1.0)))};
  absl::StatusOr<std::string> text = EmitLlvmIr(store_mismatch);
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.status().message().find("store of f32 value into buffer 'ints' of i32"),
            std::string::npos)
      << text.status();

  ir::LoweredFunc load_mismatch{
      "bad_load",
      {{"floats", 4}, {"ints", 4, ScalarType::kI32}},
      For("i", 0, 4, ir::ForKind::kSerial,
          ir::MakeStore("ints", i, ir::MakeTypedLoad("floats", i, ScalarType::kI32)))};
  text = EmitLlvmIr(load_mismatch);
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.status().message().find("load of i32 from buffer 'floats' of f32"),
            std::string::npos)
      << text.status();

  ir::LoweredFunc too_big{"too_big",
                          {{"out", 1}},
                          ir::MakeTypedAllocate("big", int64_t{5} << 20, ScalarType::kU8,
                                                ir::MakeStore("out", Int(0), ir::MakeFloat(0.0)))};
  text = EmitLlvmIr(too_big);
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.status().message().find("elements of u8"), std::string::npos) << text.status();
}

}  // namespace
}  // namespace gtco::codegen
