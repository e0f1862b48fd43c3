// The reference op library's entry points (RunOp, Supports, RoundTo) and the helpers its op
// families share.
#include "runtime/reference_ops.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <stdexcept>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/reference_ops_internal.h"

namespace gtco::runtime::reference {
namespace {

using internal::OpContext;
using internal::OpTable;

/// Rounds a finite or non-finite `value` to the binary format with `precision` significand bits
/// (the implicit one included), smallest normal exponent `min_exponent` and largest finite
/// `max_finite`: nearest, ties to even; past the largest finite it becomes infinite.
double RoundToBinaryFormat(double value, int precision, int min_exponent, double max_finite) {
  if (!std::isfinite(value) || value == 0) return value;
  int exponent = 0;
  std::frexp(value, &exponent);  // |value| in [2^(exponent - 1), 2^exponent)
  const int quantum = std::max(exponent - 1, min_exponent) - (precision - 1);
  const double rounded = std::ldexp(std::nearbyint(std::ldexp(value, -quantum)), quantum);
  if (std::fabs(rounded) > max_finite) return std::copysign(HUGE_VAL, value);
  return rounded;
}

/// Truncates `value` toward zero and wraps it to a `bits`-bit integer (signed or not);
/// non-finite values saturate, NaN gives 0.
double RoundToInteger(double value, int bits, bool is_signed) {
  if (std::isnan(value)) return 0;
  const double lo = is_signed ? -std::ldexp(1.0, bits - 1) : 0.0;
  const double hi = is_signed ? std::ldexp(1.0, bits - 1) - 1 : std::ldexp(1.0, bits) - 1;
  if (std::isinf(value)) return value < 0 ? lo : hi;
  const double truncated = std::trunc(value);
  if (bits == 64) return std::clamp(truncated, lo, std::ldexp(1.0, 63));
  if (std::fabs(truncated) >= std::ldexp(1.0, 63)) return truncated < 0 ? lo : hi;
  const uint64_t raw = static_cast<uint64_t>(static_cast<int64_t>(truncated));
  const uint64_t mask = (uint64_t{1} << bits) - 1;
  const uint64_t wrapped = raw & mask;
  if (is_signed && (wrapped >> (bits - 1)) != 0) {
    return static_cast<double>(static_cast<int64_t>(wrapped) - (int64_t{1} << bits));
  }
  return static_cast<double>(wrapped);
}

const OpTable& Table() {
  static const OpTable* table = [] {
    auto* ops = new OpTable();
    internal::AddElementwiseOps(ops);
    internal::AddReduceOps(ops);
    internal::AddNormalizationOps(ops);
    internal::AddLinalgOps(ops);
    internal::AddConvOps(ops);
    internal::AddShapeOps(ops);
    internal::AddIndexOps(ops);
    internal::AddCreateOps(ops);
    internal::AddResizeOps(ops);
    return ops;
  }();
  return *table;
}

bool IsDefaultDomain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

}  // namespace

int64_t Value::NumElements() const { return internal::NumElements(shape); }

double RoundTo(ElemType dtype, double value) {
  switch (dtype) {
    case ElemType::kF32:
      if (std::fabs(value) > std::numeric_limits<float>::max() && std::isfinite(value)) {
        // Out of float's range: round as the format does (the largest finite or infinity).
        return RoundToBinaryFormat(value, 24, -126, std::numeric_limits<float>::max());
      }
      return static_cast<double>(static_cast<float>(value));
    case ElemType::kBF16:
      return RoundToBinaryFormat(value, 8, -126, std::ldexp(255.0, 120));
    case ElemType::kF16:
      return RoundToBinaryFormat(value, 11, -14, 65504.0);
    case ElemType::kI8:
      return RoundToInteger(value, 8, true);
    case ElemType::kU8:
      return RoundToInteger(value, 8, false);
    case ElemType::kI32:
      return RoundToInteger(value, 32, true);
    case ElemType::kI64:
      return RoundToInteger(value, 64, true);
    case ElemType::kBool:
      return value != 0 ? 1.0 : 0.0;
  }
  return value;
}

absl::StatusOr<ElemType> ElemTypeFromOnnx(int64_t onnx_type) {
  switch (onnx_type) {
    case 1:
      return ElemType::kF32;
    case 2:
      return ElemType::kU8;
    case 3:
      return ElemType::kI8;
    case 6:
      return ElemType::kI32;
    case 7:
      return ElemType::kI64;
    case 9:
      return ElemType::kBool;
    case 10:
      return ElemType::kF16;
    case 16:
      return ElemType::kBF16;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("unsupported ONNX data type ", onnx_type,
                       " (supported: 1 f32, 2 u8, 3 i8, 6 i32, 7 i64, 9 bool, 10 f16, 16 bf16)"));
  }
}

bool Supports(const std::string& domain, const std::string& op_type) {
  return IsDefaultDomain(domain) && Table().count(op_type) != 0;
}

std::vector<std::string> SupportedOps() {
  std::vector<std::string> names;
  for (const auto& entry : Table()) names.push_back(entry.first);
  return names;
}

