// Matmul workloads for the kernel tests, in the canonical shapes the planner makes: A
// [batch, M, K], B [batch|1, K, N] (or [batch|1, N, K] with trans_b), out [batch, M, N].
#pragma once

#include <cstdint>
#include <vector>

#include "common/ir/workload.h"

namespace gtco::testing {

/// A matmul of `in` operands and an `out` result; B is per batch entry unless `b_batched` is false
/// (weights shared by the batch).
inline ir::Workload MatMulWorkload(int64_t batch, int64_t m, int64_t n, int64_t k, ir::DType in,
                                   ir::DType out, bool trans_b = false, bool b_batched = true) {
  ir::Workload w;
  w.anchor = ir::AnchorKind::kMatMul;
  w.matmul.batch = batch;
  w.matmul.m = m;
  w.matmul.n = n;
  w.matmul.k = k;
  w.matmul.a_batched = batch > 1;
  w.matmul.b_batched = batch > 1 && b_batched;
  w.matmul.trans_b = trans_b;
  const int64_t batch_b = w.matmul.b_batched ? batch : 1;
  w.inputs = {{in, {batch, m, k}},
              {in, trans_b ? std::vector<int64_t>{batch_b, n, k} : std::vector<int64_t>{batch_b, k, n}}};
  w.num_anchor_inputs = 2;
  w.output = {out, {batch, m, n}};
  return w;
}

}  // namespace gtco::testing
