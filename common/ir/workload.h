// Workload: the canonical compute definition of one fused subgraph (an anchor op plus the
// element-wise epilogue it absorbed). Its canonical text is both its serialization and the
// input of its key: same math + same shapes + same dtypes => same key, whatever the model.
//
// Semantics:
//  - All tensors are dense, row-major, contiguous. Compute is fp32 (dtype kF32) except for the
//    bf16 and integer matmuls described under kMatMul and the low-precision attentions described
//    under kAttention.
//  - Anchor kinds (canonical shapes):
//      kMatMul:     inputs A, B. out[b, i, j] = sum_k A[ab, i, k] * B[bb, k, j]  (shape [batch, M,
//      N])
//                   A is [batch|1, M, K] (or [.., K, M] if trans_a), B is [batch|1, K, N]
//                   (or [.., N, K] if trans_b); ab = a_batched ? b : 0, bb likewise.
//                   Element types (A, B -> out): f32, f32 -> f32; f16, f16 -> f32 or f16
//                   (like bf16 below; CUDA mappings only); bf16, bf16 -> f32 or bf16
//                   (products exact, accumulation in fp32, a bf16 output rounded to nearest
//                   even once at the end); integer (ONNX MatMulInteger): u8|i8, u8|i8 -> i32 with
//                   out = sum_k (A - a_zero_point) * (B - b_zero_point), exact with int32
//                   wrap-around; or u8|i8, u8|i8 -> f32, that i32 result converted to f32
//                   (nearest), then the epilogue (MatMulInteger -> Cast -> Mul(scale) ->
//                   Add(bias) of ONNX Runtime's dynamic quantization, in one kernel). With
//                   a_zero_point_input, A's zero point is read at run time from a third anchor
//                   input, a one-element tensor of A's dtype (DynamicQuantizeLinear computes it
//                   per run). Zero points are per-tensor and nonzero only for integer
//                   matmuls; epilogues only on f32 outputs.
//      kSoftmax:    input X [rows, cols]; out[r, c] = exp(X[r,c] - max_r) / sum_c exp(X[r,c] -
//      max_r). kLayerNorm:  inputs X [rows, cols], scale [cols], bias [cols];
//                   out[r, c] = (X[r,c] - mean_r) / sqrt(var_r + epsilon) * scale[c] + bias[c]
//                   with the biased variance.
//      kReduceMean: input X [rows, cols]; out[r, 0] = mean_c X[r, c]  (shape [rows, 1]).
//      kAttention:  inputs Q [batch, seq_q, head_dim], K [batch, seq_k, head_dim] (or
//                   [batch, head_dim, seq_k] if k_transposed), V [batch, seq_k, value_dim];
//                   s[b, i, j] = scale * sum_d Q[b, i, d] * K[b, j, d],
//                   out[b, i, c] = sum_j softmax_j(s[b, i, :]) * V[b, j, c]  (shape [batch,
//                   seq_q, value_dim]; batch counts batch * heads). Q, K and V share one dtype,
//                   f32, f16 or bf16, and compute accumulates in fp32; the output is f32 or the
//                   inputs' dtype (rounded to nearest even once at the end); epilogues only on
//                   f32 outputs. With mask_groups > 0 a fourth input, an f32 additive mask
//                   [mask_groups, seq_k], is added to the scores. See attention.h.
//      kConv:       inputs X [N, C, H, W], W [K, C/groups, R, S]; 2-D convolution as ONNX Conv
//                   (cross-correlation, zero padding): out[n, k, oh, ow] = sum_{c, r, s}
//                   X[n, g*C/groups + c, oh*stride_h - pad_top + r*dilation_h,
//                     ow*stride_w - pad_left + s*dilation_w] * W[k, c, r, s]
//                   with g = k / (K/groups) and reads outside the image zero (shape [N, K, OH,
//                   OW], OH = (H + pad_top + pad_bottom - dilation_h*(R-1) - 1) / stride_h + 1,
//                   OW likewise). f32, or with ConvParams::x_pairs bf16 X and W (products
//                   exact, sums in f32) and X stored in the padded pair layout; a bias is an
//                   epilogue add of a [K, 1, 1] input. See conv.h.
//      kPool:       input X [N, C, H, W]; ONNX MaxPool / AveragePool over R x S windows (strides,
//                   pads, dilations, ceil_mode): out[n, c, oh, ow] = max (or mean) of the taps
//                   X[n, c, oh*stride_h - pad_top + r*dilation_h, ...] inside the image; a mean
//                   divides by the taps inside the image, or with count_include_pad by those
//                   inside the padded image. Shape [N, C, OH, OW]. See pool.h.
//      kNone:       no anchor; the epilogue alone computes the output from extra inputs.
//  - The epilogue is evaluated per output element in instruction order; operand kAcc is the
//    anchor's value at that element; kInput k reads extra input k (index into `inputs`, counting
//    from `num_anchor_inputs`) broadcast to the output shape by numpy rules (right-aligned,
//    size-1 dims broadcast); kConst is an fp32 immediate; kValue j is instruction j's result.
//    The result is the last instruction's value (the anchor value if there is none).
//  - Floating point follows IEEE fp32; the code generator may contract a*b+c into an FMA and
//    reassociate reductions, so results are compared with a tolerance (see reference.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gtco::ir {