absl::StatusOr<std::vector<Value>> RunOp(const Node& node, const std::vector<const Value*>& inputs,
                                         int num_outputs) {
  const auto it = IsDefaultDomain(node.domain) ? Table().find(node.op_type) : Table().end();
  if (it == Table().end()) {
    const std::string op = node.domain.empty() || IsDefaultDomain(node.domain)
                               ? node.op_type
                               : absl::StrCat(node.domain, ".", node.op_type);
    return absl::UnimplementedError(
        absl::StrCat("reference: unsupported ONNX op '", op, "' at node '", node.name, "'"));
  }
  const OpContext ctx(node, inputs, num_outputs);
  for (size_t index = 0; index < inputs.size(); ++index) {
    const Value* value = inputs[index];
    if (value == nullptr) continue;
    if (static_cast<int64_t>(value->data.size()) != value->NumElements()) {
      return ctx.Invalid(absl::StrCat("input ", index, " holds ", value->data.size(),
                                      " values for shape ", internal::ShapeText(value->shape)));
    }
  }
  std::vector<Value> outputs;
  try {
    GTCO_REF_ASSIGN_OR_RETURN(outputs, it->second(ctx));
  } catch (const std::exception& error) {
    return absl::InternalError(absl::StrCat("reference: ONNX op '", node.op_type, "' at node '",
                                            node.name, "' failed: ", error.what()));
  }
  if (num_outputs >= 0 && static_cast<int>(outputs.size()) > num_outputs) {
    outputs.resize(num_outputs);
  }
  while (static_cast<int>(outputs.size()) < num_outputs) {
    Value empty;
    empty.shape = {0};
    outputs.push_back(std::move(empty));
  }
  for (Value& output : outputs) {
    for (double& element : output.data) element = RoundTo(output.dtype, element);
  }
  return outputs;
}

