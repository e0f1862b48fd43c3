// A plain reference implementation of ONNX ops over double-valued tensors: the independent
// interpreter that checks an exported artifact, and the runtime's fallback for ops it has no kernel
// for.
//
// Semantics. Every tensor holds its values as doubles whatever its dtype; an op computes in double
// and rounds each result to its output dtype once, at the end (RoundTo): f32 to the nearest float,
// bf16 and f16 to the nearest value of the format, ties to even (overflow gives infinity), integer
// types truncate toward zero and wrap to their width (non-finite values saturate, NaN gives 0),
// bool gives 0/1. Ops follow ONNX's semantics of opsets 11-18 (and the older forms where an input
// used to be an attribute), with numpy broadcasting where ONNX says so. Nothing here keeps state:
// every function is thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/artifact.h"

namespace gtco::runtime::reference {

/// A tensor value: `data` holds NumElements(shape) values in row-major order, stored as double
/// whatever the dtype (f32/bf16/f16 values exactly, integers exactly up to 2^53, bool as 0/1).
struct Value {
  ElemType dtype = ElemType::kF32;
  std::vector<int64_t> shape;
  std::vector<double> data;

  /// The product of `shape` (1 for a scalar).
  int64_t NumElements() const;
};

/// One ONNX attribute.
struct Attr {
  enum class Kind { kInt, kFloat, kString, kInts, kFloats, kTensor };
  Kind kind = Kind::kInt;
  int64_t i = 0;
  double f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::vector<Value> tensor;  ///< one element when kind == kTensor
};

/// One ONNX node, without its tensors.
struct Node {
  std::string op_type;
  std::string domain;  ///< "" (or "ai.onnx") = the default ONNX domain
  std::string name;
  std::map<std::string, Attr> attrs;
  /// The model's default-domain opset (changes some ops' inputs vs attributes, e.g. ReduceMean
  /// axes, Split, Squeeze/Unsqueeze axes, Clip min/max, Pad pads, Resize).
  int opset = 17;
};

/// While alive, RunOp on this thread fails (naming the node) rather than make a value of more than
/// `max_elements` elements: graph passes that evaluate nodes on constants bound what a model file
/// can make them allocate. Unlimited by default.
class ElementLimit {
 public:
  explicit ElementLimit(int64_t max_elements);
  ~ElementLimit();
  ElementLimit(const ElementLimit&) = delete;
  ElementLimit& operator=(const ElementLimit&) = delete;

 private:
  int64_t previous_;
};

/// True when RunOp implements (domain, op_type).
bool Supports(const std::string& domain, const std::string& op_type);

/// The op types RunOp implements in the default domain, sorted.
std::vector<std::string> SupportedOps();

/// Runs `node` on `inputs` (nullptr for an omitted optional input) and returns its outputs (as
/// many as `num_outputs`, the node's output count; optional outputs it does not compute are
/// returned empty with a sensible dtype). Output shapes are computed from the input values, as an
/// interpreter does. Results are rounded to the output dtype after the op (see RoundTo).
/// Errors: UNIMPLEMENTED "reference: unsupported ONNX op 'X' at node 'n'" for ops not
/// implemented (or unsupported attribute values, naming them), INVALID_ARGUMENT naming the node
/// for inputs that break the op's rules (shape mismatch, index out of range).
absl::StatusOr<std::vector<Value>> RunOp(const Node& node, const std::vector<const Value*>& inputs,
                                         int num_outputs);

/// One resized axis of a Resize or Upsample node: each output position's input positions and
/// weights (one or two taps; a tap of weight 0 reads position 0).
struct ResizeAxisTaps {
  int64_t axis = 0;
  int64_t in = 0, out = 0;
  std::vector<int64_t> first, second;  ///< per output position
  std::vector<double> first_weight, second_weight;
};

/// The plan RunOp computes a Resize or Upsample node by, on an input of shape `x_shape`, where it
/// is separable with at most two taps per output position and axis (nearest, or linear without
/// antialias; no tf_crop_and_resize): the resized axes, innermost first (an axis kept as it is
/// is left out). `inputs` as RunOp's (the values of roi, scales and sizes; input 0 may be
/// nullptr: only `x_shape` is read). nullopt for another form of the node (cubic, antialias,
/// crop) or another op; errors as RunOp's. The runtime's fallback step computes such a node in
/// float from it.
absl::StatusOr<std::optional<std::vector<ResizeAxisTaps>>> SeparableResizeTaps(
    const Node& node, const std::vector<const Value*>& inputs, const std::vector<int64_t>& x_shape);

/// The node as JSON text (op_type, domain, name, opset, attrs; tensors included). Doubles
/// round-trip exactly; non-finite ones are written as the strings "NaN", "Infinity" and
/// "-Infinity".
std::string NodeToJson(const Node& node);

/// Parses NodeToJson's text back (INVALID_ARGUMENT naming what is malformed): artifacts store
/// fallback steps' nodes this way.
absl::StatusOr<Node> NodeFromJson(std::string_view json);

/// Rounds `value` to what `dtype` can hold (as RunOp's results are).
double RoundTo(ElemType dtype, double value);

/// The ElemType of an ONNX TensorProto data type code (1 f32, 2 u8, 3 i8, 6 i32, 7 i64, 9 bool,
/// 10 f16, 16 bf16); INVALID_ARGUMENT for any other code (f64 included).
absl::StatusOr<ElemType> ElemTypeFromOnnx(int64_t onnx_type);

}  // namespace gtco::runtime::reference
