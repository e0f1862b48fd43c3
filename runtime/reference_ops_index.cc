// Reference ONNX indexing ops: Gather, GatherElements, GatherND, ScatterND, ScatterElements
// (and the deprecated Scatter), OneHot, NonZero, TopK and Compress.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>

#include "absl/strings/str_cat.h"
#include "runtime/reference_ops_internal.h"

namespace gtco::runtime::reference::internal {
namespace {

/// `index` (negative counts from the end) checked against [-dim, dim).
absl::StatusOr<int64_t> CheckIndex(const OpContext& ctx, double raw, int64_t dim) {
  const int64_t index = ToInt64(raw);
  if (index < -dim || index >= dim) {
    return ctx.Invalid(absl::StrCat("index ", index, " is out of range [", -dim, ", ", dim, ")"));
  }
  return index < 0 ? index + dim : index;
}

/// GatherElements / ScatterElements: indices of data's rank, no larger than data off `axis`.
absl::Status CheckElementIndices(const OpContext& ctx, const Value& data, const Value& indices,
                                 int64_t axis) {
  bool fits = indices.shape.size() == data.shape.size();
  for (size_t dim = 0; fits && dim < data.shape.size(); ++dim) {
    fits = static_cast<int64_t>(dim) == axis || indices.shape[dim] <= data.shape[dim];
  }
  if (!fits) {
    return ctx.Invalid(absl::StrCat("indices of shape ", ShapeText(indices.shape),
                                    " do not fit data of shape ", ShapeText(data.shape)));
  }
  return absl::OkStatus();
}

OpResult Gather(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* data, ctx.Required(0));
  GTCO_REF_ASSIGN_OR_RETURN(const Value* indices, ctx.Required(1));
  const int64_t rank = static_cast<int64_t>(data->shape.size());
  GTCO_REF_ASSIGN_OR_RETURN(const int64_t axis, ctx.Axis(ctx.Int("axis", 0), rank));
  Shape shape(data->shape.begin(), data->shape.begin() + axis);
  shape.insert(shape.end(), indices->shape.begin(), indices->shape.end());
  shape.insert(shape.end(), data->shape.begin() + axis + 1, data->shape.end());
  int64_t outer = 1, inner = 1;
  for (int64_t dim = 0; dim < axis; ++dim) outer *= data->shape[dim];
  for (int64_t dim = axis + 1; dim < rank; ++dim) inner *= data->shape[dim];
  const int64_t dim = data->shape[axis];
  Value out = MakeValue(data->dtype, shape);
  const int64_t count = indices->NumElements();
  for (int64_t i = 0; i < count; ++i) {
    GTCO_REF_ASSIGN_OR_RETURN(const int64_t index, CheckIndex(ctx, indices->data[i], dim));
    for (int64_t o = 0; o < outer; ++o) {
      std::copy_n(data->data.begin() + (o * dim + index) * inner, inner,
                  out.data.begin() + (o * count + i) * inner);
    }
  }
  return Single(std::move(out));
}

OpResult GatherElements(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* data, ctx.Required(0));
  GTCO_REF_ASSIGN_OR_RETURN(const Value* indices, ctx.Required(1));
  const int64_t rank = static_cast<int64_t>(data->shape.size());
  GTCO_REF_ASSIGN_OR_RETURN(const int64_t axis, ctx.Axis(ctx.Int("axis", 0), rank));
  GTCO_REF_RETURN_IF_ERROR(CheckElementIndices(ctx, *data, *indices, axis));
  const Shape data_strides = Strides(data->shape);
  Value out = MakeValue(data->dtype, indices->shape);
  Shape position(rank, 0);
  for (size_t flat = 0; flat < out.data.size(); ++flat) {
    int64_t offset = 0;
    for (int64_t dim = 0; dim < rank; ++dim) {
      if (dim != axis) offset += position[dim] * data_strides[dim];
    }
    GTCO_REF_ASSIGN_OR_RETURN(const int64_t index,
                              CheckIndex(ctx, indices->data[flat], data->shape[axis]));
    out.data[flat] = data->data[offset + index * data_strides[axis]];
    for (int64_t dim = rank - 1; dim >= 0; --dim) {
      if (++position[dim] < indices->shape[dim]) break;
      position[dim] = 0;
    }
  }
  return Single(std::move(out));
}

