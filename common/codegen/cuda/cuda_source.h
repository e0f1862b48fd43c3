// Building blocks shared by the CUDA C generators: the prelude of device helpers, C type names
// of dtypes, the kernel parameter list, and the element-wise epilogue as CUDA C.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "common/ir/workload.h"

namespace gtco::codegen::cuda {

/// Device helpers every generated kernel may use (no #include needed): gtco_bf16_to_f32,
/// gtco_f32_to_bf16 (round to nearest even), gtco_f16_to_f32, gtco_f32_to_f16, gtco_load_f32
/// overloads, and fast math wrappers. Prepended once per kernel source.
const std::string& Prelude();

/// Storage type of `dtype` in kernel parameters: "float", "unsigned short" (f16, bf16),
/// "unsigned char" (u8), "signed char" (i8), "int" (i32), "long long" (i64).
const char* StorageType(ir::DType dtype);

/// An expression reading element `index` of parameter `pointer` (of `dtype`) as float.
std::string LoadAsFloat(ir::DType dtype, const std::string& pointer, const std::string& index);
/// A statement storing float expression `value` at element `index` of `pointer` (of `dtype`).
std::string StoreFromFloat(ir::DType dtype, const std::string& pointer, const std::string& index,
                           const std::string& value);

/// `extern "C" __global__ void __launch_bounds__(threads) entry(const T0* __restrict__ in0, ...,
/// OutT* __restrict__ out)` for `w` (parameters named in0.. and out), without the body.
std::string KernelSignature(const ir::Workload& w, const std::string& entry, int threads);

/// Emits the epilogue of `w` at one output element as CUDA C statements that read float `acc`
/// (the anchor's value) and leave the result in a new float variable named `result`. The element
/// is (row, col): `col` indexes the output's last dimension, `row` the leading dimensions
/// flattened; both are expressions of integer type. Extra inputs are read from parameters in<k>
/// with numpy broadcasting. INVALID_ARGUMENT when the epilogue is malformed.
absl::StatusOr<std::string> EmitEpilogue(const ir::Workload& w, const std::string& acc,
                                         const std::string& row, const std::string& col);

}  // namespace gtco::codegen::cuda
