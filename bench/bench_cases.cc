// Benchmark workloads and their selection by --shapes / --quick.
#include "bench/bench_cases.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace gtco::bench {

ir::Workload MatMulWorkload(int64_t batch, int64_t m, int64_t k, int64_t n) {
  ir::Workload workload;
  workload.anchor = ir::AnchorKind::kMatMul;
  workload.matmul.batch = batch;
  workload.matmul.m = m;
  workload.matmul.n = n;
  workload.matmul.k = k;
  workload.matmul.a_batched = batch > 1;
  workload.matmul.b_batched = batch > 1;
  workload.inputs = {{ir::DType::kF32, {batch, m, k}}, {ir::DType::kF32, {batch, k, n}}};
  workload.num_anchor_inputs = 2;
  workload.output = {ir::DType::kF32, {batch, m, n}};
  return workload;
}

ir::Workload SoftmaxWorkload(int64_t rows, int64_t cols) {
  ir::Workload workload;
  workload.anchor = ir::AnchorKind::kSoftmax;
  workload.row.rows = rows;
  workload.row.cols = cols;
  workload.inputs = {{ir::DType::kF32, {rows, cols}}};
  workload.num_anchor_inputs = 1;
  workload.output = {ir::DType::kF32, {rows, cols}};
  return workload;
}

ir::Workload LayerNormWorkload(int64_t rows, int64_t cols) {
  ir::Workload workload;
  workload.anchor = ir::AnchorKind::kLayerNorm;
  workload.row.rows = rows;
  workload.row.cols = cols;
  workload.row.epsilon = 1e-5f;
  workload.inputs = {{ir::DType::kF32, {rows, cols}},
                     {ir::DType::kF32, {cols}},
                     {ir::DType::kF32, {cols}}};
  workload.num_anchor_inputs = 3;
  workload.output = {ir::DType::kF32, {rows, cols}};
  return workload;
}

ir::Workload GeluMatMulWorkload(int64_t m, int64_t k, int64_t n) {
  ir::Workload workload = MatMulWorkload(1, m, k, n);
  workload.inputs.push_back({ir::DType::kF32, {n}});
  using Kind = ir::Operand::Kind;
  auto acc = [] { return ir::Operand{Kind::kAcc, 0, 0.0f}; };
  auto value = [](int index) { return ir::Operand{Kind::kValue, index, 0.0f}; };
  auto constant = [](float v) { return ir::Operand{Kind::kConst, 0, v}; };
  // As torch.onnx.export writes nn.GELU() after a Linear: y = x + bias; y * 0.5 * (1 + erf(y /
  // sqrt(2))), the same instructions in the same order as the graph's fusion produces them.
  workload.epilogue = {
      {ir::EwOp::kAdd, {acc(), ir::Operand{Kind::kInput, 2, 0.0f}}},
      {ir::EwOp::kDiv, {value(0), constant(1.41421353816986083984375f)}},
      {ir::EwOp::kErf, {value(1)}},
      {ir::EwOp::kAdd, {value(2), constant(1.0f)}},
      {ir::EwOp::kMul, {value(0), value(3)}},
      {ir::EwOp::kMul, {value(4), constant(0.5f)}},
  };
  return workload;
}

std::vector<BenchCase> AllCases() {
  auto gemm = [](std::string id, int64_t batch, int64_t m, int64_t k, int64_t n, bool quick) {
    std::string shape = absl::StrCat(m, "×", k, "×", n);
    if (batch > 1) shape = absl::StrCat(batch, "×[", shape, "]");
    return BenchCase{std::move(id), std::move(shape), MatMulWorkload(batch, m, k, n), quick};
  };
  return {
      gemm("mm512", 1, 512, 512, 512, true),
      gemm("mm1024", 1, 1024, 1024, 1024, false),
      gemm("bert_attn_out", 1, 128, 768, 768, true),
      gemm("bert_ffn1", 1, 128, 768, 3072, false),
      gemm("bert_ffn2", 1, 128, 3072, 768, false),
      gemm("vit_qkv", 1, 197, 768, 2304, false),
      gemm("vit_proj", 1, 197, 768, 768, false),
      gemm("vit_ffn1", 1, 197, 768, 3072, false),
      gemm("vit_ffn2", 1, 197, 3072, 768, false),
      BenchCase{"bert_ffn1_gelu", "128×768×3072 +bias+GELU", GeluMatMulWorkload(128, 768, 3072),
                false},
      BenchCase{"vit_ffn1_gelu", "197×768×3072 +bias+GELU", GeluMatMulWorkload(197, 768, 3072),
                false},
      gemm("vit_attn_qk", 12, 197, 64, 197, true),
      gemm("vit_attn_av", 12, 197, 197, 64, false),
      BenchCase{"vit_softmax", "12×197×197", SoftmaxWorkload(12 * 197, 197), true},
      BenchCase{"vit_layernorm", "197×768", LayerNormWorkload(197, 768), true},
  };
}

absl::StatusOr<std::vector<BenchCase>> SelectCases(const std::string& filters, bool quick) {
  std::vector<BenchCase> all = AllCases();
  std::vector<std::string> wanted = absl::StrSplit(filters, ',', absl::SkipWhitespace());
  std::vector<bool> used(wanted.size(), false);
  std::vector<BenchCase> selected;
  for (BenchCase& bench_case : all) {
    bool match = wanted.empty() && (!quick || bench_case.quick);
    for (size_t index = 0; index < wanted.size(); ++index) {
      if (bench_case.id.find(wanted[index]) != std::string::npos) {
        match = true;
        used[index] = true;
      }
    }
    if (match) selected.push_back(std::move(bench_case));
  }
  for (size_t index = 0; index < wanted.size(); ++index) {
    if (!used[index]) {
      std::vector<std::string> ids;
      for (const BenchCase& bench_case : AllCases()) ids.push_back(bench_case.id);
      return absl::InvalidArgumentError(absl::StrCat("--shapes: '", wanted[index],
                                                     "' matches no case (", absl::StrJoin(ids, ", "),
                                                     ")"));
    }
  }
  return selected;
}

}  // namespace gtco::bench
