// Reference evaluation of workloads: deterministic random inputs, a plain and obviously correct
// evaluator (double accumulation for reductions, exact integer matmuls), and tolerant output
// comparison. Every candidate program is checked against this before its time counts.
//
// Two views of the same data: the float API (one std::vector<float> per tensor, holding each
// element's value) and the typed API (TypedBuffer: each element in its dtype's storage, what a
// kernel reads and writes). For f32, f16, bf16, u8 and i8 tensors the views hold the same values;
// i32 outputs above 2^24 in magnitude are only exact in the typed view.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "common/ir/workload.h"

namespace gtco::ir {

/// Deterministic random inputs for `w` (one vector per input, in order): uniform in [-1, 1];
/// the layernorm scale (input 1) uniform in [0.5, 1.5]; bf16 and f16 inputs are those values
/// rounded to their dtype (nearest even); u8 inputs uniform integers in [0, 255], i8 in
/// [-128, 127]. Same (w, seed)
/// => same values on every platform (a fixed 64-bit generator, not std::uniform_real_distribution).
std::vector<std::vector<float>> RandomInputs(const Workload& w, uint64_t seed);

/// Plain evaluation of `w` on `inputs` (sizes must match the input shapes; a GTCO_CHECK guards
/// it). Reductions accumulate in double (integer matmuls in int64, wrapped to int32); the
/// epilogue is applied per element with EvalEwOp and numpy broadcasting of its extra inputs; a
/// bf16 or f16 output is rounded to its dtype. Attention computes scores, softmax and the
/// weighted sum in double. Returns the output values, row-major.
std::vector<float> ComputeReference(const Workload& w,
                                    const std::vector<std::vector<float>>& inputs);

/// OK when sizes agree and every element satisfies |a - e| <= atol + rtol * |e| (NaN matches
/// NaN, infinities must match exactly); otherwise FAILED_PRECONDITION naming the first
/// mismatching index, the expected and actual values, and the number of mismatches.
absl::Status CompareOutputs(const std::vector<float>& expected, const std::vector<float>& actual,
                            double rtol, double atol);

/// Tolerances suited to `w`: matmul grows with sqrt(k), attention with sqrt(max(seq_k,
/// head_dim)) and, for f16/bf16 inputs, by one rounding step of the input dtype (kernels may
/// round the softmax weights to it for Tensor Cores); transcendental epilogues loosen them;
/// integer outputs are exact (0, 0); bf16 and f16 outputs allow a rounding step of their dtype.
void DefaultTolerance(const Workload& w, double* rtol, double* atol);

// ---- typed buffers ----------------------------------------------------------------------------

/// bf16 bits of `value`, rounded to nearest even (NaN stays a quiet NaN).
uint16_t FloatToBF16(float value);
/// The f32 value of bf16 bits (exact).
float BF16ToFloat(uint16_t bits);
/// IEEE binary16 bits of `value`, rounded to nearest even (overflow to infinity, subnormals kept,
/// NaN stays a quiet NaN).
uint16_t FloatToF16(float value);
/// The f32 value of binary16 bits (exact).
float F16ToFloat(uint16_t bits);

/// One tensor's elements in its dtype's storage: f32 as float, f16/bf16 as uint16 bits, u8/i8 as
/// bytes, i32 as int32, little-endian and contiguous. Supports f32, f16, bf16, u8, i8, i32.
class TypedBuffer {
 public:
  TypedBuffer() = default;
  /// `num_elements` zero elements of `dtype`.
  TypedBuffer(DType dtype, int64_t num_elements);
  /// The values of `values` stored as `dtype` (f16 and bf16 round to nearest even; integers are
  /// rounded to nearest and wrapped to the dtype's width).
  static TypedBuffer FromValues(DType dtype, const std::vector<float>& values);

  DType dtype() const { return dtype_; }
  int64_t size() const { return num_elements_; }
  /// The storage, for kernel arguments (64-byte aligned).
  void* data() { return storage_.data(); }
  const void* data() const { return storage_.data(); }

  /// Element `index` as double (exact for every supported dtype).
  double Get(int64_t index) const;
  /// Stores `value` at `index` (converted as in FromValues).
  void Set(int64_t index, double value);
  /// Every element as float (i32 above 2^24 in magnitude rounds).
  std::vector<float> ToFloats() const;

 private:
  DType dtype_ = DType::kF32;
  int64_t num_elements_ = 0;
  /// Whole cache lines, so the data starts on a 64-byte boundary as the runtime's tensors do (an
  /// AMX tile row of 64 bytes split over two lines loads 2.5x slower).
  struct alignas(64) Line {
    unsigned char bytes[64];
  };
  std::vector<Line> storage_;
};

/// RandomInputs(w, seed) in typed storage (same values).
std::vector<TypedBuffer> RandomTypedInputs(const Workload& w, uint64_t seed);

/// ComputeReference on typed inputs; the output in w.output.dtype. Integer matmuls are exact.
TypedBuffer ComputeTypedReference(const Workload& w, const std::vector<TypedBuffer>& inputs);

/// CompareOutputs on typed buffers: integer dtypes must match exactly; floating ones use
/// (rtol, atol). FAILED_PRECONDITION when the dtypes or sizes differ or values mismatch.
absl::Status CompareTypedOutputs(const TypedBuffer& expected, const TypedBuffer& actual,
                                 double rtol, double atol);

}  // namespace gtco::ir
