// ONNX model bytes -> graph IR: parse, apply input shape overrides, check, infer shapes.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/graph/graph.h"

namespace gtco::onnx {

/// Graph input name -> static dims that replace the model's (possibly symbolic) input shape.
using ShapeOverrides = std::map<std::string, std::vector<int64_t>>;

/// Imports a serialized ONNX ModelProto. Every graph input must end up with a fully static
/// shape, from the model itself or from `overrides`. Errors:
///  - INVALID_ARGUMENT: bytes that are not an ONNX model (or are truncated), a model the ONNX
///    checker rejects, an override naming an unknown input or of the wrong rank, an input
///    with a symbolic/unknown dim and no override (the message says how to pass --shape).
///  - UNIMPLEMENTED: initializers stored as external data, or of unsupported element types.
/// Initializers and Constant-node `value` attributes become constant tensors; shapes of
/// intermediate tensors come from ONNX shape inference (with data propagation).
absl::StatusOr<graph::Graph> ImportOnnx(std::string_view model_bytes,
                                        const ShapeOverrides& overrides);

/// Parses one command-line override "input=1x128x768" into (name, dims). INVALID_ARGUMENT
/// when malformed or when a dim is not a positive integer.
absl::StatusOr<std::pair<std::string, std::vector<int64_t>>> ParseShapeOverride(
    std::string_view text);

}  // namespace gtco::onnx
