// Reference evaluation of workloads, random inputs and output comparison.
#include "common/ir/reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/ir/attention.h"
#include "common/ir/conv.h"
#include "common/ir/pool.h"
#include "common/util/status.h"

namespace gtco::ir {
namespace {

/// SplitMix64: small, fast and identical everywhere.
uint64_t NextRandom(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/// Uniform in [lo, hi] from the top 24 bits (exact in fp32).
float UniformFloat(uint64_t* state, float lo, float hi) {
  const float unit = static_cast<float>(NextRandom(state) >> 40) / 16777215.0f;
  return lo + (hi - lo) * unit;
}

int64_t ShapeElements(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  return count;
}

/// Flat index into `in_shape` of output element `out_flat` under numpy broadcasting.
int64_t BroadcastIndex(const std::vector<int64_t>& out_shape, const std::vector<int64_t>& in_shape,
                       int64_t out_flat) {
  int64_t in_index = 0, in_stride = 1, remaining = out_flat;
  const int64_t out_rank = static_cast<int64_t>(out_shape.size());
  const int64_t in_rank = static_cast<int64_t>(in_shape.size());
  for (int64_t dim = out_rank - 1; dim >= 0; --dim) {
    const int64_t coord = remaining % out_shape[dim];
    remaining /= out_shape[dim];
    const int64_t in_dim = dim - (out_rank - in_rank);
    if (in_dim < 0) continue;
    if (in_shape[in_dim] != 1) in_index += coord * in_stride;
    in_stride *= in_shape[in_dim];
  }
  return in_index;
}

/// The epilogue's value at output element `out_flat` given the anchor value `acc`.
float ApplyEpilogue(const Workload& w, const std::vector<std::vector<float>>& inputs, float acc,
                    int64_t out_flat) {
  std::vector<float> values;
  values.reserve(w.epilogue.size());
  for (const EwInstr& instr : w.epilogue) {
    float args[2] = {0.0f, 0.0f};
    for (size_t arg_idx = 0; arg_idx < instr.args.size() && arg_idx < 2; ++arg_idx) {
      const Operand& operand = instr.args[arg_idx];
      switch (operand.kind) {
        case Operand::Kind::kAcc:
          args[arg_idx] = acc;
          break;
        case Operand::Kind::kConst:
          args[arg_idx] = operand.value;
          break;
        case Operand::Kind::kValue:
          args[arg_idx] = values.at(operand.index);
          break;
        case Operand::Kind::kInput: {
          const std::vector<int64_t>& shape = w.inputs.at(operand.index).shape;
          args[arg_idx] = inputs[operand.index][BroadcastIndex(w.output.shape, shape, out_flat)];
          break;
        }
      }
    }
    values.push_back(EvalEwOp(instr.op, args[0], args[1]));
  }
  return values.empty() ? acc : values.back();
}

/// Runs body(begin, end) over the rows [0, rows), split across the machine's cores when the
/// work (multiply-adds) is large enough to matter, e.g. the reference of a 4096^3 GPU matmul.
void ForRowBlocks(int64_t rows, double work, const std::function<void(int64_t, int64_t)>& body) {
  const int64_t threads = std::min<int64_t>(
      rows, work < 5e7 ? 1 : std::max(1u, std::thread::hardware_concurrency()));
  if (threads <= 1) {
    body(0, rows);
    return;
  }
  std::vector<std::thread> pool;
  for (int64_t part = 0; part < threads; ++part) {
    pool.emplace_back(body, rows * part / threads, rows * (part + 1) / threads);
  }
  for (std::thread& thread : pool) thread.join();
}

/// Anchor values (before the epilogue), one per output element.
std::vector<float> AnchorValues(const Workload& w, const std::vector<std::vector<float>>& inputs) {
  const int64_t count = ShapeElements(w.output.shape);
  std::vector<float> result(count, 0.0f);
  if (w.anchor == AnchorKind::kMatMul) {
    const MatMulParams& p = w.matmul;
    const std::vector<float>& a = inputs[0];
    const std::vector<float>& b = inputs[1];
    // Row by row, k outer and j inner: each element still sums its products in k order.
    ForRowBlocks(p.batch * p.m, static_cast<double>(p.batch) * p.m * p.n * p.k,
                 [&](int64_t row_begin, int64_t row_end) {
      std::vector<double> sums(p.n);
      for (int64_t row = row_begin; row < row_end; ++row) {
        const int64_t batch = row / p.m, i = row % p.m;
        const int64_t a_base = p.a_batched ? batch * p.m * p.k : 0;
        const int64_t b_base = p.b_batched ? batch * p.k * p.n : 0;
        std::fill(sums.begin(), sums.end(), 0.0);
        for (int64_t k = 0; k < p.k; ++k) {
          const double a_value = a[a_base + (p.trans_a ? k * p.m + i : i * p.k + k)];
          for (int64_t j = 0; j < p.n; ++j) {
            sums[j] += a_value * b[b_base + (p.trans_b ? j * p.k + k : k * p.n + j)];
          }
        }
        for (int64_t j = 0; j < p.n; ++j) result[row * p.n + j] = static_cast<float>(sums[j]);
      }
    });
    return result;
  }
  if (w.anchor == AnchorKind::kConv) {
    // An X in the pair layout is read as its image, converted once.
    ConvParams p = w.conv;
    const std::vector<float> image =
        p.x_pairs ? ConvPairsToImage(p, inputs[0]) : std::vector<float>();
    const std::vector<float>& x = p.x_pairs ? image : inputs[0];
    p.x_pairs = false;
    ForRowBlocks(p.batch * p.out_channels, static_cast<double>(ConvFlops(p)) / 2,
                 [&](int64_t plane_begin, int64_t plane_end) {
                   ConvReference(p, x, inputs[1], plane_begin, plane_end, result.data());
                 });
    return result;
  }
  if (w.anchor == AnchorKind::kPool) {
    PoolReference(w.pool, inputs[0], 0, w.pool.batch * w.pool.channels, result.data());
    return result;
  }
  if (w.anchor == AnchorKind::kAttention) {
    const std::vector<double> exact =
        AttentionReference(w.attention, inputs[0], inputs[1], inputs[2],
                           w.attention.mask_groups > 0 ? &inputs[3] : nullptr);
    for (size_t flat = 0; flat < exact.size(); ++flat) {
      result[flat] = static_cast<float>(exact[flat]);
    }
    return result;
  }
  const int64_t rows = w.row.rows, cols = w.row.cols;
  for (int64_t row = 0; row < rows && w.anchor != AnchorKind::kNone; ++row) {
    const float* x = inputs[0].data() + row * cols;
    double sum = 0.0, max_value = -INFINITY;
    for (int64_t col = 0; col < cols; ++col) {
      sum += x[col];
      max_value = std::max<double>(max_value, x[col]);
    }
    const double mean = sum / static_cast<double>(cols);
    if (w.anchor == AnchorKind::kReduceMean) {
      result[row] = static_cast<float>(mean);
    } else if (w.anchor == AnchorKind::kSoftmax) {
      double exp_sum = 0.0;
      for (int64_t col = 0; col < cols; ++col) exp_sum += std::exp(x[col] - max_value);
      for (int64_t col = 0; col < cols; ++col) {
        result[row * cols + col] = static_cast<float>(std::exp(x[col] - max_value) / exp_sum);
      }
    } else if (w.anchor == AnchorKind::kLayerNorm) {
      double square_sum = 0.0;
      for (int64_t col = 0; col < cols; ++col) square_sum += (x[col] - mean) * (x[col] - mean);
      const double rstd = 1.0 / std::sqrt(square_sum / static_cast<double>(cols) + w.row.epsilon);
      for (int64_t col = 0; col < cols; ++col) {
        result[row * cols + col] =
            static_cast<float>((x[col] - mean) * rstd * inputs[1][col] + inputs[2][col]);
      }
    }
  }
  return result;
}

/// Anchor values of a bf16 or integer matmul (see workload.h), exact: products and sums in
/// double (bf16) or int64 wrapped to int32 (integer), before any output rounding. `a_zero` is
/// the run-time zero point of A (anchor input 2) when the workload reads one.
std::vector<double> LowPrecisionMatMul(const Workload& w, const std::vector<double>& a,
                                       const std::vector<double>& b, double a_zero = 0.0) {
  const MatMulParams& p = w.matmul;
  const int64_t a_zero_point =
      p.a_zero_point_input ? static_cast<int64_t>(a_zero) : int64_t{p.a_zero_point};
  const bool integer = IsIntegerDType(w.inputs[0].dtype);
  std::vector<double> result(p.batch * p.m * p.n, 0.0);
  std::vector<int64_t> a_int(integer ? a.size() : 0), b_int(integer ? b.size() : 0);
  for (size_t idx = 0; idx < a_int.size(); ++idx) {
    a_int[idx] = static_cast<int64_t>(a[idx]) - a_zero_point;
  }
  for (size_t idx = 0; idx < b_int.size(); ++idx) {
    b_int[idx] = static_cast<int64_t>(b[idx]) - p.b_zero_point;
  }
  ForRowBlocks(p.batch * p.m, static_cast<double>(p.batch) * p.m * p.n * p.k,
               [&](int64_t row_begin, int64_t row_end) {
    std::vector<double> sums(p.n);
    std::vector<int64_t> int_sums(integer ? p.n : 0);
    for (int64_t row = row_begin; row < row_end; ++row) {
      const int64_t batch = row / p.m, i = row % p.m;
      const int64_t a_base = p.a_batched ? batch * p.m * p.k : 0;
      const int64_t b_base = p.b_batched ? batch * p.k * p.n : 0;
      std::fill(sums.begin(), sums.end(), 0.0);
      std::fill(int_sums.begin(), int_sums.end(), 0);
      for (int64_t k = 0; k < p.k; ++k) {
        const int64_t a_idx = a_base + (p.trans_a ? k * p.m + i : i * p.k + k);
        for (int64_t j = 0; j < p.n; ++j) {
          const int64_t b_idx = b_base + (p.trans_b ? j * p.k + k : k * p.n + j);
          if (integer) {
            int_sums[j] += a_int[a_idx] * b_int[b_idx];
          } else {
            sums[j] += a[a_idx] * b[b_idx];
          }
        }
      }
      for (int64_t j = 0; j < p.n; ++j) {
        // int32 wrap-around, as the int32 accumulation of ONNX MatMulInteger kernels.
        result[row * p.n + j] =
            integer ? static_cast<int32_t>(static_cast<uint32_t>(int_sums[j])) : sums[j];
      }
    }
  });
  return result;
}

bool IsFloatingDType(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kBF16 || dtype == DType::kF16;
}

/// `values` rounded to a 16-bit float `dtype` (unchanged for other dtypes).
void RoundToDType(DType dtype, std::vector<float>& values) {
  if (dtype == DType::kBF16) {
    for (float& value : values) value = BF16ToFloat(FloatToBF16(value));
  } else if (dtype == DType::kF16) {
    for (float& value : values) value = F16ToFloat(FloatToF16(value));
  }
}

}  // namespace

uint16_t FloatToBF16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if (std::isnan(value)) return static_cast<uint16_t>((bits >> 16) | 0x40);
  const uint32_t rounding = 0x7FFF + ((bits >> 16) & 1);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

float BF16ToFloat(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof(value));
  return value;
}

uint16_t FloatToF16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) {  // NaN: keep the top payload bits, force quiet
    return static_cast<uint16_t>(sign | 0x7E00u | ((magnitude >> 13) & 0x3FFu));
  }
  // 65520 and above (including infinity) round to infinity under nearest-even.
  if (magnitude >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);
  if (magnitude < 0x38800000u) {  // below 2^-14: a subnormal half (or zero), in units of 2^-24
    float scaled;
    std::memcpy(&scaled, &magnitude, sizeof(scaled));
    scaled *= 16777216.0f;  // exact: a power of two
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(scaled)));
  }
  uint32_t half = (magnitude >> 13) - (112u << 10);  // rebias the exponent from 127 to 15
  const uint32_t remainder = magnitude & 0x1FFFu;
  if (remainder > 0x1000u || (remainder == 0x1000u && (half & 1u))) ++half;
  return static_cast<uint16_t>(sign | half);
}

