// Kernel tensor storage: f16 round-to-nearest-even (checked against the CPU's F16C conversion
// where it has one), bf16 and integer packing identical to ir::TypedBuffer, sentinels, and the
// output comparison.
#include "worker/host_tensor.h"

#include <gtest/gtest.h>
#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "common/ir/reference.h"

namespace gtco::worker {
namespace {

float FromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

__attribute__((target("f16c"))) uint16_t HardwareHalf(float value) {
  return static_cast<uint16_t>(_cvtss_sh(value, _MM_FROUND_TO_NEAREST_INT));
}

std::vector<uint16_t> Halves(const HostTensor& tensor) {
  std::vector<uint16_t> halves(tensor.size());
  std::memcpy(halves.data(), tensor.data(), tensor.bytes());
  return halves;
}

TEST(FloatToHalfTest, RoundsToNearestEven) {
  EXPECT_EQ(ir::FloatToF16(1.0f), 0x3C00);
  EXPECT_EQ(ir::FloatToF16(-2.0f), 0xC000);
  EXPECT_EQ(ir::FloatToF16(0.0f), 0x0000);
  EXPECT_EQ(ir::FloatToF16(-0.0f), 0x8000);
  EXPECT_EQ(ir::FloatToF16(65504.0f), 0x7BFF);    // largest finite
  EXPECT_EQ(ir::FloatToF16(65519.996f), 0x7BFF);  // just below the halfway point
  EXPECT_EQ(ir::FloatToF16(65520.0f), 0x7C00);    // halfway: rounds to even = inf
  EXPECT_EQ(ir::FloatToF16(1e9f), 0x7C00);
  EXPECT_EQ(ir::FloatToF16(-std::numeric_limits<float>::infinity()), 0xFC00);
  EXPECT_EQ(ir::FloatToF16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);      // tie, to even
  EXPECT_EQ(ir::FloatToF16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);  // tie, to even
  EXPECT_EQ(ir::FloatToF16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3C01);
  EXPECT_EQ(ir::FloatToF16(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(ir::FloatToF16(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(ir::FloatToF16(std::ldexp(1.0f, -25)), 0x0000);  // tie between 0 and 2^-24: even
  EXPECT_EQ(ir::FloatToF16(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(ir::FloatToF16(std::ldexp(3.0f, -25)), 0x0002);  // tie between 1 and 2 ulps: even
  EXPECT_EQ(ir::FloatToF16(-std::ldexp(1.0f, -30)), 0x8000);
  const uint16_t nan = ir::FloatToF16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7C00, 0x7C00);
  EXPECT_NE(nan & 0x03FF, 0);
}

TEST(FloatToHalfTest, EveryHalfRoundTrips) {
  for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const float value = ir::F16ToFloat(static_cast<uint16_t>(bits));
    if (std::isnan(value)) {
      EXPECT_EQ(bits & 0x7C00, 0x7C00u);
      continue;
    }
    ASSERT_EQ(ir::FloatToF16(value), bits) << "half 0x" << std::hex << bits << " = " << value;
  }
  EXPECT_EQ(ir::F16ToFloat(0x3555), 0.333251953125f);
  EXPECT_EQ(ir::F16ToFloat(0x0001), std::ldexp(1.0f, -24));
}

TEST(FloatToHalfTest, MatchesTheCpusConversion) {
  if (!__builtin_cpu_supports("f16c")) GTEST_SKIP() << "this CPU has no F16C";
  std::mt19937 rng(7);
  // Every float exponent that matters for f16 (and beyond), random mantissas.
  for (int sample = 0; sample < 2000000; ++sample) {
    const uint32_t exponent = 90 + rng() % 60;  // 2^-37 .. 2^22
    const uint32_t bits = (rng() & 0x80000000u) | (exponent << 23) | (rng() & 0x7FFFFFu);
    const float value = FromBits(bits);
    ASSERT_EQ(ir::FloatToF16(value), HardwareHalf(value)) << "float 0x" << std::hex << bits;
  }
}

TEST(HostTensorTest, PacksF16LittleEndian) {
  absl::StatusOr<HostTensor> tensor =
      HostTensor::FromValues(ir::DType::kF16, {1.0f, 0.5f, -3.0f, 1e-8f});
  ASSERT_TRUE(tensor.ok()) << tensor.status();
  EXPECT_EQ(tensor->bytes(), 8u);
  const auto* bytes = static_cast<const unsigned char*>(tensor->data());
  EXPECT_EQ(bytes[0], 0x00);
  EXPECT_EQ(bytes[1], 0x3C);
  EXPECT_EQ(Halves(*tensor), (std::vector<uint16_t>{0x3C00, 0x3800, 0xC200, 0x0000}));
  EXPECT_EQ(tensor->Get(2), -3.0);
  EXPECT_EQ(tensor->ToFloats(), (std::vector<float>{1.0f, 0.5f, -3.0f, 0.0f}));
}

TEST(HostTensorTest, PacksLikeTypedBuffer) {
  const std::vector<float> values = {0.1f, -0.7f, 1.0f / 3, 200.4f, -128.0f, 3.5f, 1e6f};
  for (ir::DType dtype :
       {ir::DType::kF32, ir::DType::kBF16, ir::DType::kU8, ir::DType::kI8, ir::DType::kI32}) {
    absl::StatusOr<HostTensor> tensor = HostTensor::FromValues(dtype, values);
    ASSERT_TRUE(tensor.ok()) << tensor.status();
    ir::TypedBuffer typed = ir::TypedBuffer::FromValues(dtype, values);
    ASSERT_EQ(tensor->bytes(), static_cast<size_t>(typed.size() * ir::DTypeSize(dtype)));
    EXPECT_EQ(std::memcmp(tensor->data(), typed.data(), tensor->bytes()), 0)
        << ir::DTypeName(dtype);
    HostTensor copy = HostTensor::FromTypedBuffer(typed);
    EXPECT_EQ(std::memcmp(copy.data(), typed.data(), copy.bytes()), 0);
    for (int64_t idx = 0; idx < tensor->size(); ++idx) EXPECT_EQ(tensor->Get(idx), typed.Get(idx));
  }
  // bf16 rounds to nearest even, as ir::FloatToBF16 does.
  absl::StatusOr<HostTensor> bf16 = HostTensor::FromValues(ir::DType::kBF16, {1.0f + 1.0f / 256});
  ASSERT_TRUE(bf16.ok());
  EXPECT_EQ(Halves(*bf16), (std::vector<uint16_t>{0x3F80}));
}

TEST(HostTensorTest, RejectsDTypesKernelsDoNotTake) {
  EXPECT_EQ(HostTensor::FromValues(ir::DType::kI64, {1.0f}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(IsKernelDType(ir::DType::kI64));
  EXPECT_TRUE(IsKernelDType(ir::DType::kF16));
}

TEST(HostTensorTest, SentinelsAreWhatNoKernelWrites) {
  for (ir::DType dtype : {ir::DType::kF32, ir::DType::kF16, ir::DType::kBF16}) {
    absl::StatusOr<HostTensor> sentinel = HostTensor::Sentinel(dtype, 3);
    ASSERT_TRUE(sentinel.ok());
    for (int64_t idx = 0; idx < 3; ++idx) EXPECT_TRUE(std::isnan(sentinel->Get(idx)));
  }
  absl::StatusOr<HostTensor> ints = HostTensor::Sentinel(ir::DType::kI32, 2);
  ASSERT_TRUE(ints.ok());
  EXPECT_EQ(ints->Get(1), -1234567);
}

TEST(HostTensorTest, RoundToDTypeGivesTheValuesAKernelReads) {
  std::vector<float> values = {0.1f, 1.0f / 3};
  RoundToDType(ir::DType::kF16, &values);
  EXPECT_EQ(values[0], ir::F16ToFloat(ir::FloatToF16(0.1f)));
  EXPECT_NE(values[0], 0.1f);
  std::vector<float> exact = {0.1f};
  RoundToDType(ir::DType::kF32, &exact);
  EXPECT_EQ(exact[0], 0.1f);
}

TEST(CompareHostTensorsTest, FloatsWithinToleranceIntegersExactly) {
  auto f16 = [](std::vector<float> values) {
    return *HostTensor::FromValues(ir::DType::kF16, values);
  };
  EXPECT_TRUE(CompareHostTensors(f16({1.0f, 2.0f}), f16({1.0f, 2.001f}), 1e-3, 0).ok());
  absl::Status mismatch = CompareHostTensors(f16({1.0f, 2.0f}), f16({1.0f, 2.5f}), 1e-3, 0);
  EXPECT_EQ(mismatch.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(mismatch.message().find("index 1"), std::string::npos) << mismatch;
  auto i32 = [](std::vector<float> values) {
    return *HostTensor::FromValues(ir::DType::kI32, values);
  };
  EXPECT_TRUE(CompareHostTensors(i32({5, -7}), i32({5, -7}), 0, 0).ok());
  EXPECT_FALSE(CompareHostTensors(i32({5, -7}), i32({5, -6}), 1, 1).ok());
  EXPECT_FALSE(CompareHostTensors(f16({1.0f}), i32({1}), 1, 1).ok());
}

}  // namespace
}  // namespace gtco::worker
