// Fused attention workloads (AnchorKind::kAttention, semantics in workload.h): canonical shapes,
// the params line of the canonical text, validation, cost and the reference evaluation.
// Workload's methods and reference.cc delegate here for attention; most code should use those.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/ir/workload.h"

namespace gtco::ir {

/// Canonical shapes of attention `p`: Q [batch, seq_q, head_dim]; K [batch, seq_k, head_dim], or
/// [batch, head_dim, seq_k] when k_transposed; V [batch, seq_k, value_dim]; the output
/// [batch, seq_q, value_dim].
std::vector<int64_t> AttentionQShape(const AttentionParams& p);
std::vector<int64_t> AttentionKShape(const AttentionParams& p);
std::vector<int64_t> AttentionVShape(const AttentionParams& p);
std::vector<int64_t> AttentionOutShape(const AttentionParams& p);
/// The mask's canonical shape [mask_groups, seq_k] (masked workloads only).
std::vector<int64_t> AttentionMaskShape(const AttentionParams& p);

/// A workload computing `p` on Q, K, V of `dtype` into an `out_dtype` output, without epilogue.
/// Valid when the sizes are positive, `scale` is finite and the dtypes are allowed.
Workload MakeAttentionWorkload(const AttentionParams& p, DType dtype = DType::kF32,
                               DType out_dtype = DType::kF32);

/// The params line of the canonical text (no newline), e.g. "attention batch=12 seq_q=197
/// seq_k=197 head_dim=64 value_dim=64 scale=0x1p-3 k_transposed=0"; the scale is exact (hex).
std::string AttentionParamsLine(const AttentionParams& p);
/// Parses an AttentionParamsLine() into `p` (fields in any order, missing ones keep their
/// value). INVALID_ARGUMENT on a malformed line or an unknown field.
absl::Status ParseAttentionParamsLine(const std::string& line, AttentionParams& p);

/// The Description() of an attention workload without its epilogue suffix, e.g.
/// "attention 12x197x197x64 scale=0.125", "attention 2x50x77x32 v=16 scale=0.176777 k_transposed
/// f16->f32".
std::string AttentionSummary(const Workload& w);

/// Anchor checks of an attention workload: positive sizes, a finite scale, the Q, K, V and
/// output shapes, and at most 2^62 flops. INVALID_ARGUMENT naming what is wrong.
absl::Status ValidateAttentionShapes(const Workload& w);
/// Element types: Q, K, V share f32, f16 or bf16; the output is f32 or that dtype; an epilogue
/// needs an f32 output. INVALID_ARGUMENT otherwise.
absl::Status ValidateAttentionDTypes(const Workload& w);

/// Anchor flops: 2 * batch * seq_q * seq_k * (head_dim + value_dim) for the two products plus
/// 5 * batch * seq_q * seq_k for scaling, max, exp, sum and normalization.
int64_t AttentionFlops(const AttentionParams& p);

/// Plain evaluation of `p` (scores, softmax and the weighted sum of V all in double) on Q, K, V
/// values (and the mask, for a masked `p`) in their canonical layouts; the output [batch, seq_q, value_dim] row-major, before any
/// epilogue or output rounding. GTCO_CHECKs the input sizes.
std::vector<double> AttentionReference(const AttentionParams& p, const std::vector<float>& q,
                                       const std::vector<float>& k, const std::vector<float>& v,
                                       const std::vector<float>* mask = nullptr);

}  // namespace gtco::ir
