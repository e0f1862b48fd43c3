// Fallback steps: artifact tensors <-> reference values, and one node run between them.
#include "runtime/reference_step.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/parallel.h"
#include "runtime/strides.h"

namespace gtco::runtime {
namespace {

float HalfToFloat(uint16_t half) {
  const uint32_t sign = (half >> 15) & 1, exponent = (half >> 10) & 31, mantissa = half & 1023;
  float magnitude;
  if (exponent == 0) {
    magnitude = static_cast<float>(mantissa) * (1.0f / 16777216.0f);  // 2^-24
  } else if (exponent == 31) {
    magnitude = mantissa == 0 ? INFINITY : NAN;
  } else {
    uint32_t bits = ((exponent + 112) << 23) | (mantissa << 13);
    std::memcpy(&magnitude, &bits, 4);
  }
  return sign ? -magnitude : magnitude;
}

uint16_t FloatToHalf(float value) {
  // value is already a representable f16 (reference::RoundTo rounded it): exact conversion.
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  if (std::isnan(value)) return sign | 0x7e00;
  const float magnitude = std::fabs(value);
  if (std::isinf(value) || magnitude >= 65520.0f) return sign | 0x7c00;
  if (magnitude < 6.103515625e-05f) {  // subnormal: a multiple of 2^-24
    return sign | static_cast<uint16_t>(std::nearbyint(magnitude * 16777216.0f));
  }
  const int32_t exponent = static_cast<int32_t>((bits >> 23) & 255) - 127 + 15;
  return sign | static_cast<uint16_t>((exponent << 10) | ((bits >> 13) & 1023));
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ","), "]");
}

}  // namespace

double LoadElement(const char* data, ElemType type, int64_t index) {
  switch (type) {
    case ElemType::kF32: {
      float value;
      std::memcpy(&value, data + index * 4, 4);
      return value;
    }
    case ElemType::kBF16: {
      uint16_t half;
      std::memcpy(&half, data + index * 2, 2);
      const uint32_t bits = static_cast<uint32_t>(half) << 16;
      float value;
      std::memcpy(&value, &bits, 4);
      return value;
    }
    case ElemType::kF16: {
      uint16_t half;
      std::memcpy(&half, data + index * 2, 2);
      return HalfToFloat(half);
    }
    case ElemType::kI32: {
      int32_t value;
      std::memcpy(&value, data + index * 4, 4);
      return value;
    }
    case ElemType::kI64: {
      int64_t value;
      std::memcpy(&value, data + index * 8, 8);
      return static_cast<double>(value);
    }
    case ElemType::kI8:
      return static_cast<int8_t>(data[index]);
    case ElemType::kU8:
    case ElemType::kBool:
      return static_cast<uint8_t>(data[index]);
  }
  return 0.0;
}

void StoreElement(char* data, ElemType type, int64_t index, double value) {
  value = reference::RoundTo(type, value);
  switch (type) {
    case ElemType::kF32: {
      const float narrow = static_cast<float>(value);
      std::memcpy(data + index * 4, &narrow, 4);
      return;
    }
    case ElemType::kBF16: {
      const float narrow = static_cast<float>(value);  // a bf16 value: its top half
      uint32_t bits;
      std::memcpy(&bits, &narrow, 4);
      const uint16_t half = static_cast<uint16_t>(bits >> 16);
      std::memcpy(data + index * 2, &half, 2);
      return;
    }
    case ElemType::kF16: {
      const uint16_t half = FloatToHalf(static_cast<float>(value));
      std::memcpy(data + index * 2, &half, 2);
      return;
    }
    case ElemType::kI32: {
      const int32_t narrow = static_cast<int32_t>(value);
      std::memcpy(data + index * 4, &narrow, 4);
      return;
    }
    case ElemType::kI64: {
      const int64_t wide = static_cast<int64_t>(value);
      std::memcpy(data + index * 8, &wide, 8);
      return;
    }
    case ElemType::kI8:
      data[index] = static_cast<char>(static_cast<int8_t>(value));
      return;
    case ElemType::kU8:
      data[index] = static_cast<char>(static_cast<uint8_t>(value));
      return;
    case ElemType::kBool:
      data[index] = value != 0.0 ? 1 : 0;
      return;
  }
}