/// Element types. kU8 (unsigned 8-bit, ONNX uint8) comes last so existing values keep their
/// numbers.
enum class DType { kF32, kF16, kBF16, kI8, kI32, kI64, kU8 };

/// "f32", "f16", ... ; ParseDType accepts the same spellings.
const char* DTypeName(DType dtype);
absl::StatusOr<DType> ParseDType(const std::string& name);
/// Bytes of one element of `dtype` (f32 4, bf16 2, u8 1, ...).
int64_t DTypeSize(DType dtype);

/// Anchor ops (see the semantics above). New kinds are appended so that values keep their numbers.
enum class AnchorKind {
  kNone, kMatMul, kSoftmax, kLayerNorm, kReduceMean, kAttention, kConv, kPool
};
/// "none", "matmul", "softmax", "layernorm", "reduce_mean", "attention", "conv", "pool".
const char* AnchorKindName(AnchorKind kind);

/// Element-wise operations of epilogues. Unary ops take one argument, binary ops two.
enum class EwOp {
  kAdd, kSub, kMul, kDiv, kPow, kMax, kMin,                // binary
  kRelu, kSigmoid, kTanh, kErf, kSqrt, kNeg, kExp, kCopy   // unary
};
const char* EwOpName(EwOp op);
int EwOpArity(EwOp op);
/// The scalar semantics of `op` (b ignored for unary ops); the reference and tests use this.
float EvalEwOp(EwOp op, float a, float b);

struct Operand {
  enum class Kind { kAcc, kInput, kConst, kValue };
  Kind kind = Kind::kAcc;
  int index = 0;       ///< input index (kInput, into Workload::inputs) or instruction (kValue)
  float value = 0.0f;  ///< immediate (kConst)
};

struct EwInstr {
  EwOp op = EwOp::kCopy;
  std::vector<Operand> args;
};

struct TensorDesc {
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  int64_t NumElements() const;
};

struct MatMulParams {
  int64_t batch = 1, m = 1, n = 1, k = 1;
  bool a_batched = false, b_batched = false;
  bool trans_a = false, trans_b = false;
  /// Per-tensor zero points of integer matmuls (ONNX MatMulInteger); 0 for float matmuls. In
  /// the range of the matching input's dtype.
  int32_t a_zero_point = 0, b_zero_point = 0;
  /// Integer matmuls: A's zero point is anchor input 2 (one element of A's dtype), read at run
  /// time; a_zero_point is then 0.
  bool a_zero_point_input = false;
};

struct RowParams {
  int64_t rows = 1, cols = 1;
  float epsilon = 1e-5f;  ///< layernorm only
};

