// Parsing of ONNX model bytes, and decoding of ONNX TensorProto payloads (raw little-endian
// bytes or typed repeated fields).
#include "common/onnx/tensor_proto.h"

#include <climits>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/util/status.h"

namespace gtco::onnx {
namespace {

using ::onnx::TensorProto;

double HalfToDouble(uint16_t bits) {
  int sign = (bits >> 15) & 1;
  int exponent = (bits >> 10) & 0x1f;
  int mantissa = bits & 0x3ff;
  double value;
  if (exponent == 0) {
    value = std::ldexp(mantissa, -24);
  } else if (exponent == 31) {
    value = mantissa == 0 ? INFINITY : NAN;
  } else {
    value = std::ldexp(mantissa + 1024, exponent - 25);
  }
  return sign ? -value : value;
}

double BFloat16ToDouble(uint16_t bits) {
  uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof(value));
  return value;
}

template <typename T>
T ReadRaw(const std::string& raw, int64_t index) {
  T value;
  std::memcpy(&value, raw.data() + index * sizeof(T), sizeof(T));
  return value;
}

int64_t ElementBytes(int data_type) {
  switch (data_type) {
    case TensorProto::FLOAT:
    case TensorProto::INT32:
      return 4;
    case TensorProto::DOUBLE:
    case TensorProto::INT64:
      return 8;
    case TensorProto::FLOAT16:
    case TensorProto::BFLOAT16:
      return 2;
    case TensorProto::INT8:
    case TensorProto::UINT8:
    case TensorProto::BOOL:
      return 1;
    default:
      return 0;
  }
}

/// Element `index` of raw little-endian data, widened.
void DecodeRawElement(int data_type, const std::string& raw, int64_t index, graph::Tensor& tensor) {
  switch (data_type) {
    case TensorProto::FLOAT:
      tensor.float_data.push_back(ReadRaw<float>(raw, index));
      break;
    case TensorProto::DOUBLE:
      tensor.float_data.push_back(ReadRaw<double>(raw, index));
      break;
    case TensorProto::FLOAT16:
      tensor.float_data.push_back(HalfToDouble(ReadRaw<uint16_t>(raw, index)));
      break;
    case TensorProto::BFLOAT16:
      tensor.float_data.push_back(BFloat16ToDouble(ReadRaw<uint16_t>(raw, index)));
      break;
    case TensorProto::INT32:
      tensor.int_data.push_back(ReadRaw<int32_t>(raw, index));
      break;
    case TensorProto::INT64:
      tensor.int_data.push_back(ReadRaw<int64_t>(raw, index));
      break;
    case TensorProto::INT8:
      tensor.int_data.push_back(ReadRaw<int8_t>(raw, index));
      break;
    case TensorProto::UINT8:
    case TensorProto::BOOL:
      tensor.int_data.push_back(ReadRaw<uint8_t>(raw, index));
      break;
    default:
      break;
  }
}

/// Values from the typed repeated fields (int32_data also carries 8/16-bit and bool types).
void DecodeTypedFields(const TensorProto& proto, graph::Tensor& tensor) {
  switch (proto.data_type()) {
    case TensorProto::FLOAT:
      tensor.float_data.assign(proto.float_data().begin(), proto.float_data().end());
      break;
    case TensorProto::DOUBLE:
      tensor.float_data.assign(proto.double_data().begin(), proto.double_data().end());
      break;
    case TensorProto::FLOAT16:
      for (int32_t bits : proto.int32_data()) tensor.float_data.push_back(HalfToDouble(bits));
      break;
    case TensorProto::BFLOAT16:
      for (int32_t bits : proto.int32_data()) {
        tensor.float_data.push_back(BFloat16ToDouble(bits));
      }
      break;
    case TensorProto::INT64:
      tensor.int_data.assign(proto.int64_data().begin(), proto.int64_data().end());
      break;
    // 8-bit and bool values keep only what their type holds, as in raw data: an int32_data
    // entry outside the type's range must not reach code that trusts the element type.
    case TensorProto::INT8:
      for (int32_t value : proto.int32_data()) {
        tensor.int_data.push_back(static_cast<int8_t>(value));
      }
      break;
    case TensorProto::UINT8:
      for (int32_t value : proto.int32_data()) {
        tensor.int_data.push_back(static_cast<uint8_t>(value));
      }
      break;
    case TensorProto::BOOL:
      for (int32_t value : proto.int32_data()) tensor.int_data.push_back(value != 0 ? 1 : 0);
      break;
    default:
      tensor.int_data.assign(proto.int32_data().begin(), proto.int32_data().end());
      break;
  }
}

}  // namespace