reference::Value ValueFromBytes(const TensorSpec& spec, const char* data) {
  reference::Value value;
  value.dtype = spec.dtype;
  value.shape = spec.shape;
  const int64_t count = spec.NumElements();
  value.data.resize(count);
  for (int64_t i = 0; i < count; ++i) value.data[i] = LoadElement(data, spec.dtype, i);
  return value;
}

namespace {

/// True for the default ONNX domain ("" or "ai.onnx").
bool DefaultDomain(const reference::Node& node) {
  return node.domain.empty() || node.domain == "ai.onnx";
}

/// The step's inputs as the reference library's values (null for an omitted input), held in
/// `values`; inputs before `first` are passed as null (not converted).
std::vector<const reference::Value*> InputValues(const std::vector<const TensorSpec*>& specs,
                                                 const std::vector<const char*>& inputs,
                                                 size_t first,
                                                 std::vector<reference::Value>* values) {
  values->clear();
  values->reserve(inputs.size());
  std::vector<const reference::Value*> pointers(std::min(first, inputs.size()), nullptr);
  for (size_t i = first; i < inputs.size(); ++i) {
    if (specs[i] == nullptr) {
      pointers.push_back(nullptr);
      continue;
    }
    values->push_back(ValueFromBytes(*specs[i], inputs[i]));
    pointers.push_back(&values->back());
  }
  return pointers;
}

/// Elements of one resize pass below which it runs on the calling thread alone.
constexpr int64_t kMinParallelResizeElements = 1 << 15;

/// One pass of the separable f32 resize: `src` [outer, taps.in, inner] to `dst` [outer,
/// taps.out, inner].
struct ResizePass {
  const reference::ResizeAxisTaps* taps;
  const float* src;
  float* dst;
  int64_t inner;
  std::vector<float> first_weight, second_weight;
};

void ResizeRows(int64_t o, void* closure) {
  const ResizePass& pass = *static_cast<const ResizePass*>(closure);
  const reference::ResizeAxisTaps& taps = *pass.taps;
  const int64_t inner = pass.inner;
  const float* src = pass.src + o * taps.in * inner;
  float* dst = pass.dst + o * taps.out * inner;
  for (int64_t x = 0; x < taps.out; ++x, dst += inner) {
    const float w0 = pass.first_weight[x], w1 = pass.second_weight[x];
    const float* a = src + taps.first[x] * inner;
    const float* b = src + taps.second[x] * inner;
    // A tap of weight 0 is not read (0 * inf would be NaN where the reference has none).
    if (w1 == 0.0f) {
      if (w0 == 1.0f) {
        std::memcpy(dst, a, sizeof(float) * inner);
      } else {
        for (int64_t i = 0; i < inner; ++i) dst[i] = w0 == 0.0f ? 0.0f : w0 * a[i];
      }
    } else {
      for (int64_t i = 0; i < inner; ++i) dst[i] = w0 * a[i] + w1 * b[i];
    }
  }
}

/// Resize / Upsample of an f32 tensor by the reference's separable plan, in float, one pass
/// per resized axis, each pass's rows spread over the runtime's threads. false where the node
/// is of a form the plan does not cover (cubic, antialias, crop): the generic step computes it.
absl::StatusOr<bool> RunSeparableResize(const reference::Node& node,
                                        const std::vector<const TensorSpec*>& input_specs,
                                        const std::vector<const char*>& inputs,
                                        const TensorSpec& output_spec, char* output) {
  if ((node.op_type != "Resize" && node.op_type != "Upsample") || input_specs.empty() ||
      input_specs[0] == nullptr || input_specs[0]->dtype != ElemType::kF32 ||
      output_spec.dtype != ElemType::kF32) {
    return false;
  }
  std::vector<reference::Value> values;  // roi, scales, sizes: small
  const std::vector<const reference::Value*> pointers =
      InputValues(input_specs, inputs, /*first=*/1, &values);
  absl::StatusOr<std::optional<std::vector<reference::ResizeAxisTaps>>> plan =
      reference::SeparableResizeTaps(node, pointers, input_specs[0]->shape);
  if (!plan.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("fallback step '", node.name, "': ", plan.status().message()));
  }
  if (!plan->has_value()) return false;
  std::vector<int64_t> shape = input_specs[0]->shape;
  for (const reference::ResizeAxisTaps& taps : **plan) shape[taps.axis] = taps.out;
  if (shape != output_spec.shape) {
    return absl::InvalidArgumentError(
        absl::StrCat("fallback step '", node.name, "' (", node.op_type, ") computes ",
                     ShapeText(shape), " for '", output_spec.name,
                     "', which the artifact holds as ", ShapeText(output_spec.shape)));
  }
  shape = input_specs[0]->shape;
  const float* current = reinterpret_cast<const float*>(inputs[0]);
  std::vector<float> buffers[2];
  const size_t passes = (*plan)->size();
  if (passes == 0) {
    std::memcpy(output, inputs[0], sizeof(float) * output_spec.NumElements());
    return true;
  }
  for (size_t index = 0; index < passes; ++index) {
    const reference::ResizeAxisTaps& taps = (**plan)[index];
    int64_t outer = 1, inner = 1;
    for (int64_t dim = 0; dim < taps.axis; ++dim) outer *= shape[dim];
    for (size_t dim = taps.axis + 1; dim < shape.size(); ++dim) inner *= shape[dim];
    shape[taps.axis] = taps.out;
    float* dst = reinterpret_cast<float*>(output);
    if (index + 1 < passes) {
      buffers[index % 2].resize(static_cast<size_t>(outer * taps.out * inner));
      dst = buffers[index % 2].data();
    }
    ResizePass pass{&taps, current, dst, inner, {}, {}};
    for (int64_t x = 0; x < taps.out; ++x) {
      pass.first_weight.push_back(static_cast<float>(taps.first_weight[x]));
      pass.second_weight.push_back(static_cast<float>(taps.second_weight[x]));
    }
    if (outer > 1 && outer * taps.out * inner >= kMinParallelResizeElements) {
      gtco_parallel_for(outer, ResizeRows, &pass);
    } else {
      for (int64_t o = 0; o < outer; ++o) ResizeRows(o, &pass);
    }
    current = dst;
  }
  return true;
}

