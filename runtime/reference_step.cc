// Fallback steps: artifact tensors <-> reference values, and one node run between them.
#include "runtime/reference_step.h"

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gtco::runtime {
namespace {

float HalfToFloat(uint16_t half) {
  const uint32_t sign = (half >> 15) & 1, exponent = (half >> 10) & 31, mantissa = half & 1023;
  float magnitude;
  if (exponent == 0) {
    magnitude = static_cast<float>(mantissa) * (1.0f / 16777216.0f);  // 2^-24
  } else if (exponent == 31) {
    magnitude = mantissa == 0 ? INFINITY : NAN;
  } else {
    uint32_t bits = ((exponent + 112) << 23) | (mantissa << 13);
    std::memcpy(&magnitude, &bits, 4);
  }
  return sign ? -magnitude : magnitude;
}

uint16_t FloatToHalf(float value) {
  // value is already a representable f16 (reference::RoundTo rounded it): exact conversion.
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  if (std::isnan(value)) return sign | 0x7e00;
  const float magnitude = std::fabs(value);
  if (std::isinf(value) || magnitude >= 65520.0f) return sign | 0x7c00;
  if (magnitude < 6.103515625e-05f) {  // subnormal: a multiple of 2^-24
    return sign | static_cast<uint16_t>(std::nearbyint(magnitude * 16777216.0f));
  }
  const int32_t exponent = static_cast<int32_t>((bits >> 23) & 255) - 127 + 15;
  return sign | static_cast<uint16_t>((exponent << 10) | ((bits >> 13) & 1023));
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ","), "]");
}

}  // namespace

double LoadElement(const char* data, ElemType type, int64_t index) {
  switch (type) {
    case ElemType::kF32: {
      float value;
      std::memcpy(&value, data + index * 4, 4);
      return value;
    }
    case ElemType::kBF16: {
      uint16_t half;
      std::memcpy(&half, data + index * 2, 2);
      const uint32_t bits = static_cast<uint32_t>(half) << 16;
      float value;
      std::memcpy(&value, &bits, 4);
      return value;
    }
    case ElemType::kF16: {
      uint16_t half;
      std::memcpy(&half, data + index * 2, 2);
      return HalfToFloat(half);
    }
    case ElemType::kI32: {
      int32_t value;
      std::memcpy(&value, data + index * 4, 4);
      return value;
    }
    case ElemType::kI64: {
      int64_t value;
      std::memcpy(&value, data + index * 8, 8);
      return static_cast<double>(value);
    }
    case ElemType::kI8:
      return static_cast<int8_t>(data[index]);
    case ElemType::kU8:
    case ElemType::kBool:
      return static_cast<uint8_t>(data[index]);
  }
  return 0.0;
}

void StoreElement(char* data, ElemType type, int64_t index, double value) {
  value = reference::RoundTo(type, value);
  switch (type) {
    case ElemType::kF32: {
      const float narrow = static_cast<float>(value);
      std::memcpy(data + index * 4, &narrow, 4);
      return;
    }
    case ElemType::kBF16: {
      const float narrow = static_cast<float>(value);  // a bf16 value: its top half
      uint32_t bits;
      std::memcpy(&bits, &narrow, 4);
      const uint16_t half = static_cast<uint16_t>(bits >> 16);
      std::memcpy(data + index * 2, &half, 2);
      return;
    }
    case ElemType::kF16: {
      const uint16_t half = FloatToHalf(static_cast<float>(value));
      std::memcpy(data + index * 2, &half, 2);
      return;
    }
    case ElemType::kI32: {
      const int32_t narrow = static_cast<int32_t>(value);
      std::memcpy(data + index * 4, &narrow, 4);
      return;
    }
    case ElemType::kI64: {
      const int64_t wide = static_cast<int64_t>(value);
      std::memcpy(data + index * 8, &wide, 8);
      return;
    }
    case ElemType::kI8:
      data[index] = static_cast<char>(static_cast<int8_t>(value));
      return;
    case ElemType::kU8:
      data[index] = static_cast<char>(static_cast<uint8_t>(value));
      return;
    case ElemType::kBool:
      data[index] = value != 0.0 ? 1 : 0;
      return;
  }
}

reference::Value ValueFromBytes(const TensorSpec& spec, const char* data) {
  reference::Value value;
  value.dtype = spec.dtype;
  value.shape = spec.shape;
  const int64_t count = spec.NumElements();
  value.data.resize(count);
  for (int64_t i = 0; i < count; ++i) value.data[i] = LoadElement(data, spec.dtype, i);
  return value;
}

absl::Status RunReferenceStep(const reference::Node& node,
                              const std::vector<const TensorSpec*>& input_specs,
                              const std::vector<const char*>& inputs,
                              const std::vector<const TensorSpec*>& output_specs,
                              const std::vector<char*>& outputs) {
  std::vector<reference::Value> values;
  values.reserve(inputs.size());
  std::vector<const reference::Value*> pointers;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (input_specs[i] == nullptr) {
      pointers.push_back(nullptr);
      continue;
    }
    values.push_back(ValueFromBytes(*input_specs[i], inputs[i]));
    pointers.push_back(&values.back());
  }
  absl::StatusOr<std::vector<reference::Value>> results =
      reference::RunOp(node, pointers, static_cast<int>(outputs.size()));
  if (!results.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("fallback step '", node.name, "': ", results.status().message()));
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const TensorSpec& spec = *output_specs[i];
    if (i >= results->size()) {
      return absl::InternalError(absl::StrCat("fallback step '", node.name, "' computed ",
                                              results->size(), " outputs, the artifact has ",
                                              outputs.size()));
    }
    const reference::Value& result = (*results)[i];
    if (result.shape != spec.shape || result.dtype != spec.dtype) {
      return absl::InvalidArgumentError(absl::StrCat(
          "fallback step '", node.name, "' (", node.op_type, ") computed ",
          ElemTypeName(result.dtype), " ", ShapeText(result.shape), " for '", spec.name,
          "', which the artifact holds as ", ElemTypeName(spec.dtype), " ", ShapeText(spec.shape)));
    }
    const int64_t count = spec.NumElements();
    for (int64_t e = 0; e < count; ++e) StoreElement(outputs[i], spec.dtype, e, result.data[e]);
  }
  return absl::OkStatus();
}

}  // namespace gtco::runtime
