// The data-movement steps of a CUDA artifact (transpose, slice, concat, expand, copy, gather,
// cast, equal, where) as four generic device kernels. The exporter compiles their source once
// per artifact with NVRTC for the artifact's architecture; the runtime fills the parameter
// blocks below from each step (same layout on host and device: they travel by value through
// cuLaunchKernel) and launches them on a grid-stride loop.
#pragma once

#include <cstdint>

namespace gtco::runtime {

/// The most dimensions a data-movement step may have on CUDA (the exporter refuses more).
inline constexpr int kCudaMaxRank = 8;

/// out[dst_base + sum(i[d] * dst_stride[d])] = in[src_base + sum(i[d] * src_stride[d])] for every
/// index i of `shape` (element offsets). Strides may be 0 (broadcast) or describe any
/// permutation; concat writes each input into its slab of the output with dst strides.
struct CudaCopyParams {
  int64_t shape[kCudaMaxRank];
  int64_t src_stride[kCudaMaxRank];
  int64_t dst_stride[kCudaMaxRank];
  int64_t src_base, dst_base;
  int64_t total;   ///< product of shape
  int32_t rank;
  int32_t elem_bytes;  ///< 1, 2, 4 or 8
};

/// out[(o * count + i) * inner + b] = data[(o * extent + index[i]) * inner + b] (bytes b of one
/// inner block). An index outside [-extent, extent) sets *error to 1 + its position (first
/// one wins) and copies nothing for it.
struct CudaGatherParams {
  int64_t outer, count, extent, inner_bytes;
  int32_t index_bytes;  ///< 8 (i64) or 4 (i32)
  int32_t pad;
};

/// Element types as the cast and broadcast kernels number them (ElemType's order).
enum CudaElemCode : int32_t {
  kCudaF32 = 0, kCudaBF16, kCudaF16, kCudaI8, kCudaU8, kCudaI32, kCudaI64, kCudaBool
};

/// out[i] = convert(in[i]) for i < count: to f32 from any element type, or f32 -> bf16.
struct CudaCastParams {
  int64_t count;
  int32_t from, to;  ///< CudaElemCode
};

/// expand (op 0): out = a; equal (op 1): out = (a == b) as bool; where (op 2): out = a ? b : c
/// (a bool). Inputs are read at their broadcast strides over `shape`.
struct CudaBroadcastParams {
  int64_t shape[kCudaMaxRank];
  int64_t stride[3][kCudaMaxRank];
  int64_t total;
  int32_t rank;
  int32_t op;
  int32_t value_bytes;  ///< bytes of a compared (equal) or selected (where, expand) element
  int32_t value_is_f32;  ///< equal: compare as floats (so -0 == +0), else bytewise
};

/// The kernels' names in the module.
inline constexpr char kCudaCopyKernel[] = "gtco_step_copy";
inline constexpr char kCudaGatherKernel[] = "gtco_step_gather";
inline constexpr char kCudaCastKernel[] = "gtco_step_cast";
inline constexpr char kCudaBroadcastKernel[] = "gtco_step_broadcast";

/// The CUDA C of the four kernels (self-contained: no #include).
const char* CudaStepKernelsSource();

}  // namespace gtco::runtime