/// One row of GatherElements: output elements [flat, flat + run) from data row `base` (the
/// index times `axis_stride`, plus j times `step`), elements of `kBytes` bytes, indices of type
/// I; the flat position of the first index out of [-extent, extent), or -1.
template <int64_t kBytes, typename I>
int64_t GatherRow(const std::vector<const char*>& inputs, char* output, int64_t flat, int64_t run,
                  int64_t base, int64_t axis_stride, int64_t step, int64_t extent) {
  const I* indices = reinterpret_cast<const I*>(inputs[1]) + flat;
  for (int64_t j = 0; j < run; ++j) {
    int64_t index = indices[j];
    if (index < -extent || index >= extent) return flat + j;
    if (index < 0) index += extent;
    std::memcpy(output + (flat + j) * kBytes,
                inputs[0] + (base + index * axis_stride + j * step) * kBytes, kBytes);
  }
  return -1;
}

/// GatherRow for `bytes`-byte elements (1, 2, 4 or 8).
template <typename I>
int64_t GatherRowOf(int64_t bytes, const std::vector<const char*>& inputs, char* output,
                    int64_t flat, int64_t run, int64_t base, int64_t axis_stride, int64_t step,
                    int64_t extent) {
  switch (bytes) {
    case 1:
      return GatherRow<1, I>(inputs, output, flat, run, base, axis_stride, step, extent);
    case 2:
      return GatherRow<2, I>(inputs, output, flat, run, base, axis_stride, step, extent);
    case 4:
      return GatherRow<4, I>(inputs, output, flat, run, base, axis_stride, step, extent);
    default:
      return GatherRow<8, I>(inputs, output, flat, run, base, axis_stride, step, extent);
  }
}

/// Elements of a GatherElements step below which it runs on the calling thread alone.
constexpr int64_t kMinParallelGatherElements = 1 << 15;

/// A GatherElements step split into chunks of rows (of the innermost dim).
struct GatherJob {
  const std::vector<const char*>* inputs;
  char* output;
  const std::vector<int64_t>* index_shape;
  std::vector<int64_t> strides;  ///< the data's element strides
  int64_t axis, bytes, extent, run, rows, rows_per_chunk;
  bool wide_indices;  ///< int64 indices (else int32)
  std::atomic<int64_t> first_bad{std::numeric_limits<int64_t>::max()};
};

