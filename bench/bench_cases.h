// The workloads of the CPU-vs-vendor benchmark: square GEMMs, BERT-base and ViT-B/16 GEMMs,
// ViT attention batch matmuls, softmax and layer normalization.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/ir/workload.h"

namespace gtco::bench {

struct BenchCase {
  std::string id;     ///< short name for --shapes, e.g. "bert_ffn1"
  std::string shape;  ///< human shape, e.g. "128×768×3072" (M×K×N) or "12×197×197"
  ir::Workload workload;
  bool quick = false;  ///< part of the --quick subset
  bool IsGemm() const { return workload.anchor == ir::AnchorKind::kMatMul; }
};

/// C[b] = A[b] · B[b] with A [batch, M, K], B [batch, K, N] (batch 1: plain 2-D GEMM).
ir::Workload MatMulWorkload(int64_t batch, int64_t m, int64_t k, int64_t n);
/// A Linear's GEMM [m, k] x [k, n] with its bias [n] and the exact GELU as an epilogue, as
/// torch.onnx.export writes nn.GELU (x / sqrt(2), erf, + 1, * x, * 0.5).
ir::Workload GeluMatMulWorkload(int64_t m, int64_t k, int64_t n);
/// Softmax over the last axis of a [rows, cols] tensor.
ir::Workload SoftmaxWorkload(int64_t rows, int64_t cols);
/// LayerNorm over the last axis of [rows, cols] with scale and bias [cols], epsilon 1e-5.
ir::Workload LayerNormWorkload(int64_t rows, int64_t cols);

/// Every case of the benchmark, in table order.
std::vector<BenchCase> AllCases();

/// The cases selected by `filters` (comma-separated ids or substrings of ids; empty = all),
/// restricted to the quick subset when `quick`. INVALID_ARGUMENT naming a filter that matches
/// nothing.
absl::StatusOr<std::vector<BenchCase>> SelectCases(const std::string& filters, bool quick);

}  // namespace gtco::bench
