// Mixed precision by model rewrite: an f32 ONNX model's MatMuls with constant weights turned into
// bf16 MatMuls, as a mixed-precision export writes them (Cast of the activation to bf16, the
// weights stored in bf16, a Cast of the product back to f32), so that the farm tunes and runs
// them on the bf16 kernels (vdpbf16ps / AMX) with the f32 bias and activation as their epilogue
// (FoldIntegerMatMulOutputs folds the Cast back). `gtco-client submit|query|export --precision
// bf16` applies it to the model before sending it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace gtco::onnx {

/// How a rewritten MatMul computes A x B on bf16 operands.
enum class Bf16Precision {
  /// One product of the operands rounded to bf16 (8 significant bits each), summed in f32.
  kBf16,
  /// Three products ("bf16x3"): each operand is split into a high part, its value rounded to
  /// bf16, and a low part, the rounding residual rounded to bf16 (together ~16 significant
  /// bits), and A x B ~ A_hi B_hi + A_lo B_hi + A_hi B_lo (the dropped A_lo B_lo and the parts'
  /// own residuals are ~2^-17 of each product), summed in f32. The three run as one bf16 MatMul
  /// over 3K: A' = [A_hi | A_lo | A_hi] (Cast, Cast back, Sub, Cast, Concat of the activation)
  /// times the weight stored as B' = [B_hi; B_hi; B_lo] ([3K, N]). On AMX hosts this runs the
  /// f32 model's weight MatMuls on the tile units at about f32 accuracy; elsewhere (no AMX) three
  /// bf16 products cost more than one f32 one.
  kBf16x3,
};

/// "bf16" or "bf16x3".
const char* Bf16PrecisionName(Bf16Precision precision);

struct Bf16Rewrite {
  std::string model_bytes;  ///< the rewritten model
  int64_t matmuls = 0;      ///< MatMuls (and Gemms) now computed in bf16
  int64_t weights = 0;      ///< weight initializers stored in bf16
  int64_t kept_f32 = 0;     ///< MatMuls and Gemms left in f32
  int64_t convs = 0;        ///< Convs now computed in bf16 (or bf16x3)
};

/// Rewrites every default-domain MatMul of `model_bytes` whose B is a 2-D f32 initializer (held
/// in the file, not external data, and not also a graph input, which would make it an
/// overridable default) and whose A is computed: B becomes a bf16 initializer (each
/// value rounded to the nearest bf16, ties to even), A goes through one Cast to bf16 (shared by
/// the MatMuls that read the same A), and the product through a Cast back to f32 under its old
/// name, so every other node reads what it read before. A Gemm without transA, alpha or beta
/// (a Linear of 2-D inputs) is rewritten the same way into MatMul (its transB weight stored
/// [K, N]), Cast, then Add of its C, save where ONNX's shape inference gives A fewer than 16 rows
/// (a classifier or pooler at batch 1) and others are rewritten: that MatMul stays f32, as it
/// streams its weight once and its rounding would be a large share of the output's error.
/// Attention's MatMuls of two computed tensors stay f32. Each Conv of a computed X and a 4-D f32
/// weight initializer W [K, C, R, S] with S <= 33, unit dilations,
/// strides of at most 4, one group, explicit pads and a bias that is an f32 initializer [K]
/// (possibly through Identity nodes) or none becomes a bf16 Conv: X through one Cast to bf16 per
/// image, pads and strides (which GTCO's passes turn into its pair layout, bf16x3_split.h), W
/// stored in bf16, the output cast back to f32 under its old name and the bias added after that
/// ([K, 1, 1]), a strided 1x1 without padding taken as the unit-stride conv of its subsampled image
/// as with bf16x3 below. An odd C (ResNet's 3-channel stem) gets one zero channel: X through a
/// Concat with a zero initializer [N, 1, H, W] (where shape inference gives X's shape; else the
/// Conv stays f32, as does a strided 1x1 of an odd C), W stored [K, C + 1, R, S], its last
/// channel zero. Grouped convolutions stay f32.
/// INVALID_ARGUMENT for bytes that are not an ONNX model; FAILED_PRECONDITION when no MatMul or
/// Gemm qualifies (nothing would change), the model's opset is below 13, or it has subgraphs (If,
/// Loop, Scan: their bodies may read the weights). With Bf16Precision::kBf16x3 the weight is stored
/// split ([3K, N], see there) and the activation goes through its split instead of one Cast (shared
/// the same way); the f32 MatMuls of few rows stay f32 as with bf16 (the f32 weight is also 2/3 of
/// the split's bytes). bf16x3 also rewrites each Conv that the AMX conv (a bf16 conv whose input is
/// the split in GTCO's pair layout) computes: a computed X, a 4-D f32 weight initializer W [K, C,
/// R, S] with C a multiple of 32, K of 16 and S <= 33, unit dilations, strides of at most 4, one
/// group, explicit pads, and a bias that is an f32 initializer [K] (possibly through Identity
/// nodes) or none. X goes through the split along its channels, X' = [X_hi, X_lo, X_hi] (one split
/// per X, pads and strides), W is stored [W_hi, W_hi, W_lo] along C ([K, 3C, R, S]), and Conv(X',
/// W') is cast back to f32 under its old name, the bias added after that ([K, 1, 1]). A strided 1x1
/// conv without padding (ResNet's downsampling shortcut) is taken as the unit-stride conv of its
/// subsampled image (a Slice with steps before the split); grouped convolutions and those of few
/// channels (ResNet's stem) stay f32. FAILED_PRECONDITION, with bf16x3, when no MatMul, Gemm or
/// Conv qualifies.
absl::StatusOr<Bf16Rewrite> RewriteMatMulsToBf16(std::string_view model_bytes,
                                                 Bf16Precision precision = Bf16Precision::kBf16);

}  // namespace gtco::onnx