/// The reduction of ScatterND / ScatterElements.
using Combine = double (*)(double, double);

absl::StatusOr<Combine> ScatterReduction(const OpContext& ctx) {
  const std::string reduction = ctx.String("reduction", "none");
  if (reduction == "none") return Combine([](double, double update) { return update; });
  if (reduction == "add") return Combine([](double old, double update) { return old + update; });
  if (reduction == "mul") return Combine([](double old, double update) { return old * update; });
  if (reduction == "max")
    return Combine([](double old, double update) { return std::max(old, update); });
  if (reduction == "min")
    return Combine([](double old, double update) { return std::min(old, update); });
  return ctx.Unsupported(absl::StrCat("reduction='", reduction, "'"));
}

OpResult GatherND(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* data, ctx.Required(0));
  GTCO_REF_ASSIGN_OR_RETURN(const Value* indices, ctx.Required(1));
  const int64_t batch_dims = ctx.Int("batch_dims", 0);
  const int64_t rank = static_cast<int64_t>(data->shape.size());
  const int64_t index_rank = static_cast<int64_t>(indices->shape.size());
  if (index_rank < 1 || batch_dims < 0 || batch_dims >= std::min(rank, index_rank)) {
    return ctx.Invalid("indices must have rank >= 1 and more dims than batch_dims");
  }
  const int64_t depth = indices->shape.back();
  if (depth > rank - batch_dims) return ctx.Invalid("index tuples are longer than data's rank");
  int64_t batches = 1;
  for (int64_t dim = 0; dim < batch_dims; ++dim) {
    if (data->shape[dim] != indices->shape[dim]) return ctx.Invalid("batch dims differ");
    batches *= data->shape[dim];
  }
  Shape shape(indices->shape.begin(), indices->shape.end() - 1);
  shape.insert(shape.end(), data->shape.begin() + batch_dims + depth, data->shape.end());
  int64_t block = 1;
  for (int64_t dim = batch_dims + depth; dim < rank; ++dim) block *= data->shape[dim];
  const int64_t batch_size = batches == 0 ? 0 : data->NumElements() / batches;
  const int64_t tuples = depth == 0 ? indices->NumElements() : indices->NumElements() / depth;
  const int64_t tuples_per_batch = batches == 0 ? 0 : tuples / batches;
  const Shape strides = Strides(data->shape);
  Value out = MakeValue(data->dtype, shape);
  for (int64_t tuple = 0; tuple < tuples; ++tuple) {
    int64_t offset = (tuple / std::max<int64_t>(tuples_per_batch, 1)) * batch_size;
    for (int64_t k = 0; k < depth; ++k) {
      GTCO_REF_ASSIGN_OR_RETURN(
          const int64_t index,
          CheckIndex(ctx, indices->data[tuple * depth + k], data->shape[batch_dims + k]));
      offset += index * strides[batch_dims + k];
    }
    std::copy_n(data->data.begin() + offset, block, out.data.begin() + tuple * block);
  }
  return Single(std::move(out));
}

OpResult ScatterND(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* data, ctx.Required(0));
  GTCO_REF_ASSIGN_OR_RETURN(const Value* indices, ctx.Required(1));
  GTCO_REF_ASSIGN_OR_RETURN(const Value* updates, ctx.Required(2));
  GTCO_REF_ASSIGN_OR_RETURN(const Combine combine, ScatterReduction(ctx));
  const int64_t rank = static_cast<int64_t>(data->shape.size());
  if (indices->shape.empty()) return ctx.Invalid("indices must have rank >= 1");
  const int64_t depth = indices->shape.back();
  if (depth > rank) return ctx.Invalid("index tuples are longer than data's rank");
  Shape expected(indices->shape.begin(), indices->shape.end() - 1);
  expected.insert(expected.end(), data->shape.begin() + depth, data->shape.end());
  if (updates->shape != expected) {
    return ctx.Invalid(absl::StrCat("updates has shape ", ShapeText(updates->shape), ", expected ",
                                    ShapeText(expected)));
  }
  int64_t block = 1;
  for (int64_t dim = depth; dim < rank; ++dim) block *= data->shape[dim];
  const int64_t tuples = block == 0 ? 0 : updates->NumElements() / block;
  const Shape strides = Strides(data->shape);
  Value out = *data;
  for (int64_t tuple = 0; tuple < tuples; ++tuple) {
    int64_t offset = 0;
    for (int64_t k = 0; k < depth; ++k) {
      GTCO_REF_ASSIGN_OR_RETURN(const int64_t index,
                                CheckIndex(ctx, indices->data[tuple * depth + k], data->shape[k]));
      offset += index * strides[k];
    }
    for (int64_t i = 0; i < block; ++i) {
      double& target = out.data[offset + i];
      target = combine(target, updates->data[tuple * block + i]);
    }
  }
  return Single(std::move(out));
}