float F16ToFloat(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1Fu, mantissa = bits & 0x3FFu;
  uint32_t wide;
  if (exponent == 0) {
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;  // 2^-24
    std::memcpy(&wide, &magnitude, sizeof(wide));
    wide |= sign;
  } else if (exponent == 0x1F) {
    wide = sign | 0x7F800000u | (mantissa << 13);
  } else {
    wide = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  }
  float value;
  std::memcpy(&value, &wide, sizeof(value));
  return value;
}

TypedBuffer::TypedBuffer(DType dtype, int64_t num_elements)
    : dtype_(dtype),
      num_elements_(num_elements),
      storage_((num_elements * DTypeSize(dtype) + 63) / 64, Line{}) {
  GTCO_CHECK(dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16 ||
                 dtype == DType::kU8 || dtype == DType::kI8 || dtype == DType::kI32,
             "TypedBuffer does not support dtype ", DTypeName(dtype));
}

TypedBuffer TypedBuffer::FromValues(DType dtype, const std::vector<float>& values) {
  TypedBuffer buffer(dtype, static_cast<int64_t>(values.size()));
  for (size_t idx = 0; idx < values.size(); ++idx) buffer.Set(idx, values[idx]);
  return buffer;
}

double TypedBuffer::Get(int64_t index) const {
  GTCO_CHECK(index >= 0 && index < num_elements_, "typed buffer index out of range");
  const auto* bytes = reinterpret_cast<const unsigned char*>(storage_.data());
  switch (dtype_) {
    case DType::kF32: {
      float value;
      std::memcpy(&value, bytes + 4 * index, 4);
      return value;
    }
    case DType::kBF16: {
      uint16_t bits;
      std::memcpy(&bits, bytes + 2 * index, 2);
      return BF16ToFloat(bits);
    }
    case DType::kF16: {
      uint16_t bits;
      std::memcpy(&bits, bytes + 2 * index, 2);
      return F16ToFloat(bits);
    }
    case DType::kU8:
      return bytes[index];
    case DType::kI8:
      return static_cast<int8_t>(bytes[index]);
    case DType::kI32: {
      int32_t value;
      std::memcpy(&value, bytes + 4 * index, 4);
      return value;
    }
    default:
      return 0.0;
  }
}

