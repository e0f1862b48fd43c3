// Dtype storage of kernel tensors and the f16 conversions.
#include "worker/host_tensor.h"

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/util/status.h"

namespace gtco::worker {
namespace {

constexpr int32_t kIntSentinel = -1234567;

bool IsFloatingKernelDType(ir::DType dtype) {
  return dtype == ir::DType::kF32 || dtype == ir::DType::kF16 || dtype == ir::DType::kBF16;
}

absl::Status CheckKernelDType(ir::DType dtype) {
  if (IsKernelDType(dtype)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("GPU kernels take no ", ir::DTypeName(dtype), " tensors"));
}

}  // namespace

bool IsKernelDType(ir::DType dtype) {
  return IsFloatingKernelDType(dtype) || dtype == ir::DType::kU8 || dtype == ir::DType::kI8 ||
         dtype == ir::DType::kI32;
}

HostTensor::HostTensor(ir::DType dtype, int64_t num_elements)
    : dtype_(dtype),
      num_elements_(num_elements),
      bytes_(static_cast<size_t>(num_elements * ir::DTypeSize(dtype)), 0) {}

absl::StatusOr<HostTensor> HostTensor::FromValues(ir::DType dtype,
                                                  const std::vector<float>& values) {
  GTCO_RETURN_IF_ERROR(CheckKernelDType(dtype));
  HostTensor tensor(dtype, static_cast<int64_t>(values.size()));
  for (size_t idx = 0; idx < values.size(); ++idx) tensor.Set(idx, values[idx]);
  return tensor;
}

absl::StatusOr<HostTensor> HostTensor::Sentinel(ir::DType dtype, int64_t num_elements) {
  GTCO_RETURN_IF_ERROR(CheckKernelDType(dtype));
  HostTensor tensor(dtype, num_elements);
  if (IsFloatingKernelDType(dtype)) {
    std::memset(tensor.bytes_.data(), 0xFF, tensor.bytes_.size());  // NaN in every float format
  } else if (dtype == ir::DType::kI32) {
    for (int64_t idx = 0; idx < num_elements; ++idx) tensor.Set(idx, kIntSentinel);
  } else {
    std::memset(tensor.bytes_.data(), 0xA5, tensor.bytes_.size());
  }
  return tensor;
}

HostTensor HostTensor::FromTypedBuffer(const ir::TypedBuffer& buffer) {
  HostTensor tensor(buffer.dtype(), buffer.size());
  std::memcpy(tensor.bytes_.data(), buffer.data(), tensor.bytes_.size());
  return tensor;
}

absl::StatusOr<HostTensor> HostTensor::Zeros(ir::DType dtype, int64_t num_elements) {
  GTCO_RETURN_IF_ERROR(CheckKernelDType(dtype));
  return HostTensor(dtype, num_elements);
}

double HostTensor::Get(int64_t index) const {
  GTCO_CHECK(index >= 0 && index < num_elements_, "host tensor index out of range");
  const unsigned char* element = bytes_.data() + index * ir::DTypeSize(dtype_);
  switch (dtype_) {
    case ir::DType::kF32: {
      float value;
      std::memcpy(&value, element, 4);
      return value;
    }
    case ir::DType::kF16:
    case ir::DType::kBF16: {
      uint16_t bits;
      std::memcpy(&bits, element, 2);
      return dtype_ == ir::DType::kF16 ? ir::F16ToFloat(bits) : ir::BF16ToFloat(bits);
    }
    case ir::DType::kU8:
      return *element;
    case ir::DType::kI8:
      return static_cast<int8_t>(*element);
    case ir::DType::kI32: {
      int32_t value;
      std::memcpy(&value, element, 4);
      return value;
    }
    default:
      return 0.0;
  }
}

void HostTensor::Set(int64_t index, double value) {
  unsigned char* element = bytes_.data() + index * ir::DTypeSize(dtype_);
  // Integers: nearest integer, wrapped to the width (two's complement), as ir::TypedBuffer does.
  const uint64_t wrapped =
      std::isfinite(value) ? static_cast<uint64_t>(static_cast<int64_t>(std::nearbyint(value))) : 0;
  switch (dtype_) {
    case ir::DType::kF32: {
      const float narrow = static_cast<float>(value);
      std::memcpy(element, &narrow, 4);
      break;
    }
    case ir::DType::kF16:
    case ir::DType::kBF16: {
      const float narrow = static_cast<float>(value);
      const uint16_t bits =
          dtype_ == ir::DType::kF16 ? ir::FloatToF16(narrow) : ir::FloatToBF16(narrow);
      std::memcpy(element, &bits, 2);
      break;
    }
    case ir::DType::kU8:
    case ir::DType::kI8:
      *element = static_cast<unsigned char>(wrapped & 0xFFu);
      break;
    case ir::DType::kI32: {
      const auto narrow = static_cast<uint32_t>(wrapped);
      std::memcpy(element, &narrow, 4);
      break;
    }
    default:
      break;
  }
}

std::vector<float> HostTensor::ToFloats() const {
  std::vector<float> values(num_elements_);
  for (int64_t idx = 0; idx < num_elements_; ++idx) values[idx] = static_cast<float>(Get(idx));
  return values;
}

void RoundToDType(ir::DType dtype, std::vector<float>* values) {
  if (dtype == ir::DType::kF16) {
    for (float& value : *values) value = ir::F16ToFloat(ir::FloatToF16(value));
  } else if (dtype == ir::DType::kBF16) {
    for (float& value : *values) value = ir::BF16ToFloat(ir::FloatToBF16(value));
  }
}

absl::Status CompareHostTensors(const HostTensor& expected, const HostTensor& actual, double rtol,
                                double atol) {
  if (expected.dtype() != actual.dtype()) {
    return absl::FailedPreconditionError(absl::StrCat("output is ", ir::DTypeName(actual.dtype()),
                                                      ", expected ",
                                                      ir::DTypeName(expected.dtype())));
  }
  if (IsFloatingKernelDType(expected.dtype())) {
    return ir::CompareOutputs(expected.ToFloats(), actual.ToFloats(), rtol, atol);
  }
  if (expected.size() != actual.size()) {
    return absl::FailedPreconditionError(
        absl::StrCat("output has ", actual.size(), " elements, expected ", expected.size()));
  }
  int64_t mismatches = 0, first_bad = -1;
  for (int64_t idx = 0; idx < expected.size(); ++idx) {
    if (expected.Get(idx) != actual.Get(idx)) {
      if (first_bad < 0) first_bad = idx;
      ++mismatches;
    }
  }
  if (mismatches == 0) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("output mismatch at index ", first_bad, ": expected ", expected.Get(first_bad),
                   ", got ", actual.Get(first_bad), " (", mismatches, " of ", expected.size(),
                   " elements differ; integer outputs must match exactly)"));
}

}  // namespace gtco::worker
