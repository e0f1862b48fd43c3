// Parsing of ONNX model bytes and conversion of ONNX TensorProto / type protos to graph IR
// tensors (internal to the onnx module).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/graph/graph.h"
#include "onnx/onnx_pb.h"

namespace gtco::onnx {

/// Most elements one tensor of an imported model may have (larger shapes are rejected, so that
/// element and byte counts downstream stay far from int64 overflow).
constexpr int64_t kMaxTensorElements = int64_t{1} << 40;

/// Elements of a tensor of `shape`, counted without overflow. INVALID_ARGUMENT naming tensor
/// `name` for a negative dim or when the product of its non-zero dims exceeds
/// kMaxTensorElements.
absl::StatusOr<int64_t> CheckedElementCount(const std::vector<int64_t>& shape,
                                            const std::string& name);

/// INVALID_ARGUMENT "not a valid ONNX model: <why>".
absl::Status InvalidModel(const std::string& why);

/// `model_bytes` parsed as a ModelProto with an ir_version, opset imports and a graph;
/// INVALID_ARGUMENT (InvalidModel) for empty, truncated, over-2-GiB or non-ONNX bytes.
absl::StatusOr<::onnx::ModelProto> ParseModel(std::string_view model_bytes);

/// The graph element type of an ONNX TensorProto::DataType value (kOther if unknown).
graph::ElemType ElemTypeFromOnnx(int data_type);

/// A constant tensor with the values of `proto` (raw_data or the typed fields). `name`
/// overrides proto.name() when non-empty. UNIMPLEMENTED for external data and for element
/// types other than float/double/float16/bfloat16/int8/uint8/int32/int64/bool.
absl::StatusOr<graph::Tensor> TensorFromProto(const ::onnx::TensorProto& proto,
                                              const std::string& name);

/// Fills type and shape of `tensor` from a ValueInfoProto (has_shape only if every dim is
/// a positive dim_value).
void ApplyValueInfo(const ::onnx::ValueInfoProto& info, graph::Tensor& tensor);

}  // namespace gtco::onnx