void GatherChunk(int64_t chunk, void* closure) {
  GatherJob& job = *static_cast<GatherJob*>(closure);
  const std::vector<int64_t>& shape = *job.index_shape;
  const int64_t rank = static_cast<int64_t>(shape.size());
  const int64_t first = chunk * job.rows_per_chunk;
  const int64_t last = std::min(job.rows, first + job.rows_per_chunk);
  if (first >= last) return;
  // The position of row `first` over the index's outer dims.
  std::vector<int64_t> position(rank, 0);
  for (int64_t dim = rank - 2, rest = first; dim >= 0; --dim) {
    position[dim] = rest % shape[dim];
    rest /= shape[dim];
  }
  const int64_t step = job.axis == rank - 1 ? 0 : 1;  // the innermost position's own stride
  for (int64_t row = first; row < last; ++row) {
    int64_t base = 0;
    for (int64_t dim = 0; dim + 1 < rank; ++dim) {
      if (dim != job.axis) base += position[dim] * job.strides[dim];
    }
    const int64_t flat = row * job.run;
    const int64_t bad =
        job.wide_indices ? GatherRowOf<int64_t>(job.bytes, *job.inputs, job.output, flat, job.run,
                                                base, job.strides[job.axis], step, job.extent)
                         : GatherRowOf<int32_t>(job.bytes, *job.inputs, job.output, flat, job.run,
                                                base, job.strides[job.axis], step, job.extent);
    if (bad >= 0) {
      int64_t seen = job.first_bad.load();
      while (bad < seen && !job.first_bad.compare_exchange_weak(seen, bad)) {
      }
      return;
    }
    for (int64_t dim = rank - 2; dim >= 0; --dim) {
      if (++position[dim] < shape[dim]) break;
      position[dim] = 0;
    }
  }
}

/// GatherElements read straight from the artifact's buffers (elements copied by size, int32 or
/// int64 indices), a row of the innermost dim at a time: false where the node is not one of
/// that form (the generic step then computes it, or names what is wrong).
absl::StatusOr<bool> RunGatherElements(const reference::Node& node,
                                       const std::vector<const TensorSpec*>& input_specs,
                                       const std::vector<const char*>& inputs,
                                       const TensorSpec& output_spec, char* output) {
  if (node.op_type != "GatherElements" || !DefaultDomain(node) || input_specs.size() != 2 ||
      input_specs[0] == nullptr || input_specs[1] == nullptr) {
    return false;
  }
  const TensorSpec& data = *input_specs[0];
  const TensorSpec& indices = *input_specs[1];
  const int64_t rank = static_cast<int64_t>(data.shape.size());
  if ((indices.dtype != ElemType::kI64 && indices.dtype != ElemType::kI32) || rank == 0 ||
      output_spec.dtype != data.dtype || output_spec.shape != indices.shape ||
      static_cast<int64_t>(indices.shape.size()) != rank) {
    return false;
  }
  int64_t axis = 0;
  if (auto found = node.attrs.find("axis"); found != node.attrs.end()) axis = found->second.i;
  if (axis < -rank || axis >= rank) return false;
  if (axis < 0) axis += rank;
  for (int64_t dim = 0; dim < rank; ++dim) {
    if (dim != axis && indices.shape[dim] > data.shape[dim]) return false;
  }
  GatherJob job;
  job.inputs = &inputs;
  job.output = output;
  job.index_shape = &indices.shape;
  job.strides = Strides(data.shape);
  job.axis = axis;
  job.bytes = ElemSize(data.dtype);
  job.extent = data.shape[axis];
  job.wide_indices = indices.dtype == ElemType::kI64;
  job.run = indices.shape.back();
  const int64_t total = output_spec.NumElements();
  job.rows = job.run > 0 ? total / job.run : 0;
  // Chunks of rows over the runtime's threads where the step is large (DeBERTa's gathers of
  // 200K scores), in one piece otherwise.
  const int64_t chunks = total >= kMinParallelGatherElements ? std::min<int64_t>(job.rows, 64) : 1;
  job.rows_per_chunk = chunks > 0 ? (job.rows + chunks - 1) / chunks : 0;
  if (chunks > 1) {
    gtco_parallel_for(chunks, GatherChunk, &job);
  } else if (chunks == 1) {
    GatherChunk(0, &job);
  }
  const int64_t bad = job.first_bad.load();
  if (bad != std::numeric_limits<int64_t>::max()) {
    const int64_t index = job.wide_indices ? reinterpret_cast<const int64_t*>(inputs[1])[bad]
                                           : reinterpret_cast<const int32_t*>(inputs[1])[bad];
    return absl::InvalidArgumentError(
        absl::StrCat("fallback step '", node.name, "' (GatherElements): index ", index,
                     " is out of range [", -job.extent, ", ", job.extent, ") along axis ", axis));
  }
  return true;
}

