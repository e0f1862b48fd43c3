// OpenBLAS sgemm baseline.
#include <cblas.h>

#include "bench/vendor_baselines.h"

namespace gtco::bench {

std::string OpenBlasVersion() {
  return std::string(openblas_get_config()) + "; core " + openblas_get_corename();
}

void SetOpenBlasThreads(int threads) { openblas_set_num_threads(threads); }

absl::StatusOr<VendorRun> MakeOpenBlasRun(const ir::Workload& w, const std::vector<float*>& inputs,
                                          float* out) {
  if (w.anchor != ir::AnchorKind::kMatMul || !w.epilogue.empty() || inputs.size() != 2) {
    return absl::UnimplementedError("OpenBLAS baseline: only matmul without epilogue");
  }
  const ir::MatMulParams p = w.matmul;
  const float* a = inputs[0];
  const float* b = inputs[1];
  return VendorRun([p, a, b, out] {
    const CBLAS_TRANSPOSE trans_a = p.trans_a ? CblasTrans : CblasNoTrans;
    const CBLAS_TRANSPOSE trans_b = p.trans_b ? CblasTrans : CblasNoTrans;
    const int lda = p.trans_a ? p.m : p.k, ldb = p.trans_b ? p.k : p.n;
    for (int64_t batch = 0; batch < p.batch; ++batch) {
      cblas_sgemm(CblasRowMajor, trans_a, trans_b, p.m, p.n, p.k, 1.0f,
                  a + (p.a_batched ? batch * p.m * p.k : 0), lda,
                  b + (p.b_batched ? batch * p.k * p.n : 0), ldb, 0.0f, out + batch * p.m * p.n,
                  p.n);
    }
  });
}

}  // namespace gtco::bench