void TypedBuffer::Set(int64_t index, double value) {
  GTCO_CHECK(index >= 0 && index < num_elements_, "typed buffer index out of range");
  auto* bytes = reinterpret_cast<unsigned char*>(storage_.data());
  // Integers: nearest integer, wrapped to the width (two's complement).
  const auto wrapped = [value]() -> uint64_t {
    if (!std::isfinite(value)) return 0;
    return static_cast<uint64_t>(static_cast<int64_t>(std::nearbyint(value)));
  };
  switch (dtype_) {
    case DType::kF32: {
      const float narrow = static_cast<float>(value);
      std::memcpy(bytes + 4 * index, &narrow, 4);
      break;
    }
    case DType::kBF16: {
      const uint16_t bits = FloatToBF16(static_cast<float>(value));
      std::memcpy(bytes + 2 * index, &bits, 2);
      break;
    }
    case DType::kF16: {
      const uint16_t bits = FloatToF16(static_cast<float>(value));
      std::memcpy(bytes + 2 * index, &bits, 2);
      break;
    }
    case DType::kU8:
    case DType::kI8:
      bytes[index] = static_cast<unsigned char>(wrapped() & 0xFF);
      break;
    case DType::kI32: {
      const uint32_t bits = static_cast<uint32_t>(wrapped());
      std::memcpy(bytes + 4 * index, &bits, 4);
      break;
    }
    default:
      break;
  }
}

