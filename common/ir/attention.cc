// Fused attention workloads: shapes, canonical params line, validation, flops and reference.
#include "common/ir/attention.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/ir/params_text.h"
#include "common/util/status.h"

namespace gtco::ir {
namespace {

using internal::LineError;
using internal::ShapeText;

/// Exact text of a float, as workload.cc writes immediates ("0x1p-3").
std::string HexFloat(float value) {
  char buffer[48];
  std::snprintf(buffer, sizeof(buffer), "%a", static_cast<double>(value));
  return buffer;
}

absl::Status ExpectShape(const TensorDesc& tensor, const std::vector<int64_t>& expected,
                         const char* what) {
  if (tensor.shape == expected) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("workload attention ", what, " has shape ",
                                                 ShapeText(tensor.shape), ", expected ",
                                                 ShapeText(expected)));
}

bool IsAttentionDType(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16;
}

/// Flops bound of a valid workload (so that Flops() fits in int64 with room to spare).
constexpr double kMaxFlops = 4611686018427387904.0;  // 2^62

}  // namespace

std::vector<int64_t> AttentionQShape(const AttentionParams& p) {
  return {p.batch, p.seq_q, p.head_dim};
}

std::vector<int64_t> AttentionKShape(const AttentionParams& p) {
  if (p.k_transposed) return {p.batch, p.head_dim, p.seq_k};
  return {p.batch, p.seq_k, p.head_dim};
}

std::vector<int64_t> AttentionVShape(const AttentionParams& p) {
  return {p.batch, p.seq_k, p.value_dim};
}

std::vector<int64_t> AttentionOutShape(const AttentionParams& p) {
  return {p.batch, p.seq_q, p.value_dim};
}

std::vector<int64_t> AttentionMaskShape(const AttentionParams& p) {
  return {p.mask_groups, p.seq_k};
}

Workload MakeAttentionWorkload(const AttentionParams& p, DType dtype, DType out_dtype) {
  Workload w;
  w.anchor = AnchorKind::kAttention;
  w.attention = p;
  w.inputs.resize(3);
  w.inputs[0].shape = AttentionQShape(p);
  w.inputs[1].shape = AttentionKShape(p);
  w.inputs[2].shape = AttentionVShape(p);
  for (TensorDesc& input : w.inputs) input.dtype = dtype;
  w.num_anchor_inputs = 3;
  if (p.mask_groups > 0) {
    w.inputs.push_back(TensorDesc{});
    w.inputs[3].shape = AttentionMaskShape(p);
    w.inputs[3].dtype = DType::kF32;
    w.num_anchor_inputs = 4;
  }
  w.output.dtype = out_dtype;
  w.output.shape = AttentionOutShape(p);
  return w;
}

std::string AttentionParamsLine(const AttentionParams& p) {
  return absl::StrCat("attention batch=", p.batch, " seq_q=", p.seq_q, " seq_k=", p.seq_k,
                      " head_dim=", p.head_dim, " value_dim=", p.value_dim,
                      " scale=", HexFloat(p.scale), " k_transposed=", p.k_transposed ? 1 : 0,
                      // Unmasked workloads keep the line (and key) they had before masks.
                      p.mask_groups > 0 ? absl::StrCat(" mask_groups=", p.mask_groups) : "");
}

absl::Status ParseAttentionParamsLine(const std::string& line, AttentionParams& p) {
  std::vector<std::string> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
  if (words.empty() || words[0] != "attention") return LineError("expected 'attention'", line);
  for (size_t word_idx = 1; word_idx < words.size(); ++word_idx) {
    std::vector<std::string> parts = absl::StrSplit(words[word_idx], absl::MaxSplits('=', 1));
    if (parts.size() != 2) return LineError("expected key=value", line);
    const std::string& key = parts[0];
    const std::string& text = parts[1];
    if (key == "scale") {
      char* end = nullptr;
      p.scale = std::strtof(text.c_str(), &end);
      if (text.empty() || end != text.c_str() + text.size()) {
        return LineError("bad float", line);
      }
      continue;
    }
    int64_t value = 0;
    if (!absl::SimpleAtoi(text, &value)) return LineError("bad integer", line);
    if (key == "batch") {
      p.batch = value;
    } else if (key == "seq_q") {
      p.seq_q = value;
    } else if (key == "seq_k") {
      p.seq_k = value;
    } else if (key == "head_dim") {
      p.head_dim = value;
    } else if (key == "value_dim") {
      p.value_dim = value;
    } else if (key == "k_transposed") {
      p.k_transposed = value != 0;
    } else if (key == "mask_groups") {
      p.mask_groups = value;
    } else {
      return LineError("unknown attention field", line);
    }
  }
  return absl::OkStatus();
}

std::string AttentionSummary(const Workload& w) {
  const AttentionParams& p = w.attention;
  std::string text =
      absl::StrCat("attention ", p.batch, "x", p.seq_q, "x", p.seq_k, "x", p.head_dim);
  if (p.value_dim != p.head_dim) absl::StrAppend(&text, " v=", p.value_dim);
  absl::StrAppend(&text, " scale=", p.scale);
  if (p.k_transposed) absl::StrAppend(&text, " k_transposed");
  if (p.mask_groups > 0) absl::StrAppend(&text, " masked");
  const DType in = w.inputs.empty() ? DType::kF32 : w.inputs[0].dtype;
  if (in != DType::kF32 || w.output.dtype != DType::kF32) {
    absl::StrAppend(&text, " ", DTypeName(in), "->", DTypeName(w.output.dtype));
  }
  return text;
}