/// The int64 values of a constant-sized int input (pads, axes), or nullopt for another dtype.
std::optional<std::vector<int64_t>> Int64Values(const TensorSpec& spec, const char* data) {
  if (spec.dtype != ElemType::kI64) return std::nullopt;
  std::vector<int64_t> values(spec.NumElements());
  if (!values.empty()) std::memcpy(values.data(), data, values.size() * sizeof(int64_t));
  return values;
}

/// A constant-mode Pad with pads of zero or more (opset >= 11: pads, constant and axes as
/// inputs) read straight from the artifact's buffers: the output filled with the constant, then
/// each innermost row of the input copied to its place. False where the node is not of that
/// form (the generic step then computes it, or names what is wrong).
absl::StatusOr<bool> RunConstantPad(const reference::Node& node,
                                    const std::vector<const TensorSpec*>& input_specs,
                                    const std::vector<const char*>& inputs,
                                    const TensorSpec& output_spec, char* output) {
  if (node.op_type != "Pad" || !DefaultDomain(node) || node.opset < 11 || input_specs.size() < 2 ||
      input_specs[0] == nullptr || input_specs[1] == nullptr) {
    return false;
  }
  if (auto mode = node.attrs.find("mode");
      mode != node.attrs.end() && mode->second.s != "constant") {
    return false;
  }
  const TensorSpec& data = *input_specs[0];
  const int64_t rank = static_cast<int64_t>(data.shape.size());
  std::optional<std::vector<int64_t>> pads = Int64Values(*input_specs[1], inputs[1]);
  if (rank == 0 || !pads || output_spec.dtype != data.dtype) return false;
  std::vector<int64_t> axes;
  if (input_specs.size() > 3 && input_specs[3] != nullptr) {
    std::optional<std::vector<int64_t>> given = Int64Values(*input_specs[3], inputs[3]);
    if (!given) return false;
    axes = *given;
  } else {
    for (int64_t dim = 0; dim < rank; ++dim) axes.push_back(dim);
  }
  if (pads->size() != 2 * axes.size()) return false;
  std::vector<int64_t> begin(rank, 0), shape = data.shape;
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t axis = axes[i] < 0 ? axes[i] + rank : axes[i];
    const int64_t before = (*pads)[i], after = (*pads)[axes.size() + i];
    if (axis < 0 || axis >= rank || before < 0 || after < 0) return false;
    begin[axis] += before;
    shape[axis] += before + after;
  }
  if (shape != output_spec.shape) return false;
  const int64_t bytes = ElemSize(data.dtype);
  // The constant as one element of the data's dtype, repeated over the output.
  std::vector<char> constant(bytes, 0);
  if (input_specs.size() > 2 && input_specs[2] != nullptr && input_specs[2]->NumElements() > 0) {
    if (input_specs[2]->dtype != data.dtype) return false;
    std::memcpy(constant.data(), inputs[2], bytes);
  }
  const int64_t total = output_spec.NumElements();
  if (std::all_of(constant.begin(), constant.end(), [](char c) { return c == 0; })) {
    std::memset(output, 0, total * bytes);
  } else {
    for (int64_t e = 0; e < total; ++e) std::memcpy(output + e * bytes, constant.data(), bytes);
  }
  // Each row of the input goes to its place in the output: the padded output's strides read at
  // the input's indices, offset by the leading pads.
  const std::vector<int64_t> out_strides = Strides(shape);
  int64_t base = 0;
  for (int64_t dim = 0; dim < rank; ++dim) base += begin[dim] * out_strides[dim];
  ForEachBroadcastRun(
      data.shape, {out_strides}, [&](int64_t flat, const std::vector<int64_t>& at, int64_t count) {
        std::memcpy(output + (base + at[0]) * bytes, inputs[0] + flat * bytes, count * bytes);
      });
  return true;
}

