// Reference ONNX Einsum: explicit ("ij,jk->ik") and implicit ("ij,jk") equations, any letters,
// ellipses that broadcast, repeated letters as diagonals, missing letters summed over.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "runtime/reference_ops_internal.h"

namespace gtco::runtime::reference::internal {
namespace {

/// The labels of one term: letters by their character code, the ellipsis as -1.
absl::StatusOr<std::vector<int>> ParseTerm(const OpContext& ctx, const std::string& term) {
  std::vector<int> labels;
  bool ellipsis = false;
  for (size_t pos = 0; pos < term.size(); ++pos) {
    const char ch = term[pos];
    if (std::isalpha(static_cast<unsigned char>(ch))) {
      labels.push_back(static_cast<unsigned char>(ch));
    } else if (term.compare(pos, 3, "...") == 0 && !ellipsis) {
      labels.push_back(-1);
      ellipsis = true;
      pos += 2;
    } else {
      return ctx.Invalid(absl::StrCat("bad equation term '", term, "'"));
    }
  }
  return labels;
}

/// Label ids of ellipsis dims: kEllipsisBase + position, right-aligned to the widest ellipsis.
constexpr int kEllipsisBase = 1000;

std::vector<int> ExpandEllipsis(const std::vector<int>& labels, int64_t ellipsis_rank,
                                int64_t max_ellipsis) {
  std::vector<int> dims;
  for (int label : labels) {
    if (label != -1) {
      dims.push_back(label);
      continue;
    }
    for (int64_t j = 0; j < ellipsis_rank; ++j) {
      dims.push_back(kEllipsisBase + static_cast<int>(max_ellipsis - ellipsis_rank + j));
    }
  }
  return dims;
}

/// A parsed equation: each input's per-dim labels, each label's size and the output's labels.
struct EinsumPlan {
  std::vector<std::vector<int>> dims_labels;
  std::map<int, int64_t> sizes;
  std::vector<int> out_labels;
};

absl::StatusOr<EinsumPlan> PlanEinsum(const OpContext& ctx) {
  std::string equation;
  for (char ch : ctx.String("equation", "")) {
    if (!std::isspace(static_cast<unsigned char>(ch))) equation += ch;
  }
  const size_t arrow = equation.find("->");
  const std::vector<std::string> terms = absl::StrSplit(equation.substr(0, arrow), ',');
  if (static_cast<int>(terms.size()) != ctx.num_inputs()) {
    return ctx.Invalid(absl::StrCat("equation '", equation, "' has ", terms.size(), " terms for ",
                                    ctx.num_inputs(), " inputs"));
  }
  std::vector<std::vector<int>> parsed;
  std::vector<int64_t> ellipsis_ranks;
  int64_t max_ellipsis = 0;
  for (size_t term = 0; term < terms.size(); ++term) {
    GTCO_REF_ASSIGN_OR_RETURN(const Value* input, ctx.Required(static_cast<int>(term)));
    GTCO_REF_ASSIGN_OR_RETURN(std::vector<int> labels, ParseTerm(ctx, terms[term]));
    const bool has_ellipsis = std::count(labels.begin(), labels.end(), -1) != 0;
    const int64_t letters = static_cast<int64_t>(labels.size()) - (has_ellipsis ? 1 : 0);
    const int64_t rank = static_cast<int64_t>(input->shape.size());
    if (rank < letters || (!has_ellipsis && rank != letters)) {
      return ctx.Invalid(absl::StrCat("term '", terms[term], "' does not match input ", term,
                                      " of shape ", ShapeText(input->shape)));
    }
    ellipsis_ranks.push_back(rank - letters);
    max_ellipsis = std::max(max_ellipsis, rank - letters);
    parsed.push_back(std::move(labels));
  }
  EinsumPlan plan;
  std::map<int, int> occurrences;
  for (size_t term = 0; term < parsed.size(); ++term) {
    plan.dims_labels.push_back(ExpandEllipsis(parsed[term], ellipsis_ranks[term], max_ellipsis));
    const Shape& shape = ctx.input(static_cast<int>(term))->shape;
    for (size_t dim = 0; dim < shape.size(); ++dim) {
      const int label = plan.dims_labels.back()[dim];
      ++occurrences[label];
      auto [it, inserted] = plan.sizes.emplace(label, shape[dim]);
      if (inserted || it->second == shape[dim] || shape[dim] == 1) continue;
      if (it->second != 1) {
        return ctx.Invalid(absl::StrCat("dimension sizes ", it->second, " and ", shape[dim],
                                        " of one label differ in '", equation, "'"));
      }
      it->second = shape[dim];
    }
  }
  // Output labels: explicit, or the ellipsis then the letters used once, alphabetically.
  if (arrow == std::string::npos) {
    plan.out_labels = ExpandEllipsis({-1}, max_ellipsis, max_ellipsis);
    for (const auto& [label, count] : occurrences) {
      if (label < kEllipsisBase && count == 1) plan.out_labels.push_back(label);
    }
    return plan;
  }
  GTCO_REF_ASSIGN_OR_RETURN(const std::vector<int> labels,
                            ParseTerm(ctx, equation.substr(arrow + 2)));
  plan.out_labels = ExpandEllipsis(labels, max_ellipsis, max_ellipsis);
  for (int label : plan.out_labels) {
    if (plan.sizes.count(label) == 0) {
      return ctx.Invalid(absl::StrCat("output label '", std::string(1, static_cast<char>(label)),
                                      "' is not in the inputs"));
    }
  }
  return plan;
}

}  // namespace

OpResult Einsum(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const EinsumPlan plan, PlanEinsum(ctx));
  // Loop over the output labels (outermost), then the summed ones.
  std::vector<int> loop_labels = plan.out_labels;
  for (const auto& [label, size] : plan.sizes) {
    if (std::find(loop_labels.begin(), loop_labels.end(), label) == loop_labels.end()) {
      loop_labels.push_back(label);
    }
  }
  const int64_t loops = static_cast<int64_t>(loop_labels.size());
  Shape loop_sizes, out_shape;
  for (int label : loop_labels) loop_sizes.push_back(plan.sizes.at(label));
  for (int label : plan.out_labels) out_shape.push_back(plan.sizes.at(label));
  // Each input's stride along each loop label (summed over repeats: diagonals).
  const size_t inputs = plan.dims_labels.size();
  std::vector<Shape> strides(inputs, Shape(loops, 0));
  for (size_t term = 0; term < inputs; ++term) {
    const Value& input = *ctx.input(static_cast<int>(term));
    const Shape in_strides = Strides(input.shape);
    for (size_t dim = 0; dim < input.shape.size(); ++dim) {
      if (input.shape[dim] == 1) continue;  // broadcast
      const int64_t loop =
          std::find(loop_labels.begin(), loop_labels.end(), plan.dims_labels[term][dim]) -
          loop_labels.begin();
      strides[term][loop] += in_strides[dim];
    }
  }
  Value out = MakeValue(ctx.input(0)->dtype, out_shape);
  const int64_t total = NumElements(loop_sizes);
  const int64_t summed = total / std::max<int64_t>(NumElements(out_shape), 1);
  Shape index(loops, 0);
  std::vector<int64_t> offsets(inputs, 0);
  for (int64_t step = 0; step < total; ++step) {
    double product = 1;
    for (size_t term = 0; term < inputs; ++term) {
      product *= ctx.input(static_cast<int>(term))->data[offsets[term]];
    }
    out.data[step / summed] += product;
    for (int64_t loop = loops - 1; loop >= 0; --loop) {
      for (size_t term = 0; term < inputs; ++term) offsets[term] += strides[term][loop];
      if (++index[loop] < loop_sizes[loop]) break;
      for (size_t term = 0; term < inputs; ++term) {
        offsets[term] -= strides[term][loop] * loop_sizes[loop];
      }
      index[loop] = 0;
    }
  }
  return Single(std::move(out));
}

}  // namespace gtco::runtime::reference::internal