absl::Status ValidateAttentionShapes(const Workload& w) {
  const AttentionParams& p = w.attention;
  if (p.batch <= 0 || p.seq_q <= 0 || p.seq_k <= 0 || p.head_dim <= 0 || p.value_dim <= 0) {
    return absl::InvalidArgumentError("workload attention sizes must be positive");
  }
  if (!std::isfinite(p.scale)) {
    return absl::InvalidArgumentError(
        absl::StrCat("workload attention scale ", p.scale, " is not finite"));
  }
  const double flops = 2.0 * static_cast<double>(p.batch) * static_cast<double>(p.seq_q) *
                       static_cast<double>(p.seq_k) *
                       (static_cast<double>(p.head_dim) + static_cast<double>(p.value_dim) + 3.0);
  if (flops > kMaxFlops) {
    return absl::InvalidArgumentError(absl::StrCat("workload attention ", p.batch, "x", p.seq_q,
                                                   "x", p.seq_k, "x", p.head_dim,
                                                   " needs more than 2^62 flops"));
  }
  GTCO_RETURN_IF_ERROR(ExpectShape(w.inputs[0], AttentionQShape(p), "input Q"));
  GTCO_RETURN_IF_ERROR(ExpectShape(w.inputs[1], AttentionKShape(p), "input K"));
  GTCO_RETURN_IF_ERROR(ExpectShape(w.inputs[2], AttentionVShape(p), "input V"));
  if (p.mask_groups < 0 || (p.mask_groups > 0 && p.batch % p.mask_groups != 0)) {
    return absl::InvalidArgumentError(absl::StrCat("workload attention mask_groups ",
                                                   p.mask_groups, " does not divide batch ",
                                                   p.batch));
  }
  if (p.mask_groups > 0) {
    if (w.inputs.size() < 4) return absl::InvalidArgumentError("workload attention: no mask input");
    GTCO_RETURN_IF_ERROR(ExpectShape(w.inputs[3], AttentionMaskShape(p), "mask"));
  }
  return ExpectShape(w.output, AttentionOutShape(p), "output");
}

absl::Status ValidateAttentionDTypes(const Workload& w) {
  const DType q = w.inputs[0].dtype, k = w.inputs[1].dtype, v = w.inputs[2].dtype;
  const DType out = w.output.dtype;
  auto error = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat("workload attention (", DTypeName(q), ",",
                                                   DTypeName(k), ",", DTypeName(v), " -> ",
                                                   DTypeName(out), "): ", what));
  };
  if (q != k || q != v) return error("Q, K and V must share one dtype");
  if (!IsAttentionDType(q)) return error("Q, K and V must be f32, f16 or bf16");
  if (out != DType::kF32 && out != q) return error("the output must be f32 or the inputs' dtype");
  if (out != DType::kF32 && !w.epilogue.empty()) return error("epilogues need an f32 output");
  if (w.attention.mask_groups > 0 && (w.inputs.size() < 4 || w.inputs[3].dtype != DType::kF32)) {
    return error("the mask must be f32");
  }
  return absl::OkStatus();
}

int64_t AttentionFlops(const AttentionParams& p) {
  const int64_t scores = p.batch * p.seq_q * p.seq_k;
  return 2 * scores * (p.head_dim + p.value_dim) + 5 * scores;
}

std::vector<double> AttentionReference(const AttentionParams& p, const std::vector<float>& q,
                                       const std::vector<float>& k, const std::vector<float>& v,
                                       const std::vector<float>* mask) {
  const int64_t sq = p.seq_q, sk = p.seq_k, d = p.head_dim, dv = p.value_dim;
  GTCO_CHECK(static_cast<int64_t>(q.size()) == p.batch * sq * d, "attention reference: Q size");
  GTCO_CHECK(static_cast<int64_t>(k.size()) == p.batch * sk * d, "attention reference: K size");
  GTCO_CHECK(static_cast<int64_t>(v.size()) == p.batch * sk * dv, "attention reference: V size");
  GTCO_CHECK(p.mask_groups == 0 ||
                 (mask != nullptr && static_cast<int64_t>(mask->size()) == p.mask_groups * sk),
             "attention reference: mask size");
  std::vector<double> out(p.batch * sq * dv, 0.0);
  std::vector<double> scores(sk);
  for (int64_t batch = 0; batch < p.batch; ++batch) {
    const float* q_batch = q.data() + batch * sq * d;
    const float* k_batch = k.data() + batch * sk * d;
    const float* v_batch = v.data() + batch * sk * dv;
    for (int64_t row = 0; row < sq; ++row) {
      double max_score = -INFINITY;
      for (int64_t key = 0; key < sk; ++key) {
        double dot = 0.0;
        for (int64_t dim = 0; dim < d; ++dim) {
          const float k_value = p.k_transposed ? k_batch[dim * sk + key] : k_batch[key * d + dim];
          dot += static_cast<double>(q_batch[row * d + dim]) * k_value;
        }
        scores[key] = static_cast<double>(p.scale) * dot;
        if (p.mask_groups > 0) {
          scores[key] += (*mask)[(batch / (p.batch / p.mask_groups)) * sk + key];
        }
        max_score = std::max(max_score, scores[key]);
      }
      double sum = 0.0;
      for (double& score : scores) {
        score = std::exp(score - max_score);
        sum += score;
      }
      double* out_row = out.data() + (batch * sq + row) * dv;
      for (int64_t key = 0; key < sk; ++key) {
        const double weight = scores[key] / sum;
        for (int64_t col = 0; col < dv; ++col) out_row[col] += weight * v_batch[key * dv + col];
      }
    }
  }
  return out;
}

}  // namespace gtco::ir
