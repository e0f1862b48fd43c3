// The shared skeleton of the mma.sync matmul kernels: tile copies, cp.async pipeline, stores.
#include "common/kernels/cuda/matmul_common/matmul_tensor_core_kernel.h"

#include "absl/strings/str_cat.h"
#include "common/codegen/cuda/cuda_source.h"
#include "common/kernels/cuda/matmul_common/matmul_kernel_util.h"
#include "common/kernels/family.h"

namespace gtco::kernels::mm {
namespace {

using cuda_matmul::TensorCoreTiling;

/// Statements copying K tile `kt` (an int expression) of A and B into stage `stage`.
std::string EmitStageCopy(const ir::Workload& w, const TensorCoreTiling& tiling,
                          const MatMulOperands& operands, const std::string& stage,
                          const std::string& kt) {
  const ir::MatMulParams& p = w.matmul;
  const std::string k0 = absl::StrCat("(", kt, ") * ", tiling.bk);
  OperandTileCopy a;
  a.dst_bytes = absl::StrCat("(", stage, ") * ", tiling.AStageBytes());
  a.src = "gtco_a";
  a.stride = tiling.a_stride;
  a.vw = tiling.vw_a;
  a.dtype = w.inputs[0].dtype;
  a.threads = tiling.Threads();
  if (tiling.a_k_contiguous) {  // stored [M, K]
    a.row0 = "gtco_block_m";
    a.col0 = k0;
    a.rows = tiling.bm;
    a.cols = tiling.bk;
    a.global_rows = p.m;
    a.global_cols = p.k;
  } else {  // stored [K, M]
    a.row0 = k0;
    a.col0 = "gtco_block_m";
    a.rows = tiling.bk;
    a.cols = tiling.bm;
    a.global_rows = p.k;
    a.global_cols = p.m;
  }
  OperandTileCopy b;
  b.dst_bytes = absl::StrCat(tiling.stages * tiling.AStageBytes(), " + (", stage, ") * ",
                             tiling.BStageBytes());
  b.src = "gtco_b";
  b.stride = tiling.b_stride;
  b.vw = tiling.vw_b;
  b.dtype = w.inputs[1].dtype;
  b.threads = tiling.Threads();
  b.gather = &operands.b_gather;
  if (tiling.b_k_contiguous) {  // stored [N, K]
    b.row0 = "gtco_block_n";
    b.col0 = k0;
    b.rows = tiling.bn;
    b.cols = tiling.bk;
    b.global_rows = p.n;
    b.global_cols = p.k;
  } else {  // stored [K, N]
    b.row0 = k0;
    b.col0 = "gtco_block_n";
    b.rows = tiling.bk;
    b.cols = tiling.bn;
    b.global_rows = p.k;
    b.global_cols = p.n;
  }
  return EmitOperandTileCopy(a) + EmitOperandTileCopy(b);
}

/// Cluster helpers of a K-split kernel (sm_90): this block's rank in its cluster, a barrier of
/// the whole cluster (release / acquire, so shared-memory writes before it are seen by every
/// block after it), and a float2 read from the shared memory of block `rank` at the address
/// `local` has in this block's.
constexpr const char* kClusterHelpers = R"(
__device__ __forceinline__ unsigned int gtco_cluster_rank() {
  unsigned int rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
  return rank;
}
__device__ __forceinline__ void gtco_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
  asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
__device__ __forceinline__ float2 gtco_cluster_load2(unsigned int local, unsigned int rank) {
  unsigned int remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(local), "r"(rank));
  float2 value;
  asm volatile("ld.shared::cluster.v2.f32 {%0, %1}, [%2];\n" : "=f"(value.x), "=f"(value.y) : "r"(remote) : "memory");
  return value;
}
)";

