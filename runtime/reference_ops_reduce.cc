// Reference ONNX reductions: Reduce* over any axes (attribute or input per opset), ArgMax,
// ArgMin and CumSum.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "runtime/reference_ops_internal.h"

namespace gtco::runtime::reference::internal {
namespace {

/// Which input elements land in which output element of a reduction.
struct ReducePlan {
  Shape kept_shape;                ///< the input's shape with reduced dims set to 1
  Shape out_shape;                 ///< kept_shape, or without the reduced dims (keepdims=0)
  std::vector<int64_t> out_index;  ///< per input element, its output element
  int64_t group_size = 1;          ///< input elements per output element
};

ReducePlan PlanReduce(const Shape& shape, const std::vector<bool>& reduced, bool keepdims) {
  ReducePlan plan;
  const int64_t rank = static_cast<int64_t>(shape.size());
  for (int64_t dim = 0; dim < rank; ++dim) {
    plan.kept_shape.push_back(reduced[dim] ? 1 : shape[dim]);
    if (reduced[dim]) plan.group_size *= shape[dim];
    if (!reduced[dim] || keepdims) plan.out_shape.push_back(reduced[dim] ? 1 : shape[dim]);
  }
  const Shape kept_strides = Strides(plan.kept_shape);
  Shape strides(rank);  // the output's stride along each input dim, 0 where reduced
  for (int64_t dim = 0; dim < rank; ++dim) strides[dim] = reduced[dim] ? 0 : kept_strides[dim];
  std::vector<double> indices(NumElements(plan.kept_shape));
  for (size_t index = 0; index < indices.size(); ++index)
    indices[index] = static_cast<double>(index);
  // Gathering the output indices "backwards": broadcast the kept index grid to the input shape.
  Value grid;
  grid.shape = plan.kept_shape;
  grid.data = std::move(indices);
  const std::vector<double> mapped = BroadcastData(grid, shape);
  plan.out_index.assign(mapped.begin(), mapped.end());
  return plan;
}

/// The reduction of one op: an initial value, a step and a final map of (acc, count).
struct Reducer {
  double initial;
  double (*step)(double acc, double x);
  double (*finish)(double acc, int64_t count);
};

double Keep(double acc, int64_t) { return acc; }

/// The plan of reducing input 0 over the node's axes (the "axes" attribute, or input 1 from
/// opset `axes_input_opset`): all axes when none are given, unless noop_with_empty_axes.
absl::StatusOr<ReducePlan> PlanFor(const OpContext& ctx, const Value& x, int axes_input_opset) {
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  std::vector<int64_t> axes;
  if (ctx.opset() >= axes_input_opset) {
    if (const Value* axes_value = ctx.input(1)) axes = OpContext::IntsOf(*axes_value);
  } else {
    axes = ctx.Ints("axes");
  }
  const bool all = axes.empty() && ctx.Int("noop_with_empty_axes", 0) == 0;
  std::vector<bool> reduced(rank, all);
  GTCO_REF_ASSIGN_OR_RETURN(const std::vector<int64_t> normalized, ctx.Axes(axes, rank));
  for (int64_t axis : normalized) reduced[axis] = true;
  return PlanReduce(x.shape, reduced, ctx.Int("keepdims", 1) != 0);
}

OpResult Reduce(const OpContext& ctx, const Reducer& reducer, int axes_input_opset) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(0));
  GTCO_REF_ASSIGN_OR_RETURN(const ReducePlan plan, PlanFor(ctx, *x, axes_input_opset));
  Value out = MakeValue(x->dtype, plan.out_shape);
  std::fill(out.data.begin(), out.data.end(), reducer.initial);
  for (size_t index = 0; index < x->data.size(); ++index) {
    double& acc = out.data[plan.out_index[index]];
    acc = reducer.step(acc, x->data[index]);
  }
  for (double& acc : out.data) acc = reducer.finish(acc, plan.group_size);
  return Single(std::move(out));
}

double NanMax(double acc, double x) {
  return std::isnan(acc) || std::isnan(x) ? NAN : std::max(acc, x);
}
double NanMin(double acc, double x) {
  return std::isnan(acc) || std::isnan(x) ? NAN : std::min(acc, x);
}

/// log(sum(exp(x))) computed as m + log(sum(exp(x - m))), m the max of each group.
OpResult ReduceLogSumExp(const OpContext& ctx, int axes_input_opset) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(0));
  GTCO_REF_ASSIGN_OR_RETURN(const ReducePlan plan, PlanFor(ctx, *x, axes_input_opset));
  const int64_t groups = NumElements(plan.out_shape);
  std::vector<double> maxes(groups, -HUGE_VAL), sums(groups, 0.0);
  for (size_t index = 0; index < x->data.size(); ++index) {
    double& m = maxes[plan.out_index[index]];
    m = NanMax(m, x->data[index]);
  }
  for (size_t index = 0; index < x->data.size(); ++index) {
    const int64_t group = plan.out_index[index];
    const double m = std::isfinite(maxes[group]) ? maxes[group] : 0.0;
    sums[group] += std::exp(x->data[index] - m);
  }
  Value out = MakeValue(x->dtype, plan.out_shape);
  for (int64_t group = 0; group < groups; ++group) {
    const double m = std::isfinite(maxes[group]) ? maxes[group] : 0.0;
    out.data[group] = m + std::log(sums[group]);
  }
  return Single(std::move(out));
}