OpResult ScatterElements(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* data, ctx.Required(0));
  GTCO_REF_ASSIGN_OR_RETURN(const Value* indices, ctx.Required(1));
  GTCO_REF_ASSIGN_OR_RETURN(const Value* updates, ctx.Required(2));
  GTCO_REF_ASSIGN_OR_RETURN(const Combine combine, ScatterReduction(ctx));
  const int64_t rank = static_cast<int64_t>(data->shape.size());
  GTCO_REF_ASSIGN_OR_RETURN(const int64_t axis, ctx.Axis(ctx.Int("axis", 0), rank));
  if (indices->shape != updates->shape) return ctx.Invalid("indices and updates differ in shape");
  GTCO_REF_RETURN_IF_ERROR(CheckElementIndices(ctx, *data, *indices, axis));
  const Shape strides = Strides(data->shape);
  Value out = *data;
  Shape position(rank, 0);
  for (size_t flat = 0; flat < indices->data.size(); ++flat) {
    int64_t offset = 0;
    for (int64_t dim = 0; dim < rank; ++dim) {
      if (dim != axis) offset += position[dim] * strides[dim];
    }
    GTCO_REF_ASSIGN_OR_RETURN(const int64_t index,
                              CheckIndex(ctx, indices->data[flat], data->shape[axis]));
    double& target = out.data[offset + index * strides[axis]];
    target = combine(target, updates->data[flat]);
    for (int64_t dim = rank - 1; dim >= 0; --dim) {
      if (++position[dim] < indices->shape[dim]) break;
      position[dim] = 0;
    }
  }
  return Single(std::move(out));
}

OpResult OneHot(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* indices, ctx.Required(0));
  GTCO_REF_ASSIGN_OR_RETURN(const Value* depth_value, ctx.Required(1));
  GTCO_REF_ASSIGN_OR_RETURN(const Value* values, ctx.Required(2));
  if (depth_value->data.size() != 1 || values->data.size() != 2) {
    return ctx.Invalid("depth must be a scalar and values hold [off, on]");
  }
  const int64_t depth = ToInt64(depth_value->data[0]);
  if (depth <= 0) return ctx.Invalid("depth must be positive");
  const int64_t rank = static_cast<int64_t>(indices->shape.size()) + 1;
  GTCO_REF_ASSIGN_OR_RETURN(const int64_t axis, ctx.Axis(ctx.Int("axis", -1), rank));
  Shape shape = indices->shape;
  shape.insert(shape.begin() + axis, depth);
  int64_t inner = 1;
  for (int64_t dim = axis; dim < rank - 1; ++dim) inner *= indices->shape[dim];
  Value out = MakeValue(values->dtype, shape);
  std::fill(out.data.begin(), out.data.end(), values->data[0]);
  for (size_t flat = 0; flat < indices->data.size(); ++flat) {
    int64_t index = ToInt64(indices->data[flat]);
    if (index < 0) index += depth;
    if (index < 0 || index >= depth) continue;
    const int64_t o = static_cast<int64_t>(flat) / inner, i = static_cast<int64_t>(flat) % inner;
    out.data[(o * depth + index) * inner + i] = values->data[1];
  }
  return Single(std::move(out));
}