/// The epilogue of a K-split kernel: each thread's partial sums go to shared memory (pair q of
/// values at q * threads + thread, so a warp's accesses are consecutive), the cluster waits for
/// all of them, then each block adds the `split` partials of every split-th pair, in rank order,
/// and stores them; a last barrier keeps every block's shared memory alive until all have read.
std::string EmitSplitEpilogue(const ir::Workload& w, const TensorCoreTiling& tiling) {
  const int64_t mi_count = tiling.wm / 16, ni_count = tiling.wn / 8;
  const int64_t threads = tiling.Threads();
  std::string code;
  absl::StrAppend(&code, "  gtco_cp_async_wait<0>();\n  __syncthreads();\n");
  absl::StrAppend(&code,
                  "  float2* const gtco_part = reinterpret_cast<float2*>(gtco_smem);\n");
  absl::StrAppend(&code, "  #pragma unroll\n  for (int mi = 0; mi < ", mi_count, "; ++mi) {\n");
  absl::StrAppend(&code, "    #pragma unroll\n    for (int ni = 0; ni < ", ni_count, "; ++ni) {\n");
  absl::StrAppend(&code, "      const int gtco_q = (mi * ", ni_count, " + ni) * 2;\n");
  absl::StrAppend(&code, "      gtco_part[gtco_q * ", threads,
                  " + threadIdx.x] = make_float2(gtco_acc[mi][ni][0], gtco_acc[mi][ni][1]);\n");
  absl::StrAppend(&code, "      gtco_part[(gtco_q + 1) * ", threads,
                  " + threadIdx.x] = make_float2(gtco_acc[mi][ni][2], gtco_acc[mi][ni][3]);\n");
  absl::StrAppend(&code, "    }\n  }\n");
  absl::StrAppend(&code, "  gtco_cluster_sync();\n");
  absl::StrAppend(&code, "  const int gtco_rank = (int)gtco_cluster_rank();\n");
  absl::StrAppend(&code, "  const int gtco_g = gtco_lane >> 2, gtco_t = gtco_lane & 3;\n");
  // Pair q = (mi * ni_count + ni) * 2 + h: rows +8h of m16n8 tile (mi, ni); a plain loop, since
  // the accumulators are in shared memory now.
  absl::StrAppend(&code, "  #pragma unroll 1\n  for (int gtco_q = gtco_rank; gtco_q < ",
                  mi_count * ni_count * 2, "; gtco_q += ", tiling.split, ") {\n");
  absl::StrAppend(&code, "    const int mi = gtco_q / ", ni_count * 2, ", ni = (gtco_q >> 1) % ",
                  ni_count, ", h = gtco_q & 1;\n");
  absl::StrAppend(&code, "    const unsigned int gtco_at = gtco_smem_base + (gtco_q * ", threads,
                  " + threadIdx.x) * 8;\n");
  absl::StrAppend(&code, "    float2 gtco_sum = gtco_cluster_load2(gtco_at, 0);\n");
  absl::StrAppend(&code, "    #pragma unroll\n    for (int r = 1; r < ", tiling.split,
                  "; ++r) {\n");
  absl::StrAppend(&code, "      const float2 gtco_v = gtco_cluster_load2(gtco_at, r);\n");
  absl::StrAppend(&code, "      gtco_sum.x += gtco_v.x;\n      gtco_sum.y += gtco_v.y;\n");
  absl::StrAppend(&code, "    }\n");
  absl::StrAppend(&code, "    const int gtco_i = gtco_block_m + gtco_warp_m + mi * 16 + gtco_g",
                  " + 8 * h;\n");
  absl::StrAppend(&code,
                  "    const int gtco_j = gtco_block_n + gtco_warp_n + ni * 8 + gtco_t * 2;\n");
  absl::StrAppend(&code, "    ",
                  EmitStoreCall(w, "gtco_i", "gtco_j", {"gtco_sum.x", "gtco_sum.y"}));
  absl::StrAppend(&code, "  }\n");
  absl::StrAppend(&code, "  gtco_cluster_sync();\n}\n");
  return code;
}

}  // namespace