absl::StatusOr<int64_t> CheckedElementCount(const std::vector<int64_t>& shape,
                                            const std::string& name) {
  // The product of the non-zero dims is bounded too: strides and partial products of an empty
  // tensor's shape must not overflow either.
  int64_t nonzero_product = 1;
  bool empty = false;
  for (int64_t dim : shape) {
    if (dim < 0) {
      return absl::InvalidArgumentError(absl::StrCat("not a valid ONNX model: tensor '", name,
                                                     "' has a negative dim in shape ",
                                                     graph::ShapeString(shape)));
    }
    if (dim == 0) {
      empty = true;
    } else if (nonzero_product > kMaxTensorElements / dim) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tensor '", name, "' of shape ", graph::ShapeString(shape), " has more than ",
          kMaxTensorElements, " elements, which GTCO does not support"));
    } else {
      nonzero_product *= dim;
    }
  }
  return empty ? 0 : nonzero_product;
}

graph::ElemType ElemTypeFromOnnx(int data_type) {
  switch (data_type) {
    case TensorProto::FLOAT:
      return graph::ElemType::kFloat32;
    case TensorProto::DOUBLE:
      return graph::ElemType::kFloat64;
    case TensorProto::FLOAT16:
      return graph::ElemType::kFloat16;
    case TensorProto::BFLOAT16:
      return graph::ElemType::kBFloat16;
    case TensorProto::INT8:
      return graph::ElemType::kInt8;
    case TensorProto::UINT8:
      return graph::ElemType::kUInt8;
    case TensorProto::INT32:
      return graph::ElemType::kInt32;
    case TensorProto::INT64:
      return graph::ElemType::kInt64;
    case TensorProto::BOOL:
      return graph::ElemType::kBool;
    default:
      return graph::ElemType::kOther;
  }
}

absl::StatusOr<graph::Tensor> TensorFromProto(const TensorProto& proto, const std::string& name) {
  graph::Tensor tensor;
  tensor.name = name.empty() ? proto.name() : name;
  if (proto.data_location() == TensorProto::EXTERNAL || proto.external_data_size() > 0) {
    return absl::UnimplementedError(
        absl::StrCat("tensor '", tensor.name,
                     "' is stored as external data, which is not supported; "
                     "save the model with its weights inside the .onnx file"));
  }
  tensor.type = ElemTypeFromOnnx(proto.data_type());
  int64_t element_bytes = ElementBytes(proto.data_type());
  if (tensor.type == graph::ElemType::kOther || element_bytes == 0) {
    return absl::UnimplementedError(absl::StrCat(
        "tensor '", tensor.name, "' has unsupported ONNX data type ", proto.data_type()));
  }
  tensor.shape.assign(proto.dims().begin(), proto.dims().end());
  tensor.has_shape = true;
  tensor.is_constant = true;
  GTCO_ASSIGN_OR_RETURN(const int64_t count, CheckedElementCount(tensor.shape, tensor.name));
  if (proto.has_raw_data()) {
    if (static_cast<int64_t>(proto.raw_data().size()) != count * element_bytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("not a valid ONNX model: tensor '", tensor.name, "' holds ",
                       proto.raw_data().size(), " bytes, expected ", count * element_bytes));
    }
    for (int64_t i = 0; i < count; ++i) {
      DecodeRawElement(proto.data_type(), proto.raw_data(), i, tensor);
    }
  } else {
    DecodeTypedFields(proto, tensor);
  }
  int64_t decoded =
      graph::IsFloating(tensor.type) ? tensor.float_data.size() : tensor.int_data.size();
  if (decoded != count) {
    return absl::InvalidArgumentError(absl::StrCat("not a valid ONNX model: tensor '", tensor.name,
                                                   "' holds ", decoded, " values, expected ",
                                                   count));
  }
  return tensor;
}

void ApplyValueInfo(const ::onnx::ValueInfoProto& info, graph::Tensor& tensor) {
  if (!info.type().has_tensor_type()) return;
  const auto& tensor_type = info.type().tensor_type();
  if (tensor_type.elem_type() != 0) tensor.type = ElemTypeFromOnnx(tensor_type.elem_type());
  if (!tensor_type.has_shape()) return;
  std::vector<int64_t> shape;
  for (const auto& dim : tensor_type.shape().dim()) {
    if (!dim.has_dim_value() || dim.dim_value() <= 0) return;
    shape.push_back(dim.dim_value());
  }
  tensor.shape = std::move(shape);
  tensor.has_shape = true;
}

absl::Status InvalidModel(const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("not a valid ONNX model: ", why));
}

absl::StatusOr<::onnx::ModelProto> ParseModel(std::string_view model_bytes) {
  ::onnx::ModelProto model;
  if (model_bytes.empty()) return InvalidModel("the model is empty");
  if (model_bytes.size() > static_cast<size_t>(INT32_MAX)) {
    return InvalidModel("models over 2 GiB need external data, which is not supported");
  }
  if (!model.ParseFromArray(model_bytes.data(), static_cast<int>(model_bytes.size()))) {
    return InvalidModel("the bytes do not parse as an ONNX ModelProto (truncated or not ONNX)");
  }
  if (model.ir_version() <= 0 || !model.has_graph() || model.opset_import_size() == 0) {
    return InvalidModel("missing ir_version, opset_import or graph (truncated or not ONNX)");
  }
  return model;
}

}  // namespace gtco::onnx