/// ScatterND without a reduction, read straight from the artifact's buffers: the data copied,
/// then each index tuple's slice of updates written over it (int64 indices; negative ones count
/// from the end). False where the node is not of that form.
absl::StatusOr<bool> RunScatterND(const reference::Node& node,
                                  const std::vector<const TensorSpec*>& input_specs,
                                  const std::vector<const char*>& inputs,
                                  const TensorSpec& output_spec, char* output) {
  if (node.op_type != "ScatterND" || !DefaultDomain(node) || input_specs.size() != 3 ||
      input_specs[0] == nullptr || input_specs[1] == nullptr || input_specs[2] == nullptr) {
    return false;
  }
  if (auto reduction = node.attrs.find("reduction");
      reduction != node.attrs.end() && reduction->second.s != "none") {
    return false;
  }
  const TensorSpec& data = *input_specs[0];
  const TensorSpec& indices = *input_specs[1];
  const TensorSpec& updates = *input_specs[2];
  const int64_t rank = static_cast<int64_t>(data.shape.size());
  if (indices.dtype != ElemType::kI64 || indices.shape.empty() || updates.dtype != data.dtype ||
      output_spec.dtype != data.dtype || output_spec.shape != data.shape) {
    return false;
  }
  const int64_t depth = indices.shape.back();
  if (depth < 1 || depth > rank) return false;
  std::vector<int64_t> updates_shape(indices.shape.begin(), indices.shape.end() - 1);
  updates_shape.insert(updates_shape.end(), data.shape.begin() + depth, data.shape.end());
  if (updates_shape != updates.shape) return false;
  const int64_t bytes = ElemSize(data.dtype);
  const std::vector<int64_t> strides = Strides(data.shape);
  const int64_t slice = strides[depth - 1];  // the elements one index tuple addresses
  std::memcpy(output, inputs[0], data.NumElements() * bytes);
  const int64_t tuples = indices.NumElements() / depth;
  const int64_t* index = reinterpret_cast<const int64_t*>(inputs[1]);
  for (int64_t t = 0; t < tuples; ++t, index += depth) {
    int64_t at = 0;
    for (int64_t dim = 0; dim < depth; ++dim) {
      int64_t i = index[dim];
      const int64_t extent = data.shape[dim];
      if (i < -extent || i >= extent) {
        return absl::InvalidArgumentError(
            absl::StrCat("fallback step '", node.name, "' (ScatterND): index ", i,
                         " is out of range [", -extent, ", ", extent, ") along axis ", dim));
      }
      at += (i < 0 ? i + extent : i) * strides[dim];
    }
    std::memcpy(output + at * bytes, inputs[2] + t * slice * bytes, slice * bytes);
  }
  return true;
}

/// out = f(a, b) over `out`'s elements, a and b broadcast to it, a run of the innermost dim at a
/// time; false where they do not broadcast.
template <typename A, typename B, typename Out, typename F>
bool BroadcastBinary(const TensorSpec& a_spec, const char* a_data, const TensorSpec& b_spec,
                     const char* b_data, const TensorSpec& out_spec, char* out_data, F f) {
  if (!BroadcastsTo(a_spec.shape, out_spec.shape) || !BroadcastsTo(b_spec.shape, out_spec.shape)) {
    return false;
  }
  const A* a = reinterpret_cast<const A*>(a_data);
  const B* b = reinterpret_cast<const B*>(b_data);
  Out* out = reinterpret_cast<Out*>(out_data);
  const std::vector<std::vector<int64_t>> strides = {
      BroadcastStrides(a_spec.shape, out_spec.shape),
      BroadcastStrides(b_spec.shape, out_spec.shape)};
  const int64_t step_a = strides[0].empty() ? 0 : strides[0].back();
  const int64_t step_b = strides[1].empty() ? 0 : strides[1].back();
  ForEachBroadcastRun(out_spec.shape, strides,
                      [&](int64_t flat, const std::vector<int64_t>& at, int64_t count) {
                        for (int64_t j = 0; j < count; ++j) {
                          out[flat + j] = f(a[at[0] + j * step_a], b[at[1] + j * step_b]);
                        }
                      });
  return true;
}

