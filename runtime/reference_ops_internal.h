// Internals shared by the reference op families (runtime/reference_ops_*.cc): the op context
// with attribute and input access, shape helpers, broadcasting and the op tables.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/reference_ops.h"

/// Returns from the enclosing function when `expr` (an absl::Status) is not OK.
#define GTCO_REF_RETURN_IF_ERROR(expr)                   \
  do {                                                   \
    ::absl::Status gtco_ref_status_ = (expr);            \
    if (!gtco_ref_status_.ok()) return gtco_ref_status_; \
  } while (0)

#define GTCO_REF_CONCAT_INNER_(a, b) a##b
#define GTCO_REF_CONCAT_(a, b) GTCO_REF_CONCAT_INNER_(a, b)
#define GTCO_REF_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                                    \
  if (!tmp.ok()) return tmp.status();                    \
  lhs = std::move(*tmp)

/// `GTCO_REF_ASSIGN_OR_RETURN(auto x, F())` binds the value of a StatusOr or returns its error.
#define GTCO_REF_ASSIGN_OR_RETURN(lhs, rexpr) \
  GTCO_REF_ASSIGN_OR_RETURN_IMPL_(GTCO_REF_CONCAT_(gtco_ref_statusor_, __LINE__), lhs, rexpr)

namespace gtco::runtime::reference::internal {

using Shape = std::vector<int64_t>;

/// The product of `shape`'s dims (1 for a scalar).
int64_t NumElements(const Shape& shape);

/// Row-major element strides of `shape`.
Shape Strides(const Shape& shape);

/// Throws std::length_error (RunOp turns it into an error naming the node) when `shape` has a
/// negative dim or more elements than the calling thread's ElementLimit allows.
void CheckElementCount(const Shape& shape);

/// Sets the calling thread's element limit (ElementLimit); returns the previous one.
int64_t SetElementLimit(int64_t limit);

/// A zero-filled value of `dtype` and `shape` (CheckElementCount first).
Value MakeValue(ElemType dtype, Shape shape);

/// True for f32, bf16 and f16.
bool IsFloat(ElemType dtype);

/// `value` as an int64, saturating out-of-range values (NaN gives 0).
int64_t ToInt64(double value);

/// The shape text "[2, 3]" for messages.
std::string ShapeText(const Shape& shape);

/// What an op sees: its node, its inputs and how many outputs it must produce.
class OpContext {
 public:
  OpContext(const Node& node, const std::vector<const Value*>& inputs, int num_outputs)
      : node_(node), inputs_(inputs), num_outputs_(num_outputs) {}

  const Node& node() const { return node_; }
  int opset() const { return node_.opset; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  int num_outputs() const { return num_outputs_; }

  /// Input `index`, or nullptr when it is omitted (or past the node's inputs).
  const Value* input(int index) const { return index < num_inputs() ? inputs_[index] : nullptr; }
  /// Input `index`, or INVALID_ARGUMENT when it is omitted.
  absl::StatusOr<const Value*> Required(int index) const;

  const Attr* FindAttr(const std::string& name) const;
  bool HasAttr(const std::string& name) const { return FindAttr(name) != nullptr; }
  int64_t Int(const std::string& name, int64_t fallback) const;
  double Float(const std::string& name, double fallback) const;
  std::string String(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> Ints(const std::string& name, std::vector<int64_t> fallback = {}) const;
  std::vector<double> Floats(const std::string& name, std::vector<double> fallback = {}) const;

  /// INVALID_ARGUMENT "reference: ONNX op 'X' at node 'n': <message>".
  absl::Status Invalid(const std::string& message) const;
  /// UNIMPLEMENTED "reference: unsupported <what> of ONNX op 'X' at node 'n'".
  absl::Status Unsupported(const std::string& what) const;

  /// `axis` in [-rank, rank) as an index in [0, rank), or INVALID_ARGUMENT.
  absl::StatusOr<int64_t> Axis(int64_t axis, int64_t rank) const;
  /// Each of `axes` normalized by Axis, or INVALID_ARGUMENT on repeats.
  absl::StatusOr<std::vector<int64_t>> Axes(const std::vector<int64_t>& axes, int64_t rank) const;

  /// The values of `value` as int64s (shapes, axes, indices).
  static std::vector<int64_t> IntsOf(const Value& value);

 private:
  const Node& node_;
  const std::vector<const Value*>& inputs_;
  int num_outputs_;
};

using OpResult = absl::StatusOr<std::vector<Value>>;
using OpFn = OpResult (*)(const OpContext&);
using OpTable = std::map<std::string, OpFn>;

/// Adds each family's ops to `table` (reference_ops_<family>.cc).
void AddElementwiseOps(OpTable* table);
void AddReduceOps(OpTable* table);
void AddNormalizationOps(OpTable* table);
void AddLinalgOps(OpTable* table);
void AddConvOps(OpTable* table);
void AddShapeOps(OpTable* table);
void AddIndexOps(OpTable* table);
void AddCreateOps(OpTable* table);
void AddResizeOps(OpTable* table);

/// ONNX Einsum (reference_ops_einsum.cc).
OpResult Einsum(const OpContext& ctx);

/// The numpy broadcast of `shapes`, or INVALID_ARGUMENT naming them.
absl::StatusOr<Shape> BroadcastShapes(const OpContext& ctx, const std::vector<Shape>& shapes);

/// `value`'s data broadcast to `shape` (which BroadcastShapes allowed).
std::vector<double> BroadcastData(const Value& value, const Shape& shape);

/// out[i] = data[base + sum_d i_d * strides[d]] for each index i of `out_shape`.
std::vector<double> StridedGather(const std::vector<double>& data, int64_t base,
                                  const Shape& strides, const Shape& out_shape);

/// `value` transposed by `perm`.
Value TransposeValue(const Value& value, const std::vector<int64_t>& perm);

/// The result of a one-output op.
inline OpResult Single(Value value) {
  std::vector<Value> outputs;
  outputs.push_back(std::move(value));
  return outputs;
}

}  // namespace gtco::runtime::reference::internal
