// Host copies of a GPU kernel's tensors in the dtype storage the kernel reads and writes (the
// CUDA kernel ABI of common/codegen/cuda/cuda_codegen.h): f32 as float, f16 and bf16 as 16-bit
// patterns, u8/i8 as bytes, i32 as int32, dense and little-endian. ir::TypedBuffer stores the
// same layout but has no f16, so the f16 conversions live here.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/ir/reference.h"
#include "common/ir/workload.h"

namespace gtco::worker {

/// True for the dtypes a HostTensor stores: f32, f16, bf16, u8, i8, i32.
bool IsKernelDType(ir::DType dtype);

/// One tensor's elements in dtype storage.
class HostTensor {
 public:
  HostTensor() = default;
  /// `values` stored as `dtype`: f16 and bf16 round to nearest even, integers round to nearest
  /// and wrap to the dtype's width. INVALID_ARGUMENT for a dtype a kernel cannot take (i64).
  static absl::StatusOr<HostTensor> FromValues(ir::DType dtype, const std::vector<float>& values);
  /// `num_elements` elements that no correct kernel leaves in an output: NaN for floating
  /// dtypes (all bits set), -1234567 for i32, 0xA5 bytes for u8/i8.
  static absl::StatusOr<HostTensor> Sentinel(ir::DType dtype, int64_t num_elements);
  /// A copy of `buffer` (same storage layout).
  static HostTensor FromTypedBuffer(const ir::TypedBuffer& buffer);
  /// Zero elements of `dtype`, to copy a kernel's output into.
  static absl::StatusOr<HostTensor> Zeros(ir::DType dtype, int64_t num_elements);

  ir::DType dtype() const { return dtype_; }
  int64_t size() const { return num_elements_; }
  size_t bytes() const { return bytes_.size(); }
  void* data() { return bytes_.data(); }
  const void* data() const { return bytes_.data(); }

  /// Element `index` (in range) as double; exact for every stored dtype.
  double Get(int64_t index) const;
  /// Every element as float (i32 beyond 2^24 in magnitude rounds).
  std::vector<float> ToFloats() const;

 private:
  HostTensor(ir::DType dtype, int64_t num_elements);
  void Set(int64_t index, double value);

  ir::DType dtype_ = ir::DType::kF32;
  int64_t num_elements_ = 0;
  std::vector<unsigned char> bytes_;
};

/// `values` rounded to what `dtype` can hold (f16, bf16: nearest even; others unchanged), so
/// that a reference computed from them sees exactly what the kernel reads.
void RoundToDType(ir::DType dtype, std::vector<float>* values);

/// OK when `actual` matches `expected`: same dtype and size; integers exactly; floating dtypes
/// within |a - e| <= atol + rtol * |e| (ir::CompareOutputs). FAILED_PRECONDITION naming the
/// first mismatch otherwise.
absl::Status CompareHostTensors(const HostTensor& expected, const HostTensor& actual, double rtol,
                                double atol);

}  // namespace gtco::worker