/// And, Or and Xor of bool tensors, broadcast as ONNX broadcasts, on the artifact's bytes. False
/// where the node is not of that form.
absl::StatusOr<bool> RunBoolLogic(const reference::Node& node,
                                  const std::vector<const TensorSpec*>& input_specs,
                                  const std::vector<const char*>& inputs,
                                  const TensorSpec& output_spec, char* output) {
  if (!DefaultDomain(node) || input_specs.size() != 2 || input_specs[0] == nullptr ||
      input_specs[1] == nullptr || output_spec.dtype != ElemType::kBool ||
      input_specs[0]->dtype != ElemType::kBool || input_specs[1]->dtype != ElemType::kBool) {
    return false;
  }
  const TensorSpec &a = *input_specs[0], &b = *input_specs[1];
  using Byte = uint8_t;
  if (node.op_type == "And") {
    return BroadcastBinary<Byte, Byte, Byte>(a, inputs[0], b, inputs[1], output_spec, output,
                                             [](Byte x, Byte y) -> Byte { return x && y; });
  }
  if (node.op_type == "Or") {
    return BroadcastBinary<Byte, Byte, Byte>(a, inputs[0], b, inputs[1], output_spec, output,
                                             [](Byte x, Byte y) -> Byte { return x || y; });
  }
  if (node.op_type == "Xor") {
    return BroadcastBinary<Byte, Byte, Byte>(a, inputs[0], b, inputs[1], output_spec, output,
                                             [](Byte x, Byte y) -> Byte { return !x != !y; });
  }
  return false;
}

/// Add, Sub, Mul, Max and Min of int64 or int32 tensors (the position arithmetic of RoBERTa,
/// OPT and DeBERTa, which has no kernel family), broadcast, on the artifact's bytes; integers
/// wrap as two's complement where the reference's doubles would round. False where the node is
/// not of that form.
template <typename T>
bool IntegerArithmetic(const std::string& op, const TensorSpec& a, const char* a_data,
                       const TensorSpec& b, const char* b_data, const TensorSpec& out,
                       char* out_data) {
  using U = std::make_unsigned_t<T>;
  if (op == "Add") {
    return BroadcastBinary<T, T, T>(a, a_data, b, b_data, out, out_data, [](T x, T y) {
      return static_cast<T>(static_cast<U>(x) + static_cast<U>(y));
    });
  }
  if (op == "Sub") {
    return BroadcastBinary<T, T, T>(a, a_data, b, b_data, out, out_data, [](T x, T y) {
      return static_cast<T>(static_cast<U>(x) - static_cast<U>(y));
    });
  }
  if (op == "Mul") {
    return BroadcastBinary<T, T, T>(a, a_data, b, b_data, out, out_data, [](T x, T y) {
      return static_cast<T>(static_cast<U>(x) * static_cast<U>(y));
    });
  }
  if (op == "Max") {
    return BroadcastBinary<T, T, T>(a, a_data, b, b_data, out, out_data,
                                    [](T x, T y) { return std::max(x, y); });
  }
  if (op == "Min") {
    return BroadcastBinary<T, T, T>(a, a_data, b, b_data, out, out_data,
                                    [](T x, T y) { return std::min(x, y); });
  }
  return false;
}

absl::StatusOr<bool> RunIntegerArithmetic(const reference::Node& node,
                                          const std::vector<const TensorSpec*>& input_specs,
                                          const std::vector<const char*>& inputs,
                                          const TensorSpec& output_spec, char* output) {
  if (!DefaultDomain(node) || input_specs.size() != 2 || input_specs[0] == nullptr ||
      input_specs[1] == nullptr || input_specs[0]->dtype != output_spec.dtype ||
      input_specs[1]->dtype != output_spec.dtype) {
    return false;
  }
  if (output_spec.dtype == ElemType::kI64) {
    return IntegerArithmetic<int64_t>(node.op_type, *input_specs[0], inputs[0], *input_specs[1],
                                      inputs[1], output_spec, output);
  }
  if (output_spec.dtype == ElemType::kI32) {
    return IntegerArithmetic<int32_t>(node.op_type, *input_specs[0], inputs[0], *input_specs[1],
                                      inputs[1], output_spec, output);
  }
  return false;
}