std::vector<float> TypedBuffer::ToFloats() const {
  std::vector<float> values(num_elements_);
  for (int64_t idx = 0; idx < num_elements_; ++idx) values[idx] = static_cast<float>(Get(idx));
  return values;
}

std::vector<TypedBuffer> RandomTypedInputs(const Workload& w, uint64_t seed) {
  std::vector<std::vector<float>> values = RandomInputs(w, seed);
  std::vector<TypedBuffer> inputs;
  for (size_t input_idx = 0; input_idx < values.size(); ++input_idx) {
    inputs.push_back(TypedBuffer::FromValues(w.inputs[input_idx].dtype, values[input_idx]));
  }
  return inputs;
}

TypedBuffer ComputeTypedReference(const Workload& w, const std::vector<TypedBuffer>& inputs) {
  GTCO_CHECK(inputs.size() == w.inputs.size(), "reference: ", inputs.size(), " inputs for ",
             w.inputs.size());
  TypedBuffer output(w.output.dtype, ShapeElements(w.output.shape));
  if (IsLowPrecisionMatMul(w) && w.epilogue.empty()) {
    const int anchor_inputs = w.matmul.a_zero_point_input ? 3 : 2;
    std::vector<std::vector<double>> values(anchor_inputs);
    for (int side = 0; side < anchor_inputs; ++side) {
      GTCO_CHECK(inputs[side].size() == ShapeElements(w.inputs[side].shape), "reference: input ",
                 side, " has the wrong size");
      values[side].resize(inputs[side].size());
      for (int64_t idx = 0; idx < inputs[side].size(); ++idx) {
        values[side][idx] = inputs[side].Get(idx);
      }
    }
    const std::vector<double> exact =
        LowPrecisionMatMul(w, values[0], values[1], anchor_inputs > 2 ? values[2].at(0) : 0.0);
    for (size_t flat = 0; flat < exact.size(); ++flat) output.Set(flat, exact[flat]);
    return output;
  }
  std::vector<std::vector<float>> float_inputs;
  for (const TypedBuffer& input : inputs) float_inputs.push_back(input.ToFloats());
  const std::vector<float> values = ComputeReference(w, float_inputs);
  for (size_t flat = 0; flat < values.size(); ++flat) output.Set(flat, values[flat]);
  return output;
}