OpResult NonZero(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(0));
  const int64_t rank = static_cast<int64_t>(x->shape.size());
  std::vector<int64_t> hits;
  for (size_t flat = 0; flat < x->data.size(); ++flat) {
    if (x->data[flat] != 0) hits.push_back(static_cast<int64_t>(flat));
  }
  const int64_t count = static_cast<int64_t>(hits.size());
  Value out = MakeValue(ElemType::kI64, {rank, count});
  for (int64_t hit = 0; hit < count; ++hit) {
    int64_t rest = hits[hit];
    for (int64_t dim = rank - 1; dim >= 0; --dim) {
      out.data[dim * count + hit] = static_cast<double>(rest % x->shape[dim]);
      rest /= x->shape[dim];
    }
  }
  return Single(std::move(out));
}

OpResult TopK(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(0));
  int64_t k = ctx.Int("k", -1);
  if (ctx.opset() >= 10) {
    GTCO_REF_ASSIGN_OR_RETURN(const Value* k_value, ctx.Required(1));
    if (k_value->data.size() != 1) return ctx.Invalid("K must hold one value");
    k = ToInt64(k_value->data[0]);
  }
  const int64_t rank = static_cast<int64_t>(x->shape.size());
  GTCO_REF_ASSIGN_OR_RETURN(const int64_t axis, ctx.Axis(ctx.Int("axis", -1), rank));
  const int64_t n = x->shape[axis];
  if (k < 0 || k > n) return ctx.Invalid(absl::StrCat("K ", k, " is out of range [0, ", n, "]"));
  const bool largest = ctx.Int("largest", 1) != 0;
  int64_t outer = 1, inner = 1;
  for (int64_t dim = 0; dim < axis; ++dim) outer *= x->shape[dim];
  for (int64_t dim = axis + 1; dim < rank; ++dim) inner *= x->shape[dim];
  Shape shape = x->shape;
  shape[axis] = k;
  Value values = MakeValue(x->dtype, shape), indices = MakeValue(ElemType::kI64, shape);
  std::vector<int64_t> order(n);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const double* row = x->data.data() + o * n * inner + i;
      std::iota(order.begin(), order.end(), 0);
      // Equal values keep the lower index first.
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return largest ? row[a * inner] > row[b * inner] : row[a * inner] < row[b * inner];
      });
      for (int64_t j = 0; j < k; ++j) {
        const int64_t out_index = (o * k + j) * inner + i;
        values.data[out_index] = row[order[j] * inner];
        indices.data[out_index] = static_cast<double>(order[j]);
      }
    }
  }
  return std::vector<Value>{std::move(values), std::move(indices)};
}

OpResult Compress(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(0));
  GTCO_REF_ASSIGN_OR_RETURN(const Value* condition, ctx.Required(1));
  Value input = *x;
  int64_t axis = 0;
  if (ctx.HasAttr("axis")) {
    GTCO_REF_ASSIGN_OR_RETURN(axis,
                              ctx.Axis(ctx.Int("axis", 0), static_cast<int64_t>(x->shape.size())));
  } else {
    input.shape = {x->NumElements()};
  }
  const int64_t dim = input.shape[axis];
  if (condition->NumElements() > dim) return ctx.Invalid("condition is longer than the axis");
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < condition->NumElements(); ++i) {
    if (condition->data[i] != 0) kept.push_back(i);
  }
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= input.shape[d];
  for (size_t d = axis + 1; d < input.shape.size(); ++d) inner *= input.shape[d];
  Shape shape = input.shape;
  shape[axis] = static_cast<int64_t>(kept.size());
  Value out = MakeValue(x->dtype, shape);
  auto dst = out.data.begin();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t index : kept) {
      dst = std::copy_n(input.data.begin() + (o * dim + index) * inner, inner, dst);
    }
  }
  return Single(std::move(out));
}

}  // namespace

void AddIndexOps(OpTable* t) {
  (*t)["Gather"] = Gather;
  (*t)["GatherElements"] = GatherElements;
  (*t)["GatherND"] = GatherND;
  (*t)["ScatterND"] = ScatterND;
  (*t)["ScatterElements"] = ScatterElements;
  (*t)["Scatter"] = ScatterElements;
  (*t)["OneHot"] = OneHot;
  (*t)["NonZero"] = NonZero;
  (*t)["TopK"] = TopK;
  (*t)["Compress"] = Compress;
}

}  // namespace gtco::runtime::reference::internal