/// Cast between int64, int32, bool and f32 where every value converts exactly or by rounding
/// to nearest (integers and bools to f32, integers between widths, anything to bool); float to
/// integer casts (truncation, and NaN) are left to the generic step.
absl::StatusOr<bool> RunCast(const reference::Node& node,
                             const std::vector<const TensorSpec*>& input_specs,
                             const std::vector<const char*>& inputs, const TensorSpec& output_spec,
                             char* output) {
  if (node.op_type != "Cast" || !DefaultDomain(node) || input_specs.size() != 1 ||
      input_specs[0] == nullptr || input_specs[0]->shape != output_spec.shape) {
    return false;
  }
  const ElemType from = input_specs[0]->dtype, to = output_spec.dtype;
  const int64_t count = output_spec.NumElements();
  auto convert = [&](auto source_type, auto target_type) {
    using S = decltype(source_type);
    using D = decltype(target_type);
    const S* in = reinterpret_cast<const S*>(inputs[0]);
    D* out = reinterpret_cast<D*>(output);
    for (int64_t i = 0; i < count; ++i) {
      if constexpr (std::is_same_v<D, uint8_t>) {
        out[i] = in[i] != S{0};
      } else {
        out[i] = static_cast<D>(in[i]);
      }
    }
    return true;
  };
  const bool integer_from =
      from == ElemType::kI64 || from == ElemType::kI32 || from == ElemType::kBool;
  if (from == to) {
    std::memcpy(output, inputs[0], count * ElemSize(to));
    return true;
  }
  if (to == ElemType::kBool) {
    if (from == ElemType::kI64) return convert(int64_t{}, uint8_t{});
    if (from == ElemType::kI32) return convert(int32_t{}, uint8_t{});
    if (from == ElemType::kF32) return convert(float{}, uint8_t{});
    return false;
  }
  if (!integer_from) return false;
  if (from == ElemType::kI64) {
    if (to == ElemType::kF32) return convert(int64_t{}, float{});
    if (to == ElemType::kI32) return convert(int64_t{}, int32_t{});
  } else if (from == ElemType::kI32) {
    if (to == ElemType::kF32) return convert(int32_t{}, float{});
    if (to == ElemType::kI64) return convert(int32_t{}, int64_t{});
  } else {  // bool
    if (to == ElemType::kF32) return convert(uint8_t{}, float{});
    if (to == ElemType::kI64) return convert(uint8_t{}, int64_t{});
    if (to == ElemType::kI32) return convert(uint8_t{}, int32_t{});
  }
  return false;
}

}  // namespace

absl::Status RunReferenceStep(const reference::Node& node,
                              const std::vector<const TensorSpec*>& input_specs,
                              const std::vector<const char*>& inputs,
                              const std::vector<const TensorSpec*>& output_specs,
                              const std::vector<char*>& outputs) {
  if (outputs.size() == 1 && output_specs[0] != nullptr) {
    for (auto* direct : {&RunSeparableResize, &RunGatherElements, &RunConstantPad, &RunScatterND,
                         &RunBoolLogic, &RunIntegerArithmetic, &RunCast}) {
      absl::StatusOr<bool> done =
          (*direct)(node, input_specs, inputs, *output_specs[0], outputs[0]);
      if (!done.ok()) return done.status();
      if (*done) return absl::OkStatus();
    }
  }
  std::vector<reference::Value> values;
  const std::vector<const reference::Value*> pointers =
      InputValues(input_specs, inputs, /*first=*/0, &values);
  absl::StatusOr<std::vector<reference::Value>> results =
      reference::RunOp(node, pointers, static_cast<int>(outputs.size()));
  if (!results.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("fallback step '", node.name, "': ", results.status().message()));
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const TensorSpec& spec = *output_specs[i];
    if (i >= results->size()) {
      return absl::InternalError(absl::StrCat("fallback step '", node.name, "' computed ",
                                              results->size(), " outputs, the artifact has ",
                                              outputs.size()));
    }
    const reference::Value& result = (*results)[i];
    if (result.shape != spec.shape || result.dtype != spec.dtype) {
      return absl::InvalidArgumentError(absl::StrCat(
          "fallback step '", node.name, "' (", node.op_type, ") computed ",
          ElemTypeName(result.dtype), " ", ShapeText(result.shape), " for '", spec.name,
          "', which the artifact holds as ", ElemTypeName(spec.dtype), " ", ShapeText(spec.shape)));
    }
    const int64_t count = spec.NumElements();
    for (int64_t e = 0; e < count; ++e) StoreElement(outputs[i], spec.dtype, e, result.data[e]);
  }
  return absl::OkStatus();
}

}  // namespace gtco::runtime