absl::Status CompareTypedOutputs(const TypedBuffer& expected, const TypedBuffer& actual,
                                 double rtol, double atol) {
  if (expected.dtype() != actual.dtype()) {
    return absl::FailedPreconditionError(absl::StrCat("output is ", DTypeName(actual.dtype()),
                                                      ", expected ", DTypeName(expected.dtype())));
  }
  if (IsFloatingDType(expected.dtype())) {
    return CompareOutputs(expected.ToFloats(), actual.ToFloats(), rtol, atol);
  }
  if (expected.size() != actual.size()) {
    return absl::FailedPreconditionError(
        absl::StrCat("output has ", actual.size(), " elements, expected ", expected.size()));
  }
  int64_t mismatches = 0, first_bad = -1;
  for (int64_t idx = 0; idx < expected.size(); ++idx) {
    if (expected.Get(idx) != actual.Get(idx)) {
      if (first_bad < 0) first_bad = idx;
      ++mismatches;
    }
  }
  if (mismatches == 0) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("output mismatch at index ", first_bad, ": expected ", expected.Get(first_bad),
                   ", got ", actual.Get(first_bad), " (", mismatches, " of ", expected.size(),
                   " elements differ; integer outputs must match exactly)"));
}

std::vector<std::vector<float>> RandomInputs(const Workload& w, uint64_t seed) {
  std::vector<std::vector<float>> inputs;
  for (size_t input_idx = 0; input_idx < w.inputs.size(); ++input_idx) {
    uint64_t state = seed ^ (0xA0761D6478BD642FULL * (input_idx + 1));
    const bool is_scale = w.anchor == AnchorKind::kLayerNorm && input_idx == 1;
    const float lo = is_scale ? 0.5f : -1.0f, hi = is_scale ? 1.5f : 1.0f;
    std::vector<float> values(ShapeElements(w.inputs[input_idx].shape));
    const DType dtype = w.inputs[input_idx].dtype;
    if (dtype == DType::kU8 || dtype == DType::kI8) {
      const int offset = dtype == DType::kU8 ? 0 : -128;
      for (float& value : values) value = static_cast<float>(NextRandom(&state) % 256) + offset;
    } else {
      for (float& value : values) value = UniformFloat(&state, lo, hi);
      RoundToDType(dtype, values);
    }
    if (w.anchor == AnchorKind::kConv && w.conv.x_pairs && input_idx == 0) {
      // The pair layout's padding and tails hold zeros (the kernels read them as the padding).
      values = ConvImageToPairs(w.conv, ConvPairsToImage(w.conv, values));
    }
    inputs.push_back(std::move(values));
  }
  return inputs;
}

std::vector<float> ComputeReference(const Workload& w,
                                    const std::vector<std::vector<float>>& inputs) {
  GTCO_CHECK(inputs.size() == w.inputs.size(), "reference: ", inputs.size(), " inputs for ",
             w.inputs.size());
  for (size_t input_idx = 0; input_idx < inputs.size(); ++input_idx) {
    GTCO_CHECK(
        static_cast<int64_t>(inputs[input_idx].size()) == ShapeElements(w.inputs[input_idx].shape),
        "reference: input ", input_idx, " has the wrong size");
  }
  if (IsLowPrecisionMatMul(w)) {
    std::vector<std::vector<double>> values;
    for (const std::vector<float>& input : inputs) values.emplace_back(input.begin(), input.end());
    const std::vector<double> exact = LowPrecisionMatMul(
        w, values[0], values[1], w.matmul.a_zero_point_input ? values.at(2).at(0) : 0.0);
    TypedBuffer stored(w.output.dtype, static_cast<int64_t>(exact.size()));
    for (size_t flat = 0; flat < exact.size(); ++flat) stored.Set(flat, exact[flat]);
    std::vector<float> output = stored.ToFloats();
    for (int64_t flat = 0; flat < static_cast<int64_t>(output.size()) && !w.epilogue.empty();
         ++flat) {
      output[flat] = ApplyEpilogue(w, inputs, output[flat], flat);
    }
    return output;
  }
  std::vector<float> output = AnchorValues(w, inputs);
  for (int64_t flat = 0; flat < static_cast<int64_t>(output.size()) && !w.epilogue.empty();
       ++flat) {
    output[flat] = ApplyEpilogue(w, inputs, output[flat], flat);
  }
  RoundToDType(w.output.dtype, output);  // attention may produce f16/bf16
  return output;
}