namespace internal {

int64_t NumElements(const Shape& shape) {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  return count;
}

Shape Strides(const Shape& shape) {
  Shape strides(shape.size(), 1);
  for (int64_t dim = static_cast<int64_t>(shape.size()) - 2; dim >= 0; --dim) {
    strides[dim] = strides[dim + 1] * shape[dim + 1];
  }
  return strides;
}

namespace {
thread_local int64_t element_limit = std::numeric_limits<int64_t>::max();
}  // namespace

int64_t SetElementLimit(int64_t limit) {
  const int64_t previous = element_limit;
  element_limit = limit;
  return previous;
}

void CheckElementCount(const Shape& shape) {
  int64_t count = 1;
  for (int64_t dim : shape) {
    if (dim < 0 || (dim > 0 && count > element_limit / dim)) {
      throw std::length_error(absl::StrCat("a value of shape ", ShapeText(shape),
                                           " exceeds the reference's limit of ", element_limit,
                                           " elements"));
    }
    count *= dim;
  }
}

Value MakeValue(ElemType dtype, Shape shape) {
  CheckElementCount(shape);
  Value value;
  value.dtype = dtype;
  value.data.assign(NumElements(shape), 0.0);
  value.shape = std::move(shape);
  return value;
}

bool IsFloat(ElemType dtype) {
  return dtype == ElemType::kF32 || dtype == ElemType::kBF16 || dtype == ElemType::kF16;
}

int64_t ToInt64(double value) {
  if (std::isnan(value)) return 0;
  if (value >= 9.2233720368547758e18) return std::numeric_limits<int64_t>::max();
  if (value <= -9.2233720368547758e18) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(value);
}

std::string ShapeText(const Shape& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

absl::StatusOr<const Value*> OpContext::Required(int index) const {
  const Value* value = input(index);
  if (value == nullptr) return Invalid(absl::StrCat("input ", index, " is required"));
  return value;
}

const Attr* OpContext::FindAttr(const std::string& name) const {
  const auto it = node_.attrs.find(name);
  return it == node_.attrs.end() ? nullptr : &it->second;
}

int64_t OpContext::Int(const std::string& name, int64_t fallback) const {
  const Attr* attr = FindAttr(name);
  if (attr == nullptr) return fallback;
  if (attr->kind == Attr::Kind::kFloat) return ToInt64(attr->f);
  return attr->i;
}

double OpContext::Float(const std::string& name, double fallback) const {
  const Attr* attr = FindAttr(name);
  if (attr == nullptr) return fallback;
  if (attr->kind == Attr::Kind::kInt) return static_cast<double>(attr->i);
  return attr->f;
}

std::string OpContext::String(const std::string& name, const std::string& fallback) const {
  const Attr* attr = FindAttr(name);
  return attr == nullptr ? fallback : attr->s;
}

std::vector<int64_t> OpContext::Ints(const std::string& name, std::vector<int64_t> fallback) const {
  const Attr* attr = FindAttr(name);
  if (attr == nullptr) return fallback;
  if (attr->kind == Attr::Kind::kInt) return {attr->i};
  return attr->ints;
}

std::vector<double> OpContext::Floats(const std::string& name, std::vector<double> fallback) const {
  const Attr* attr = FindAttr(name);
  if (attr == nullptr) return fallback;
  if (attr->kind == Attr::Kind::kFloat) return {attr->f};
  return attr->floats;
}

absl::Status OpContext::Invalid(const std::string& message) const {
  return absl::InvalidArgumentError(absl::StrCat("reference: ONNX op '", node_.op_type,
                                                 "' at node '", node_.name, "': ", message));
}

absl::Status OpContext::Unsupported(const std::string& what) const {
  return absl::UnimplementedError(absl::StrCat("reference: unsupported ", what, " of ONNX op '",
                                               node_.op_type, "' at node '", node_.name, "'"));
}

absl::StatusOr<int64_t> OpContext::Axis(int64_t axis, int64_t rank) const {
  if (axis < -rank || axis >= rank) {
    return Invalid(absl::StrCat("axis ", axis, " is out of range for rank ", rank));
  }
  return axis < 0 ? axis + rank : axis;
}

absl::StatusOr<std::vector<int64_t>> OpContext::Axes(const std::vector<int64_t>& axes,
                                                     int64_t rank) const {
  std::vector<int64_t> normalized;
  std::set<int64_t> seen;
  for (int64_t axis : axes) {
    GTCO_REF_ASSIGN_OR_RETURN(const int64_t index, Axis(axis, rank));
    if (!seen.insert(index).second) {
      return Invalid(
          absl::StrCat("axis ", axis, " is repeated in [", absl::StrJoin(axes, ", "), "]"));
    }
    normalized.push_back(index);
  }
  return normalized;
}

std::vector<int64_t> OpContext::IntsOf(const Value& value) {
  std::vector<int64_t> ints;
  ints.reserve(value.data.size());
  for (double element : value.data) ints.push_back(ToInt64(element));
  return ints;
}

absl::StatusOr<Shape> BroadcastShapes(const OpContext& ctx, const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (const Shape& shape : shapes) rank = std::max(rank, shape.size());
  Shape result(rank, 1);
  for (const Shape& shape : shapes) {
    const size_t offset = rank - shape.size();
    for (size_t dim = 0; dim < shape.size(); ++dim) {
      int64_t& target = result[offset + dim];
      if (shape[dim] == target || shape[dim] == 1) continue;
      if (target != 1) {
        std::vector<std::string> texts;
        for (const Shape& each : shapes) texts.push_back(ShapeText(each));
        return ctx.Invalid(
            absl::StrCat("shapes ", absl::StrJoin(texts, ", "), " do not broadcast"));
      }
      target = shape[dim];
    }
  }
  return result;
}

std::vector<double> StridedGather(const std::vector<double>& data, int64_t base,
                                  const Shape& strides, const Shape& out_shape) {
  const int64_t rank = static_cast<int64_t>(out_shape.size());
  const int64_t count = NumElements(out_shape);
  std::vector<double> out(count);
  if (count == 0) return out;
  if (rank == 0) {
    out[0] = data[base];
    return out;
  }
  Shape index(rank, 0);
  int64_t source = base;
  const int64_t inner = out_shape[rank - 1];
  const int64_t inner_stride = strides[rank - 1];
  for (int64_t flat = 0; flat < count; flat += inner) {
    for (int64_t element = 0; element < inner; ++element) {
      out[flat + element] = data[source + element * inner_stride];
    }
    for (int64_t dim = rank - 2; dim >= 0; --dim) {
      source += strides[dim];
      if (++index[dim] < out_shape[dim]) break;
      source -= strides[dim] * out_shape[dim];
      index[dim] = 0;
    }
  }
  return out;
}

std::vector<double> BroadcastData(const Value& value, const Shape& shape) {
  if (value.shape == shape) return value.data;
  CheckElementCount(shape);
  const int64_t rank = static_cast<int64_t>(shape.size());
  const int64_t offset = rank - static_cast<int64_t>(value.shape.size());
  const Shape in_strides = Strides(value.shape);
  Shape strides(rank, 0);  // the input's stride along each output dim, 0 where broadcast
  for (int64_t dim = offset; dim < rank; ++dim) {
    if (value.shape[dim - offset] != 1) strides[dim] = in_strides[dim - offset];
  }
  return StridedGather(value.data, 0, strides, shape);
}

Value TransposeValue(const Value& value, const std::vector<int64_t>& perm) {
  const int64_t rank = static_cast<int64_t>(perm.size());
  const Shape in_strides = Strides(value.shape);
  Shape out_shape(rank), strides(rank);
  for (int64_t dim = 0; dim < rank; ++dim) {
    out_shape[dim] = value.shape[perm[dim]];
    strides[dim] = in_strides[perm[dim]];
  }
  Value out;
  out.dtype = value.dtype;
  out.data = StridedGather(value.data, 0, strides, out_shape);
  out.shape = std::move(out_shape);
  return out;
}

}  // namespace internal
ElementLimit::ElementLimit(int64_t max_elements)
    : previous_(internal::SetElementLimit(max_elements)) {}

ElementLimit::~ElementLimit() { internal::SetElementLimit(previous_); }

}  // namespace gtco::runtime::reference