OpResult ArgExtreme(const OpContext& ctx, bool is_max) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(0));
  const int64_t rank = static_cast<int64_t>(x->shape.size());
  GTCO_REF_ASSIGN_OR_RETURN(const int64_t axis,
                            ctx.Axis(ctx.Int("axis", 0), std::max<int64_t>(rank, 1)));
  const bool keepdims = ctx.Int("keepdims", 1) != 0;
  const bool last = ctx.Int("select_last_index", 0) != 0;
  const int64_t n = rank == 0 ? 1 : x->shape[axis];
  if (n == 0) return ctx.Invalid("cannot take the arg extreme of an empty axis");
  int64_t outer = 1, inner = 1;
  Shape out_shape;
  for (int64_t dim = 0; dim < rank; ++dim) {
    if (dim < axis) outer *= x->shape[dim];
    if (dim > axis) inner *= x->shape[dim];
    if (dim != axis)
      out_shape.push_back(x->shape[dim]);
    else if (keepdims)
      out_shape.push_back(1);
  }
  Value out = MakeValue(ElemType::kI64, out_shape);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const double* row = x->data.data() + o * n * inner + i;
      int64_t best = 0;
      for (int64_t k = 1; k < n; ++k) {
        const double value = row[k * inner], current = row[best * inner];
        const bool better = is_max ? value > current : value < current;
        if (better || (last && value == current)) best = k;
      }
      out.data[o * inner + i] = static_cast<double>(best);
    }
  }
  return Single(std::move(out));
}

OpResult CumSum(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(0));
  GTCO_REF_ASSIGN_OR_RETURN(const Value* axis_value, ctx.Required(1));
  if (axis_value->data.size() != 1) return ctx.Invalid("axis must be a scalar");
  const int64_t rank = static_cast<int64_t>(x->shape.size());
  GTCO_REF_ASSIGN_OR_RETURN(const int64_t axis, ctx.Axis(ToInt64(axis_value->data[0]), rank));
  const bool exclusive = ctx.Int("exclusive", 0) != 0, reverse = ctx.Int("reverse", 0) != 0;
  int64_t outer = 1, inner = 1;
  for (int64_t dim = 0; dim < axis; ++dim) outer *= x->shape[dim];
  for (int64_t dim = axis + 1; dim < rank; ++dim) inner *= x->shape[dim];
  const int64_t n = x->shape[axis];
  Value out = MakeValue(x->dtype, x->shape);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * n * inner + i;
      double sum = 0;
      for (int64_t step = 0; step < n; ++step) {
        const int64_t k = reverse ? n - 1 - step : step;
        const double value = x->data[base + k * inner];
        if (!exclusive) sum += value;
        out.data[base + k * inner] = sum;
        if (exclusive) sum += value;
      }
    }
  }
  return Single(std::move(out));
}

}  // namespace

void AddReduceOps(OpTable* t) {
  // Axes became an input in opset 13 for ReduceSum and in opset 18 for the others.
  (*t)["ReduceSum"] = [](const OpContext& c) {
    return Reduce(c, {0.0, [](double a, double x) { return a + x; }, Keep}, 13);
  };
  (*t)["ReduceMean"] = [](const OpContext& c) {
    return Reduce(c,
                  {0.0, [](double a, double x) { return a + x; },
                   [](double a, int64_t n) { return a / static_cast<double>(n); }},
                  18);
  };
  (*t)["ReduceMax"] = [](const OpContext& c) { return Reduce(c, {-HUGE_VAL, NanMax, Keep}, 18); };
  (*t)["ReduceMin"] = [](const OpContext& c) { return Reduce(c, {HUGE_VAL, NanMin, Keep}, 18); };
  (*t)["ReduceProd"] = [](const OpContext& c) {
    return Reduce(c, {1.0, [](double a, double x) { return a * x; }, Keep}, 18);
  };
  (*t)["ReduceL1"] = [](const OpContext& c) {
    return Reduce(c, {0.0, [](double a, double x) { return a + std::fabs(x); }, Keep}, 18);
  };
  (*t)["ReduceL2"] = [](const OpContext& c) {
    return Reduce(c,
                  {0.0, [](double a, double x) { return a + x * x; },
                   [](double a, int64_t) { return std::sqrt(a); }},
                  18);
  };
  (*t)["ReduceSumSquare"] = [](const OpContext& c) {
    return Reduce(c, {0.0, [](double a, double x) { return a + x * x; }, Keep}, 18);
  };
  (*t)["ReduceLogSum"] = [](const OpContext& c) {
    return Reduce(c,
                  {0.0, [](double a, double x) { return a + x; },
                   [](double a, int64_t) { return std::log(a); }},
                  18);
  };
  (*t)["ReduceLogSumExp"] = [](const OpContext& c) { return ReduceLogSumExp(c, 18); };
  (*t)["ArgMax"] = [](const OpContext& c) { return ArgExtreme(c, true); };
  (*t)["ArgMin"] = [](const OpContext& c) { return ArgExtreme(c, false); };
  (*t)["CumSum"] = CumSum;
}

}  // namespace gtco::runtime::reference::internal