absl::Status CompareOutputs(const std::vector<float>& expected, const std::vector<float>& actual,
                            double rtol, double atol) {
  if (expected.size() != actual.size()) {
    return absl::FailedPreconditionError(
        absl::StrCat("output has ", actual.size(), " elements, expected ", expected.size()));
  }
  int64_t mismatches = 0, first_bad = -1;
  for (size_t idx = 0; idx < expected.size(); ++idx) {
    const double e = expected[idx], a = actual[idx];
    bool match;
    if (std::isnan(e) || std::isnan(a)) {
      match = std::isnan(e) && std::isnan(a);
    } else if (std::isinf(e) || std::isinf(a)) {
      match = e == a;
    } else {
      match = std::fabs(a - e) <= atol + rtol * std::fabs(e);
    }
    if (!match) {
      if (first_bad < 0) first_bad = static_cast<int64_t>(idx);
      ++mismatches;
    }
  }
  if (mismatches == 0) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("output mismatch at index ", first_bad, ": expected ", expected[first_bad],
                   ", got ", actual[first_bad], " (", mismatches, " of ", expected.size(),
                   " elements differ; rtol ", rtol, ", atol ", atol, ")"));
}

void DefaultTolerance(const Workload& w, double* rtol, double* atol) {
  if (IsIntegerDType(w.output.dtype)) {
    *rtol = 0.0;
    *atol = 0.0;
    return;
  }
  double r = 1e-4, a = 1e-5;
  if (w.anchor == AnchorKind::kMatMul) {
    const double scale = std::sqrt(static_cast<double>(std::max<int64_t>(w.matmul.k, 1)));
    r = 2e-5 * scale + 1e-5;
    a = 2e-5 * scale;
  } else if (w.anchor == AnchorKind::kConv) {
    const MatMulParams g = ConvGemmView(w.conv);
    const double scale = std::sqrt(static_cast<double>(std::max<int64_t>(g.k, 1)));
    r = 2e-5 * scale + 1e-5;
    a = 2e-5 * scale;
  } else if (w.anchor == AnchorKind::kLayerNorm) {
    a = 1e-4;
  } else if (w.anchor == AnchorKind::kReduceMean) {
    a = 1e-5 + 1e-7 * std::sqrt(static_cast<double>(std::max<int64_t>(w.row.cols, 1)));
  } else if (w.anchor == AnchorKind::kAttention) {
    // The output is a convex combination of V rows: errors in the scores (fp32 dot products,
    // exp approximations) move it by a fraction of max|V| <= 1 for the random inputs.
    const int64_t length = std::max(w.attention.seq_k, w.attention.head_dim);
    const double scale = std::sqrt(static_cast<double>(std::max<int64_t>(length, 1)));
    r = 1e-4;
    a = 1e-5 + 2e-6 * scale;
    const DType in = w.inputs.empty() ? DType::kF32 : w.inputs[0].dtype;
    if (in == DType::kBF16) a += 1.0 / 256;   // softmax weights rounded to bf16
    if (in == DType::kF16) a += 1.0 / 2048;   // softmax weights rounded to f16
  }
  for (const EwInstr& instr : w.epilogue) {
    if (instr.op == EwOp::kExp || instr.op == EwOp::kPow || instr.op == EwOp::kDiv) {
      r *= 4;
      a *= 4;
      break;
    }
  }
  if (w.output.dtype == DType::kBF16) r += 1.0 / 128;   // one bf16 rounding step
  if (w.output.dtype == DType::kF16) r += 1.0 / 1024;   // one f16 rounding step
  *rtol = r;
  *atol = a;
}

}  // namespace gtco::ir