absl::Status CheckTensorCoreTiling(const TensorCoreTiling& tiling, int64_t mma_k,
                                   int64_t wn_multiple) {
  const auto power_of_two_in = [](int64_t value, int64_t lo, int64_t hi) {
    return value >= lo && value <= hi && (value & (value - 1)) == 0;
  };
  if (!power_of_two_in(tiling.bm, 32, 256) || !power_of_two_in(tiling.bn, 32, 256) ||
      !power_of_two_in(tiling.bk, mma_k, 64) || !power_of_two_in(tiling.wm, 16, tiling.bm) ||
      !power_of_two_in(tiling.wn, wn_multiple, tiling.bn) || tiling.stages < 2 ||
      tiling.stages > 4 || tiling.Threads() > 1024 || !power_of_two_in(tiling.split, 1, 8)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unsupported tensor-core tiling bm=", tiling.bm, " bn=", tiling.bn, " bk=", tiling.bk,
        " wm=", tiling.wm, " wn=", tiling.wn, " stages=", tiling.stages, " split=", tiling.split));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> EmitTensorCoreMatMul(const ir::Workload& w,
                                                 const TensorCoreTiling& tiling,
                                                 const std::string& entry,
                                                 const TensorCoreKernelParts& parts,
                                                 const MatMulOperands& operands) {
  if (operands.b_gather.active() &&
      (tiling.b_k_contiguous || tiling.vw_b != 1 || w.inputs[1].dtype != ir::DType::kF32)) {
    return absl::InvalidArgumentError(
        "a gathered B operand must be f32, stored [K, N] and copied one element at a time");
  }
  const int64_t mi_count = tiling.wm / 16, ni_count = tiling.wn / 8;
  const int64_t k_tiles = (w.matmul.k + tiling.bk - 1) / tiling.bk;
  const char* type = StorageType(w.inputs[0].dtype);
  std::string code = Prelude();
  const bool split = tiling.split > 1;
  absl::StrAppend(&code, AsyncCopyHelpers(), parts.helpers, split ? kClusterHelpers : "");
  absl::StatusOr<std::string> store = EmitStoreFunction(w, 2);
  if (!store.ok()) return store.status();
  absl::StrAppend(&code, *store, "\n");
  absl::StrAppend(&code,
                  MatMulKernelSignature(w, entry, static_cast<int>(tiling.Threads()), tiling.split),
                  " {\n");
  absl::StrAppend(&code, "  extern __shared__ __align__(16) unsigned char gtco_smem[];\n");
  absl::StrAppend(&code, EmitMatMulPreamble(w, tiling.bm, tiling.bn, operands, tiling.split));
  absl::StrAppend(&code, "  constexpr int kAStage = ", tiling.a_rows * tiling.a_stride,
                  ", kBStage = ", tiling.b_rows * tiling.b_stride, ";\n");
  absl::StrAppend(&code, "  ", type, "* const gtco_sa = reinterpret_cast<", type,
                  "*>(gtco_smem);\n");
  absl::StrAppend(&code, "  ", type, "* const gtco_sb = gtco_sa + ", tiling.stages,
                  " * kAStage;\n");
  absl::StrAppend(&code, EmitSharedBase());
  absl::StrAppend(&code, "  const int gtco_lane = threadIdx.x & 31;\n");
  absl::StrAppend(&code, "  const int gtco_warp = threadIdx.x >> 5;\n");
  absl::StrAppend(&code, "  const int gtco_warp_m = (gtco_warp / ", tiling.WarpsN(), ") * ",
                  tiling.wm, ";\n");
  absl::StrAppend(&code, "  const int gtco_warp_n = (gtco_warp % ", tiling.WarpsN(), ") * ",
                  tiling.wn, ";\n");
  absl::StrAppend(&code, "  float gtco_acc[", mi_count, "][", ni_count, "][4];\n");
  absl::StrAppend(&code, "  #pragma unroll\n  for (int mi = 0; mi < ", mi_count,
                  "; ++mi)\n    #pragma unroll\n    for (int ni = 0; ni < ", ni_count,
                  "; ++ni)\n      #pragma unroll\n      for (int q = 0; q < 4; ++q) "
                  "gtco_acc[mi][ni][q] = 0.0f;\n");
  absl::StrAppend(&code, parts.setup);
  // Pipeline: stages-1 K tiles in flight before the loop; each iteration waits for the oldest,
  // refills the stage consumed in the previous iteration, then consumes the oldest.
  // With a K split, block `rank` of the cluster runs K tiles [kt0, kt0 + tiles) of the kTiles
  // (the loop counts from 0; the copies add kt0).
  absl::StrAppend(&code, "  constexpr int kTiles = ", k_tiles, ";\n");
  std::string count = "kTiles", first;
  if (split) {
    const int64_t slice = tiling.SliceTiles(w.matmul.k);
    absl::StrAppend(&code, "  const int gtco_kt0 = (int)gtco_cluster_rank() * ", slice, ";\n");
    absl::StrAppend(&code, "  const int gtco_tiles = kTiles - gtco_kt0 < ", slice,
                    " ? kTiles - gtco_kt0 : ", slice, ";\n");
    count = "gtco_tiles";
    first = "gtco_kt0 + ";
  }
  absl::StrAppend(&code, "  #pragma unroll\n  for (int gtco_s = 0; gtco_s < ", tiling.stages - 1,
                  "; ++gtco_s) {\n    if (gtco_s < ", count, ") {\n",
                  EmitStageCopy(w, tiling, operands, "gtco_s", first + "gtco_s"),
                  "    }\n    gtco_cp_async_commit();\n  }\n");
  absl::StrAppend(&code, "  #pragma unroll 1\n  for (int gtco_kt = 0; gtco_kt < ", count,
                  "; ++gtco_kt) {\n");
  absl::StrAppend(&code, "    gtco_cp_async_wait<", tiling.stages - 2, ">();\n");
  absl::StrAppend(&code, "    __syncthreads();\n");
  absl::StrAppend(
      &code, "    {\n      const int gtco_next = gtco_kt + ", tiling.stages - 1,
      ";\n      if (gtco_next < ", count, ") {\n",
      EmitStageCopy(w, tiling, operands, absl::StrCat("gtco_next % ", tiling.stages),
                    first + "gtco_next"),
      "      }\n      gtco_cp_async_commit();\n    }\n");
  absl::StrAppend(&code, "    const int gtco_stage = gtco_kt % ", tiling.stages, ";\n");
  absl::StrAppend(&code, parts.consume_stage("gtco_stage"));
  absl::StrAppend(&code, "  }\n");
  if (split) {
    absl::StrAppend(&code, EmitSplitEpilogue(w, tiling));
    return code;
  }
  // Stores: each lane holds two adjacent columns of two rows per m16n8 tile.
  absl::StrAppend(&code, "  const int gtco_g = gtco_lane >> 2, gtco_t = gtco_lane & 3;\n");
  absl::StrAppend(&code, "  #pragma unroll\n  for (int mi = 0; mi < ", mi_count, "; ++mi) {\n");
  absl::StrAppend(&code, "    #pragma unroll\n    for (int ni = 0; ni < ", ni_count, "; ++ni) {\n");
  absl::StrAppend(&code,
                  "      const int gtco_i = gtco_block_m + gtco_warp_m + mi * 16 + gtco_g;\n");
  absl::StrAppend(&code,
                  "      const int gtco_j = gtco_block_n + gtco_warp_n + ni * 8 + gtco_t * 2;\n");
  absl::StrAppend(
      &code, "      ",
      EmitStoreCall(w, "gtco_i", "gtco_j", {"gtco_acc[mi][ni][0]", "gtco_acc[mi][ni][1]"}));
  absl::StrAppend(
      &code, "      ",
      EmitStoreCall(w, "gtco_i + 8", "gtco_j", {"gtco_acc[mi][ni][2]", "gtco_acc[mi][ni][3]"}));
  absl::StrAppend(&code, "    }\n  }\n}\n");
  return code;
}

}  // namespace gtco::kernels::mm