/// Fused scaled-dot-product attention (kAttention): softmax(scale * Q K^T) V per batch entry.
struct AttentionParams {
  int64_t batch = 1;      ///< batch * heads: independent attention problems
  int64_t seq_q = 1, seq_k = 1;
  int64_t head_dim = 1;   ///< contraction length of Q K^T
  int64_t value_dim = 1;  ///< columns of V and of the output
  float scale = 1.0f;     ///< applied to the scores before the softmax; finite
  /// K is stored [batch, head_dim, seq_k] (as the B operand of torch's q @ k.transpose(-2, -1))
  /// instead of [batch, seq_k, head_dim].
  bool k_transposed = false;
  /// 0: no mask. Else a fourth anchor input, the additive mask M [mask_groups, seq_k] (BERT's
  /// padding mask): s[b, i, j] += M[b / (batch / mask_groups), j] before the softmax, the same
  /// for every query row; mask_groups divides batch.
  int64_t mask_groups = 0;
};

/// 2-D convolution (kConv), ONNX Conv semantics; see the anchor table above.
struct ConvParams {
  int64_t batch = 1;                      ///< N
  int64_t in_channels = 1;                ///< C
  int64_t in_h = 1, in_w = 1;             ///< H, W
  int64_t out_channels = 1;               ///< K
  int64_t kernel_h = 1, kernel_w = 1;     ///< R, S
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t groups = 1;                     ///< divides C and K
  /// X is bf16 in the zero-padded pair layout (ConvPairIndex in conv.h: [N, C/2 + tail, plane,
  /// 2], each pair of channels interleaved, each plane the padded image, zero planes after each
  /// image's), W bf16
  /// [K, C, R, S], the output f32: what the AMX conv reads with tiles in place (no gather).
  /// Only with unit dilations, one group and an even C; a strided conv's planes hold the padded
  /// image's stride phases (ConvPairPhaseH in conv.h), so each tap reads one phase in place.
  bool x_pairs = false;
};

/// 2-D pooling (kPool), ONNX MaxPool / AveragePool semantics; see the anchor table above.
struct PoolParams {
  bool max = true;  ///< MaxPool (true) or AveragePool
  int64_t batch = 1, channels = 1, in_h = 1, in_w = 1;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t dilation_h = 1, dilation_w = 1;
  bool ceil_mode = false;
  bool count_include_pad = false;  ///< AveragePool only
};

struct Workload {
  AnchorKind anchor = AnchorKind::kNone;
  MatMulParams matmul;        ///< valid when anchor == kMatMul
  RowParams row;              ///< valid for kSoftmax, kLayerNorm, kReduceMean
  AttentionParams attention;  ///< valid when anchor == kAttention
  ConvParams conv;            ///< valid when anchor == kConv
  PoolParams pool;            ///< valid when anchor == kPool
  /// Anchor inputs first (A,B[,a_zero_point] | X | X,scale,bias | X | Q,K,V[,mask] | X,W | X |
  /// none), then the epilogue's extra inputs.
  std::vector<TensorDesc> inputs;
  int num_anchor_inputs = 0;
  std::vector<EwInstr> epilogue;
  TensorDesc output;

  /// Canonical, parseable text; floats are written exactly (hex). Stable across releases.
  std::string CanonicalString() const;
  /// "<anchor>-<32 hex>", the hash of CanonicalString().
  std::string Key() const;
  /// Human summary, e.g. "matmul 197x2304x768 +add+erf+mul", "attention 12x197x197x64
  /// scale=0.125" (batch x seq_q x seq_k x head_dim).
  std::string Description() const;
  /// Floating-point operations of one evaluation (anchor + epilogue).
  int64_t Flops() const;
  /// Bytes read and written once each (a lower bound on memory traffic).
  int64_t MinBytes() const;
  /// Checks internal consistency (shapes, operand indices) and sizes (at most 2^40 elements per
  /// tensor, 2^16 inputs and epilogue instructions, so that Flops() and MinBytes() fit in
  /// int64); errors are INVALID_ARGUMENT.
  absl::Status Validate() const;
};

/// True for u8, i8, i32 and i64.
bool IsIntegerDType(DType dtype);
/// True for a matmul workload whose inputs are not f32 (bf16 or integer inputs).
bool IsLowPrecisionMatMul(const Workload& w);

/// Parses Workload::CanonicalString() output. INVALID_ARGUMENT on malformed text.
absl::StatusOr<Workload> ParseWorkload(const std::string& text);

}  // namespace gtco::ir
