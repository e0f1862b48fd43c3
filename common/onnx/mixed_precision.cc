// The bf16 rewrite of an f32 model's weight MatMuls (mixed_precision.h).
#include "common/onnx/mixed_precision.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/onnx/tensor_proto.h"
#include "common/util/status.h"
#include "onnx/defs/schema.h"
#include "onnx/onnx_pb.h"
#include "onnx/shape_inference/implementation.h"

namespace gtco::onnx {
namespace {

using ::onnx::GraphProto;
using ::onnx::NodeProto;
using ::onnx::TensorProto;

/// `value` rounded to the nearest bf16, ties to even (a NaN stays a quiet NaN). The runtime's
/// vectorized cast (runtime/quantize.h) rounds the same way.
uint16_t ToBf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

float FromBf16(uint16_t half) {
  const uint32_t bits = static_cast<uint32_t>(half) << 16;
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

/// The values of a 2-D f32 initializer held in the file (raw_data or float_data, positive dims,
/// a payload of exactly that size); empty for anything else, so that the weight stays f32.
std::vector<float> F32Matrix(const TensorProto& tensor) {
  if (tensor.data_type() != TensorProto::FLOAT || tensor.dims_size() != 2 ||
      tensor.data_location() == TensorProto::EXTERNAL || tensor.dims(0) <= 0 ||
      tensor.dims(1) <= 0) {
    return {};
  }
  absl::StatusOr<int64_t> count = CheckedElementCount({tensor.dims(0), tensor.dims(1)}, "");
  if (!count.ok()) return {};
  const bool raw = !tensor.raw_data().empty();
  if (raw ? static_cast<int64_t>(tensor.raw_data().size()) / 4 != *count ||
                tensor.raw_data().size() % 4 != 0
          : tensor.float_data_size() != *count) {
    return {};
  }
  std::vector<float> values(*count);
  if (raw) {
    std::memcpy(values.data(), tensor.raw_data().data(), tensor.raw_data().size());
  } else {
    std::copy(tensor.float_data().begin(), tensor.float_data().end(), values.begin());
  }
  return values;
}

/// A Gemm computing A x B (+ C): no transA, alpha 1, beta 1 where there is a C (any transB).
bool IsPlainGemm(const NodeProto& node) {
  if (node.op_type() != "Gemm" || node.input_size() < 2) return false;
  const bool has_c = node.input_size() > 2 && !node.input(2).empty();
  for (const auto& attribute : node.attribute()) {
    if (attribute.name() == "transA" && attribute.i() != 0) return false;
    if (attribute.name() == "alpha" && attribute.f() != 1.0f) return false;
    if (attribute.name() == "beta" && has_c && attribute.f() != 1.0f) return false;
  }
  return true;
}

bool GemmTransB(const NodeProto& node) {
  for (const auto& attribute : node.attribute()) {
    if (attribute.name() == "transB") return attribute.i() != 0;
  }
  return false;
}

bool HasSubgraph(const GraphProto& graph) {
  for (const NodeProto& node : graph.node()) {
    for (const auto& attribute : node.attribute()) {
      if (attribute.has_g() || attribute.graphs_size() > 0) return true;
    }
  }
  return false;
}

NodeProto MakeNode(const std::string& op, const std::string& name, std::vector<std::string> inputs,
                   const std::string& output) {
  NodeProto node;
  node.set_op_type(op);
  node.set_name(name);
  for (std::string& input : inputs) node.add_input(std::move(input));
  node.add_output(output);
  return node;
}

/// `node` with integer attribute `name` = `value`.
NodeProto WithIntAttribute(NodeProto node, const std::string& name, int64_t value) {
  ::onnx::AttributeProto* attribute = node.add_attribute();
  attribute->set_name(name);
  attribute->set_type(::onnx::AttributeProto::INT);
  attribute->set_i(value);
  return node;
}

NodeProto CastNode(const std::string& name, const std::string& input, const std::string& output,
                   int to) {
  return WithIntAttribute(MakeNode("Cast", name, {input}, output), "to", to);
}

/// What ONNX's shape inference gives statically of the computed tensors (and graph inputs).
struct StaticSizes {
  /// The product of a tensor's dims but the last (what a MatMul reading it as A has as M).
  std::map<std::string, int64_t> rows;
  /// The dims of a tensor all of whose dims are known.
  std::map<std::string, std::vector<int64_t>> shapes;
};

/// StaticSizes of `model`. Inference runs lenient on a copy; a tensor it cannot size is left out.
StaticSizes InferStaticSizes(const ::onnx::ModelProto& model) {
  ::onnx::ModelProto copy = model;
  try {
    ::onnx::ShapeInferenceOptions options(/*check_type_val=*/false, /*strict_mode=*/0,
                                          /*data_prop=*/true);
    ::onnx::shape_inference::InferShapes(copy, ::onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception&) {
    return {};  // no sizes: every MatMul is rewritten as without them
  }
  StaticSizes sizes;
  auto add = [&](const ::onnx::ValueInfoProto& info) {
    if (!info.type().has_tensor_type() || !info.type().tensor_type().has_shape()) return;
    const auto& shape = info.type().tensor_type().shape();
    std::vector<int64_t> dims;
    for (int d = 0; d < shape.dim_size(); ++d) {
      if (!shape.dim(d).has_dim_value() || shape.dim(d).dim_value() <= 0) break;
      dims.push_back(shape.dim(d).dim_value());
    }
    if (static_cast<int>(dims.size()) == shape.dim_size()) sizes.shapes[info.name()] = dims;
    int64_t product = 1;
    for (int d = 0; d + 1 < shape.dim_size(); ++d) {
      if (!shape.dim(d).has_dim_value() || shape.dim(d).dim_value() < 0) return;
      product *= std::min<int64_t>(shape.dim(d).dim_value(), int64_t{1} << 20);
      product = std::min<int64_t>(product, int64_t{1} << 40);
    }
    if (shape.dim_size() >= 1) sizes.rows[info.name()] = product;
  };
  for (const auto& info : copy.graph().value_info()) add(info);
  for (const auto& info : copy.graph().input()) add(info);
  return sizes;
}

/// bf16 and bf16x3 leave a MatMul whose A has fewer rows than this in f32 (ResNet's and ViT's
/// classifiers, BERT's pooler at batch 1): such a product streams its weight once, the time it
/// saves in bf16 is small, and rounding the classifier's operands is a large share of a model's
/// output error (ResNet-50's: 3.8e-3 of the largest logit with its classifier in bf16, 3.2e-3
/// without); for bf16x3 the f32 weight is also 2/3 of the split's bytes.
constexpr int64_t kMinRows = 16;

int64_t RoundUpToEven(int64_t value) { return value + value % 2; }

/// The rewrite's state over one graph: fresh names, the bf16 copies made so far.
class Bf16Rewriter {
 public:
  /// `sizes`: the computed tensors' rows, by which MatMuls of fewer than kMinRows rows stay f32
  /// (none with `keep_few_rows` false), and shapes (a conv of odd channels needs its input's).
  Bf16Rewriter(GraphProto* graph, Bf16Precision precision, StaticSizes sizes, bool keep_few_rows)
      : graph_(graph),
        precision_(precision),
        sizes_(std::move(sizes)),
        keep_few_rows_(keep_few_rows) {
    for (int i = 0; i < graph->initializer_size(); ++i) {
      initializer_index_[graph->initializer(i).name()] = i;
      used_.insert(graph->initializer(i).name());
    }
    for (const auto& input : graph->input()) {
      used_.insert(input.name());
      graph_inputs_.insert(input.name());
    }
    for (const NodeProto& node : graph->node()) {
      if (node.op_type() == "Identity" && node.input_size() == 1 && node.output_size() == 1 &&
          (node.domain().empty() || node.domain() == "ai.onnx")) {
        identity_of_[node.output(0)] = node.input(0);
      }
      used_.insert(node.name());
      for (const std::string& name : node.input()) used_.insert(name);
      for (const std::string& name : node.output()) used_.insert(name);
    }
  }

  /// Rewrites the graph's nodes; counts into `result`.
  void Run(Bf16Rewrite* result) {
    for (const NodeProto& node : graph_->node()) {
      if (RewriteConv(node)) {
        ++result->convs;
      } else if (Rewrite(node)) {
        ++result->matmuls;
      } else {
        if (node.op_type() == "MatMul" || node.op_type() == "Gemm") ++result->kept_f32;
        nodes_.push_back(node);
      }
    }
    result->weights = static_cast<int64_t>(bf16_weight_.size());
    if (result->matmuls + result->convs > 0) Commit();
  }

 private:
  bool split() const { return precision_ == Bf16Precision::kBf16x3; }

  std::string Fresh(const std::string& base) {
    std::string name = base;
    for (int suffix = 1; used_.count(name); ++suffix) name = absl::StrCat(base, "_", suffix);
    used_.insert(name);
    return name;
  }

  /// The bf16 copy of initializer `name` ([K, N]; transposed from a Gemm's [N, K] when
  /// `transposed`), made once per (name, transposed); "" when it cannot be made.
  std::string Bf16Weight(const std::string& name, bool transposed) {
    const std::pair<std::string, bool> key{name, transposed};
    if (auto found = bf16_weight_.find(key); found != bf16_weight_.end()) return found->second;
    const TensorProto& f32 = graph_->initializer(initializer_index_.at(name));
    std::vector<float> values = F32Matrix(f32);
    if (values.empty()) return "";
    int64_t rows = f32.dims(0), cols = f32.dims(1);
    // [K, N] (k = r, or c where transposed) in bf16; for bf16x3 three such blocks stacked along
    // K: B_hi, B_hi, B_lo (Bf16Precision::kBf16x3).
    const int64_t k_rows = transposed ? cols : rows, n_cols = transposed ? rows : cols;
    const int parts = split() ? 3 : 1;
    std::string raw(values.size() * 2 * parts, '\0');
    auto put = [&](int part, int64_t k, int64_t n, uint16_t half) {
      std::memcpy(raw.data() + 2 * ((part * k_rows + k) * n_cols + n), &half, 2);
    };
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        const int64_t k = transposed ? c : r, n = transposed ? r : c;
        const float value = values[r * cols + c];
        const uint16_t high = ToBf16(value);
        put(0, k, n, high);
        if (!split()) continue;
        put(1, k, n, high);
        // A weight whose high part is not finite (inf, NaN, or rounded past the largest bf16)
        // keeps it alone: its residual would be a NaN.
        const float rest = std::isfinite(FromBf16(high)) ? value - FromBf16(high) : 0.0f;
        put(2, k, n, ToBf16(rest));
      }
    }
    TensorProto bf16;
    bf16.set_name(Fresh(absl::StrCat(name, transposed ? "_t" : "", split() ? "_bf16x3" : "_bf16")));
    bf16.set_data_type(TensorProto::BFLOAT16);
    bf16.add_dims(k_rows * parts);
    bf16.add_dims(n_cols);
    bf16.set_raw_data(std::move(raw));
    bf16_weight_[key] = bf16.name();
    added_.push_back(std::move(bf16));
    return added_.back().name();
  }

  /// Appends the bf16 form of `node` when it is a MatMul or plain Gemm of a computed A and an
  /// f32 weight that is no graph input (an overridable default); false (nothing appended)
  /// otherwise.
  bool Rewrite(const NodeProto& node) {
    const bool default_domain = node.domain().empty() || node.domain() == "ai.onnx";
    const bool gemm = node.op_type() == "Gemm";
    if (!default_domain || (node.op_type() != "MatMul" && !gemm) || node.input_size() < 2 ||
        node.output_size() != 1 || (gemm ? !IsPlainGemm(node) : node.input_size() != 2) ||
        !initializer_index_.count(node.input(1)) || graph_inputs_.count(node.input(1)) ||
        initializer_index_.count(node.input(0))) {
      return false;
    }
    if (auto rows = sizes_.rows.find(node.input(0));
        keep_few_rows_ && rows != sizes_.rows.end() && rows->second < kMinRows) {
      return false;
    }
    const std::string weight = Bf16Weight(node.input(1), gemm && GemmTransB(node));
    if (weight.empty()) return false;
    const std::string& a = node.input(0);
    if (!bf16_activation_.count(a)) {
      // bf16x3: A' = [A_hi | A_lo | A_hi] along K.
      bf16_activation_[a] = split() ? SplitActivation(a, node.name(), -1)
                                    : CastActivation(a, node.name() + "_cast_a_bf16");
    }
    // MatMul on bf16, the Cast of its product back to f32 under the old name (or, for a Gemm
    // with a C, a fresh one that the Add of C reads).
    const std::string product = Fresh(absl::StrCat(node.output(0), "_bf16"));
    nodes_.push_back(MakeNode("MatMul",
                              gemm ? Fresh(absl::StrCat(node.name(), "_matmul")) : node.name(),
                              {bf16_activation_[a], weight}, product));
    const bool add_c = gemm && node.input_size() > 2 && !node.input(2).empty();
    const std::string product_f32 =
        add_c ? Fresh(absl::StrCat(node.output(0), "_f32")) : node.output(0);
    nodes_.push_back(CastNode(Fresh(absl::StrCat(node.name(), "_cast_f32")), product, product_f32,
                              TensorProto::FLOAT));
    if (add_c) {
      nodes_.push_back(MakeNode("Add", Fresh(absl::StrCat(node.name(), "_add_c")),
                                {product_f32, node.input(2)}, node.output(0)));
    }
    return true;
  }

  /// Appends a Cast of computed tensor `a` to bf16 (node `cast_name`, made fresh); returns the
  /// cast's output.
  std::string CastActivation(const std::string& a, const std::string& cast_name) {
    const std::string cast = Fresh(absl::StrCat(a, "_bf16"));
    nodes_.push_back(CastNode(Fresh(cast_name), a, cast, TensorProto::BFLOAT16));
    return cast;
  }

  /// Appends the split of computed tensor `a` along `axis`, [a_hi, a_lo, a_hi] with a_hi =
  /// bf16(a), a_lo = bf16(a - f32(a_hi)); returns its name.
  std::string SplitActivation(const std::string& a, const std::string& reader, int64_t axis) {
    const std::string high = Fresh(absl::StrCat(a, "_bf16_hi"));
    const std::string back = Fresh(absl::StrCat(a, "_bf16_hi_f32"));
    const std::string residual = Fresh(absl::StrCat(a, "_bf16_residual"));
    const std::string low = Fresh(absl::StrCat(a, "_bf16_lo"));
    const std::string base = Fresh(absl::StrCat(reader, "_split_a"));
    nodes_.push_back(CastNode(base + "_hi", a, high, TensorProto::BFLOAT16));
    nodes_.push_back(CastNode(base + "_hi_f32", high, back, TensorProto::FLOAT));
    nodes_.push_back(MakeNode("Sub", base + "_residual", {a, back}, residual));
    nodes_.push_back(CastNode(base + "_lo", residual, low, TensorProto::BFLOAT16));
    const std::string split = Fresh(absl::StrCat(a, "_bf16x3"));
    nodes_.push_back(WithIntAttribute(
        MakeNode("Concat", base + "_concat", {high, low, high}, split), "axis", axis));
    return split;
  }

  /// Image `x` [N, C, H, W] at every strides[0]-th row and strides[1]-th column (an ONNX Slice
  /// with steps, made once per image and strides); returns its name.
  std::string Subsampled(const std::string& x, const std::vector<int64_t>& strides) {
    const std::string key = absl::StrCat(x, "|steps=", absl::StrJoin(strides, ","));
    if (auto found = subsampled_.find(key); found != subsampled_.end()) return found->second;
    auto constant = [&](const std::string& base, std::vector<int64_t> values) {
      TensorProto tensor;
      tensor.set_name(Fresh(absl::StrCat(x, base)));
      tensor.set_data_type(TensorProto::INT64);
      tensor.add_dims(static_cast<int64_t>(values.size()));
      for (int64_t value : values) tensor.add_int64_data(value);
      added_.push_back(std::move(tensor));
      return added_.back().name();
    };
    constexpr int64_t kToTheEnd = std::numeric_limits<int64_t>::max();
    const std::string starts = constant("_subsample_starts", {0, 0});
    const std::string ends = constant("_subsample_ends", {kToTheEnd, kToTheEnd});
    const std::string axes = constant("_subsample_axes", {2, 3});
    const std::string steps = constant("_subsample_steps", strides);
    const std::string output = Fresh(absl::StrCat(x, "_subsampled"));
    nodes_.push_back(MakeNode("Slice", Fresh(absl::StrCat(x, "_subsample")),
                              {x, starts, ends, axes, steps}, output));
    subsampled_[key] = output;
    return output;
  }

  /// Image `x` [N, C, H, W] (of `shape`) and one zero channel after its C: an ONNX Concat with a
  /// zero initializer [N, 1, H, W], made once per image; returns its name.
  std::string WithZeroChannel(const std::string& x, const std::vector<int64_t>& shape) {
    if (auto found = zero_channel_.find(x); found != zero_channel_.end()) return found->second;
    TensorProto zeros;
    zeros.set_name(Fresh(absl::StrCat(x, "_zero_channel")));
    zeros.set_data_type(TensorProto::FLOAT);
    for (int64_t dim : {shape[0], int64_t{1}, shape[2], shape[3]}) zeros.add_dims(dim);
    zeros.set_raw_data(std::string(shape[0] * shape[2] * shape[3] * 4, '\0'));
    const std::string zeros_name = zeros.name();
    added_.push_back(std::move(zeros));
    const std::string output = Fresh(absl::StrCat(x, "_even"));
    nodes_.push_back(WithIntAttribute(
        MakeNode("Concat", Fresh(absl::StrCat(x, "_add_zero_channel")), {x, zeros_name}, output),
        "axis", 1));
    zero_channel_[x] = output;
    return output;
  }

  /// The bf16 copy ([K, C, R, S]; for bf16x3 split, [W_hi, W_hi, W_lo] along C: [K, 3C, R, S]) of
  /// conv weight initializer `name`, made once; "" when it is not a 4-D f32 tensor held in the
  /// file.
  std::string Bf16ConvWeight(const std::string& name) {
    const std::pair<std::string, bool> key{name, false};
    if (auto found = bf16_weight_.find(key); found != bf16_weight_.end()) return found->second;
    const TensorProto& f32 = graph_->initializer(initializer_index_.at(name));
    if (f32.data_type() != TensorProto::FLOAT || f32.dims_size() != 4) return "";
    TensorProto flat = f32;  // the values as one [K, C*R*S] matrix
    flat.clear_dims();
    flat.add_dims(f32.dims(0));
    flat.add_dims(f32.dims(1) * f32.dims(2) * f32.dims(3));
    const std::vector<float> values = F32Matrix(flat);
    if (values.empty()) return "";
    const int64_t k_count = f32.dims(0), c_count = f32.dims(1);
    const int64_t taps = f32.dims(2) * f32.dims(3);
    const int parts = split() ? 3 : 1;
    // bf16 of an odd C: one zero channel after the weight's (WithZeroChannel's, of X).
    const int64_t stored_c = split() ? c_count : RoundUpToEven(c_count);
    std::string raw(k_count * stored_c * taps * 2 * parts, '\0');
    for (int64_t k = 0; k < k_count; ++k) {
      for (int64_t c = 0; c < c_count; ++c) {
        for (int64_t tap = 0; tap < taps; ++tap) {
          const float value = values[(k * c_count + c) * taps + tap];
          const uint16_t high = ToBf16(value);
          const float rest = std::isfinite(FromBf16(high)) ? value - FromBf16(high) : 0.0f;
          const uint16_t halves[3] = {high, high, ToBf16(rest)};
          for (int part = 0; part < parts; ++part) {
            const int64_t at = ((k * parts + part) * stored_c + c) * taps + tap;
            std::memcpy(raw.data() + 2 * at, &halves[part], 2);
          }
        }
      }
    }
    TensorProto bf16;
    bf16.set_name(Fresh(absl::StrCat(name, split() ? "_bf16x3" : "_bf16")));
    bf16.set_data_type(TensorProto::BFLOAT16);
    bf16.add_dims(k_count);
    bf16.add_dims(parts * stored_c);
    bf16.add_dims(f32.dims(2));
    bf16.add_dims(f32.dims(3));
    bf16.set_raw_data(std::move(raw));
    bf16_weight_[key] = bf16.name();
    added_.push_back(std::move(bf16));
    return added_.back().name();
  }

  /// Appends the bf16 (bf16x3) form of `node` when it is a Conv the bf16 convs of the pair layout
  /// compute (see RewriteMatMulsToBf16); false (nothing appended) otherwise.
  bool RewriteConv(const NodeProto& node) {
    const bool default_domain = node.domain().empty() || node.domain() == "ai.onnx";
    if (!default_domain || node.op_type() != "Conv" || node.input_size() < 2 ||
        node.input_size() > 3 || node.output_size() != 1 ||
        !initializer_index_.count(node.input(1)) || graph_inputs_.count(node.input(1)) ||
        initializer_index_.count(node.input(0))) {
      return false;
    }
    std::vector<int64_t> pads, strides = {1, 1};
    for (const auto& attribute : node.attribute()) {
      const std::string& name = attribute.name();
      if (name == "group" && attribute.i() != 1) return false;
      if (name == "auto_pad" && attribute.s() != "NOTSET") return false;
      if (name == "dilations") {
        for (int64_t value : attribute.ints()) {
          if (value != 1) return false;
        }
      }
      if (name == "strides") strides.assign(attribute.ints().begin(), attribute.ints().end());
      if (name == "pads") pads.assign(attribute.ints().begin(), attribute.ints().end());
    }
    const TensorProto& w = graph_->initializer(initializer_index_.at(node.input(1)));
    // bf16x3 takes the AMX conv's channel counts; bf16 any C (the pairs of the AVX-512 BF16
    // conv): an odd C (ResNet's 3-channel stem) with a zero channel after X's, which needs X's
    // shape.
    const bool channels_fit = split()
                                  ? w.dims_size() == 4 && w.dims(1) % 32 == 0 && w.dims(0) % 16 == 0
                                  : w.dims_size() == 4;
    if (!channels_fit || w.dims(3) > 33 || (!pads.empty() && pads.size() != 4) ||
        strides.size() != 2 || strides[0] < 1 || strides[1] < 1) {
      return false;
    }
    // A strided 1x1 without padding (ResNet's downsampling shortcut) is the conv of the image's
    // subsampled pixels (a Slice with steps), unit strides: its split then holds only the pixels
    // it reads. Other strided convs keep their strides (up to 4: the split's pair layout holds
    // the padded image's stride phases).
    if (strides[0] > 4 || strides[1] > 4) return false;
    const bool subsample =
        (strides[0] != 1 || strides[1] != 1) && w.dims(2) == 1 && w.dims(3) == 1 &&
        std::all_of(pads.begin(), pads.end(), [](int64_t pad) { return pad == 0; });
    const bool odd = w.dims(1) % 2 != 0;
    std::vector<int64_t> x_shape;
    if (odd) {
      auto found = sizes_.shapes.find(node.input(0));
      if (subsample || found == sizes_.shapes.end() || found->second.size() != 4 ||
          found->second[1] != w.dims(1)) {
        return false;
      }
      x_shape = found->second;
    }
    // A bias may reach the Conv through Identity nodes (torch writes one for each reader of a
    // deduplicated initializer: ResNet's folded biases).
    std::string bias = node.input_size() == 3 ? node.input(2) : "";
    for (int hops = 0; hops < 16 && identity_of_.count(bias); ++hops) bias = identity_of_[bias];
    if (!bias.empty()) {
      if (!initializer_index_.count(bias) || graph_inputs_.count(bias)) return false;
      const TensorProto& b = graph_->initializer(initializer_index_.at(bias));
      if (b.data_type() != TensorProto::FLOAT || b.dims_size() != 1 || b.dims(0) != w.dims(0) ||
          b.data_location() == TensorProto::EXTERNAL) {
        return false;
      }
    }
    const std::string weight = Bf16ConvWeight(node.input(1));
    if (weight.empty()) return false;
    // The bias [K] as [K, 1, 1] (it broadcasts over the NCHW output), one copy per bias.
    std::string bias_k11;
    if (!bias.empty() && bias_k11_.count(bias)) {
      bias_k11 = bias_k11_[bias];
    } else if (!bias.empty()) {
      TensorProto shaped = graph_->initializer(initializer_index_.at(bias));
      shaped.set_name(Fresh(absl::StrCat(bias, "_k11")));
      shaped.add_dims(1);
      shaped.add_dims(1);
      bias_k11 = bias_k11_[bias] = shaped.name();
      added_.push_back(std::move(shaped));
    }
    const std::string x = subsample ? Subsampled(node.input(0), strides)
                          : odd     ? WithZeroChannel(node.input(0), x_shape)
                                    : node.input(0);
    // One split per image, pads and strides (the pair layout depends on all three).
    const std::string key =
        absl::StrCat(x, "|pads=", absl::StrJoin(pads, ","),
                     "|strides=", subsample ? "1,1" : absl::StrJoin(strides, ","));
    if (!bf16_activation_.count(key)) {
      bf16_activation_[key] = split() ? SplitActivation(x, node.name(), 1)
                                      : CastActivation(x, node.name() + "_cast_x_bf16");
    }
    // Conv on bf16 (its attributes as they were, strides 1 after a subsampling), the Cast of its
    // output back to f32 under the old name (or a fresh one that the Add of the bias reads).
    const std::string product = Fresh(absl::StrCat(node.output(0), "_bf16"));
    NodeProto conv = MakeNode("Conv", node.name(), {bf16_activation_[key], weight}, product);
    *conv.mutable_attribute() = node.attribute();
    for (::onnx::AttributeProto& attribute : *conv.mutable_attribute()) {
      if (attribute.name() != "strides" || !subsample) continue;
      for (int i = 0; i < attribute.ints_size(); ++i) attribute.set_ints(i, 1);
    }
    nodes_.push_back(std::move(conv));
    const std::string product_f32 =
        bias_k11.empty() ? node.output(0) : Fresh(absl::StrCat(node.output(0), "_f32"));
    nodes_.push_back(CastNode(Fresh(absl::StrCat(node.name(), "_cast_f32")), product, product_f32,
                              TensorProto::FLOAT));
    if (!bias_k11.empty()) {
      nodes_.push_back(MakeNode("Add", Fresh(absl::StrCat(node.name(), "_add_bias")),
                                {product_f32, bias_k11}, node.output(0)));
    }
    return true;
  }

  /// Replaces the graph's nodes; drops the f32 weights nothing reads any more, adds the bf16 ones.
  void Commit() {
    std::set<std::string> read;
    for (const NodeProto& node : nodes_) {
      for (const std::string& name : node.input()) read.insert(name);
    }
    for (const auto& output : graph_->output()) read.insert(output.name());
    std::set<std::string> replaced;
    for (const auto& [key, copy] : bf16_weight_) replaced.insert(key.first);
    google::protobuf::RepeatedPtrField<TensorProto> kept;
    for (TensorProto& initializer : *graph_->mutable_initializer()) {
      if (!replaced.count(initializer.name()) || read.count(initializer.name())) {
        *kept.Add() = std::move(initializer);
      }
    }
    for (TensorProto& added : added_) *kept.Add() = std::move(added);
    graph_->mutable_initializer()->Swap(&kept);
    graph_->clear_node();
    for (NodeProto& node : nodes_) *graph_->add_node() = std::move(node);
  }

  GraphProto* graph_;
  Bf16Precision precision_;
  StaticSizes sizes_;
  bool keep_few_rows_;
  std::map<std::string, int> initializer_index_;
  std::set<std::string> graph_inputs_;
  std::set<std::string> used_;  ///< names taken, so that the added ones are fresh
  std::map<std::string, std::string> identity_of_;   ///< an Identity's output -> its input
  std::map<std::string, std::string> bias_k11_;      ///< a conv bias [K] -> its [K, 1, 1] copy
  std::map<std::string, std::string> subsampled_;    ///< "image|steps=s,t" -> its Slice
  std::map<std::string, std::string> zero_channel_;  ///< image -> its Concat of a zero channel
  std::map<std::pair<std::string, bool>, std::string> bf16_weight_;
  /// computed tensor -> its bf16 Cast (bf16x3: its split A')
  std::map<std::string, std::string> bf16_activation_;
  std::vector<NodeProto> nodes_;
  std::vector<TensorProto> added_;
};

}  // namespace

const char* Bf16PrecisionName(Bf16Precision precision) {
  return precision == Bf16Precision::kBf16x3 ? "bf16x3" : "bf16";
}

absl::StatusOr<Bf16Rewrite> RewriteMatMulsToBf16(std::string_view model_bytes,
                                                 Bf16Precision precision) {
  GTCO_ASSIGN_OR_RETURN(::onnx::ModelProto model, ParseModel(model_bytes));
  for (const auto& opset : model.opset_import()) {
    if ((opset.domain().empty() || opset.domain() == "ai.onnx") && opset.version() < 13) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the model imports ONNX opset ", opset.version(),
          "; bf16 MatMul and Cast need opset 13 or newer (re-export it with a newer opset)"));
    }
  }
  if (HasSubgraph(model.graph())) {
    return absl::FailedPreconditionError(
        "the model has subgraphs (If, Loop or Scan), which the bf16 rewrite does not handle");
  }
  Bf16Rewrite result;
  const StaticSizes sizes = InferStaticSizes(model);
  Bf16Rewriter(model.mutable_graph(), precision, sizes, /*keep_few_rows=*/true).Run(&result);
  if (precision == Bf16Precision::kBf16 && result.matmuls + result.convs == 0 &&
      result.kept_f32 > 0) {
    // Only MatMuls of few rows (a batch-1 MLP): bf16 computes them after all, as asked (the graph
    // is unchanged when nothing was rewritten).
    result = Bf16Rewrite();
    Bf16Rewriter(model.mutable_graph(), precision, sizes, /*keep_few_rows=*/false).Run(&result);
  }
  if (result.matmuls + result.convs == 0) {
    return absl::FailedPreconditionError(
        precision == Bf16Precision::kBf16x3
            ? "no MatMul or plain Gemm with a 2-D f32 weight initializer, nor an ungrouped Conv "
              "with C a multiple of 32 and K of 16, to compute in bf16x3; nothing to rewrite"
            : "no MatMul or plain Gemm with a 2-D f32 weight initializer, nor an ungrouped Conv "
              "with a 4-D f32 weight initializer, to compute in bf16 (MatMuls of two computed "
              "tensors stay f32); nothing to rewrite");
  }
  if (!model.SerializeToString(&result.model_bytes)) {
    return absl::InternalError("the rewritten model does not serialize (over 2 GiB?)");
  }
  return result;
}

}  // namespace gtco::onnx
