// Preamble, cp.async helpers, tile copies and epilogue stores of the CUDA matmul kernels.
#include "common/kernels/cuda/matmul_common/matmul_kernel_util.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/codegen/cuda/cuda_source.h"
#include "common/kernels/family.h"

namespace gtco::kernels::mm {
namespace {

constexpr int64_t kInt32Elements = int64_t{1} << 31;

/// A statement storing float expressions `values` (consecutive elements) at `pointer` as one
/// vector store of `dtype`.
std::string VectorStore(ir::DType dtype, const std::string& pointer,
                        const std::vector<std::string>& values) {
  const size_t count = values.size();
  if (count == 1) return StoreFromFloat(dtype, pointer, "0", values[0]);
  if (dtype == ir::DType::kF32) {
    return absl::StrCat("*reinterpret_cast<float", count, "*>(", pointer, ") = make_float", count,
                        "(", absl::StrJoin(values, ", "), ");");
  }
  std::vector<std::string> words;
  for (size_t idx = 0; idx < count; idx += 2) {
    words.push_back(PackHalf2(dtype, values[idx], values[idx + 1]));
  }
  if (words.size() == 1) {
    return absl::StrCat("*reinterpret_cast<unsigned int*>(", pointer, ") = ", words[0], ";");
  }
  return absl::StrCat("*reinterpret_cast<uint2*>(", pointer, ") = make_uint2(",
                      absl::StrJoin(words, ", "), ");");
}

}  // namespace

const std::string& AsyncCopyHelpers() {
  static const std::string* const helpers = new std::string(R"(
struct __align__(16) gtco_u4 { unsigned int x, y, z, w; };
struct __align__(16) gtco_f4 { float x, y, z, w; };
struct __align__(8) gtco_f2 { float x, y; };
/// 16 bytes global -> shared (dst: shared address), bypassing L1 and prefetching the rest of the
/// 128-byte L2 line; the chunk past `bytes` source bytes is zero-filled (0: src is not read).
__device__ __forceinline__ void gtco_cp_async16(unsigned int dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;\n" :: "r"(dst), "l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void gtco_cp_async8(unsigned int dst, const void* src, int bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" :: "r"(dst), "l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void gtco_cp_async4(unsigned int dst, const void* src, int bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" :: "r"(dst), "l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void gtco_cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
/// Waits until at most `kPending` of this thread's committed copy groups are in flight.
template <int kPending>
__device__ __forceinline__ void gtco_cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" :: "n"(kPending) : "memory");
}
)");
  return *helpers;
}

std::string PackHalf2(ir::DType dtype, const std::string& lo, const std::string& hi) {
  const char* convert = dtype == ir::DType::kBF16 ? "gtco_f32_to_bf16" : "gtco_f32_to_f16";
  return absl::StrCat("((unsigned int)", convert, "(", lo, ") | ((unsigned int)", convert, "(", hi,
                      ") << 16))");
}

std::string KernelParams(const ir::Workload& w) {
  std::vector<std::string> params;
  for (size_t input_idx = 0; input_idx < w.inputs.size(); ++input_idx) {
    params.push_back(absl::StrCat("const ", StorageType(w.inputs[input_idx].dtype),
                                  "* __restrict__ in", input_idx));
  }
  params.push_back(absl::StrCat(StorageType(w.output.dtype), "* __restrict__ out"));
  return absl::StrJoin(params, ", ");
}

std::string KernelArgs(const ir::Workload& w) {
  std::vector<std::string> args;
  for (size_t input_idx = 0; input_idx < w.inputs.size(); ++input_idx) {
    args.push_back(absl::StrCat("in", input_idx));
  }
  args.push_back("out");
  return absl::StrJoin(args, ", ");
}

std::string MatMulKernelSignature(const ir::Workload& w, const std::string& entry, int threads,
                                  int64_t cluster_x) {
  std::string signature = KernelSignature(w, entry, threads);
  const std::string bounds = absl::StrCat("__launch_bounds__(", threads, ")");
  const size_t at = signature.find(bounds);
  if (at != std::string::npos) {
    signature.replace(at, bounds.size(), absl::StrCat("__launch_bounds__(", threads, ", 1)"));
  }
  const std::string global = "__global__ ";
  const size_t global_at = signature.find(global);
  if (cluster_x > 1 && global_at != std::string::npos) {
    signature.insert(global_at + global.size(),
                     absl::StrCat("__cluster_dims__(", cluster_x, ", 1, 1) "));
  }
  return signature;
}

std::string EmitMatMulPreamble(const ir::Workload& w, int64_t bm, int64_t bn,
                               const MatMulOperands& operands, int64_t split) {
  const ir::MatMulParams& p = w.matmul;
  const bool wide =
      p.m * p.k >= kInt32Elements || p.k * p.n >= kInt32Elements || p.m * p.n >= kInt32Elements;
  std::string code;
  absl::StrAppend(&code, "  constexpr int kM = ", p.m, ", kN = ", p.n, ", kK = ", p.k, ";\n");
  absl::StrAppend(&code, "  (void)kM; (void)kN; (void)kK;\n");
  absl::StrAppend(&code, "  typedef ", wide ? "long long" : "int", " gtco_index;\n");
  absl::StrAppend(&code, "  const int gtco_batch = blockIdx.z;\n");
  absl::StrAppend(&code, "  const int gtco_block_m = blockIdx.y * ", bm, ";\n");
  if (split > 1) {
    absl::StrAppend(&code, "  const int gtco_block_n = (blockIdx.x / ", split, ") * ", bn, ";\n");
  } else {
    absl::StrAppend(&code, "  const int gtco_block_n = blockIdx.x * ", bn, ";\n");
  }
  const std::string a_pointer =
      !operands.a_pointer.empty()
          ? operands.a_pointer
          : absl::StrCat("in0", p.a_batched ? absl::StrCat(" + (long long)gtco_batch * ",
                                                           p.m * p.k, "LL")
                                            : std::string());
  const std::string b_pointer =
      !operands.b_pointer.empty()
          ? operands.b_pointer
          : absl::StrCat("in1", p.b_batched ? absl::StrCat(" + (long long)gtco_batch * ",
                                                           p.k * p.n, "LL")
                                            : std::string());
  absl::StrAppend(&code, "  const ", StorageType(w.inputs[0].dtype), "* __restrict__ gtco_a = ",
                  a_pointer, ";\n");
  absl::StrAppend(&code, "  const ", StorageType(w.inputs[1].dtype), "* __restrict__ gtco_b = ",
                  b_pointer, ";\n");
  return code;
}

absl::StatusOr<std::string> EmitStoreFunction(const ir::Workload& w, int count) {
  const ir::MatMulParams& p = w.matmul;
  std::vector<std::string> value_params;
  for (int e = 0; e < count; ++e) value_params.push_back(absl::StrCat("float v", e));
  std::string code =
      absl::StrCat("__device__ __forceinline__ void gtco_store", count, "(", KernelParams(w),
                   ", int gtco_batch, int i, int j, ", absl::StrJoin(value_params, ", "), ") {\n");
  absl::StrAppend(&code, "  constexpr int kM = ", p.m, ", kN = ", p.n, ";\n");
  absl::StrAppend(&code, "  if (i >= kM) return;\n");
  absl::StrAppend(&code, "  const long long gtco_row = (long long)gtco_batch * kM + i;\n");
  absl::StrAppend(&code, "  ", StorageType(w.output.dtype),
                  "* gtco_dst = out + gtco_row * kN + j;\n");
  if (count > 1 && p.n % count == 0) {
    // j < N implies j + count <= N: one vector store.
    absl::StrAppend(&code, "  if (j >= kN) return;\n");
    std::vector<std::string> results;
    for (int e = 0; e < count; ++e) {
      absl::StatusOr<std::string> epilogue =
          EmitEpilogue(w, absl::StrCat("v", e), "gtco_row", absl::StrCat("(j + ", e, ")"));
      if (!epilogue.ok()) return epilogue.status();
      absl::StrAppend(&code, "  float r", e, ";\n  {\n", *epilogue, "  r", e, " = result;\n  }\n");
      results.push_back(absl::StrCat("r", e));
    }
    absl::StrAppend(&code, "  ", VectorStore(w.output.dtype, "gtco_dst", results), "\n");
  } else {
    for (int e = 0; e < count; ++e) {
      absl::StatusOr<std::string> epilogue =
          EmitEpilogue(w, absl::StrCat("v", e), "gtco_row", absl::StrCat("(j + ", e, ")"));
      if (!epilogue.ok()) return epilogue.status();
      absl::StrAppend(&code, "  if (j + ", e, " < kN) {\n", *epilogue, "  ",
                      StoreFromFloat(w.output.dtype, "gtco_dst", std::to_string(e), "result"),
                      "\n  }\n");
    }
  }
  absl::StrAppend(&code, "}\n");
  return code;
}

std::string EmitStoreCall(const ir::Workload& w, const std::string& i, const std::string& j,
                          const std::vector<std::string>& values) {
  return absl::StrCat("gtco_store", values.size(), "(", KernelArgs(w), ", gtco_batch, ", i, ", ", j,
                      ", ", absl::StrJoin(values, ", "), ");\n");
}

std::string TileChunks::DeclareThreadOrigin() const {
  const int64_t per_row = ChunksPerRow();
  if (threads % per_row == 0) {
    return absl::StrCat("const int gtco_tr = (int)threadIdx.x / ", per_row,
                        ", gtco_tc = ((int)threadIdx.x % ", per_row, ") * ", vw, ";\n");
  }
  return absl::StrCat("const int gtco_tr = 0, gtco_tc = (int)threadIdx.x * ", vw, ";\n");
}

int64_t TileChunks::RowOffset(int64_t it) const {
  const int64_t per_row = ChunksPerRow();
  if (threads % per_row == 0) return it * (threads / per_row);
  return it / (per_row / threads);
}

int64_t TileChunks::ColOffset(int64_t it) const {
  const int64_t per_row = ChunksPerRow();
  if (threads % per_row == 0) return 0;
  return it % (per_row / threads) * threads * vw;
}

std::string EmitSharedBase() {
  return "  const unsigned int gtco_smem_base = gtco_smem_addr(gtco_smem);\n";
}

std::string EmitOperandTileCopy(const OperandTileCopy& copy) {
  const int64_t elem_bytes = ir::DTypeSize(copy.dtype);
  const int64_t chunk_bytes = copy.vw * elem_bytes;
  const bool async = copy.async && (chunk_bytes == 4 || chunk_bytes == 8 || chunk_bytes == 16);
  const TileChunks chunks{copy.rows, copy.cols, copy.vw, copy.threads};
  const char* type = StorageType(copy.dtype);
  // A gathered operand is copied element by element (the tiling sets vw 1 for it).
  const bool gathered = copy.gather != nullptr && copy.gather->active();
  // Bounds the tile can cross: only where the matrix is not a whole number of tiles.
  const bool check_rows = copy.global_rows % copy.rows != 0;
  const bool check_cols = copy.global_cols % copy.cols != 0;
  std::string code = "  {\n";
  absl::StrAppend(&code, "    ", chunks.DeclareThreadOrigin());
  absl::StrAppend(&code, "    const int gtco_gr = ", copy.row0, " + gtco_tr;\n");
  absl::StrAppend(&code, "    const int gtco_gc = ", copy.col0, " + gtco_tc;\n");
  if (!gathered) {
    absl::StrAppend(&code, "    const ", type, "* gtco_src = ", copy.src,
                    " + (gtco_index)gtco_gr * ", copy.global_cols, " + gtco_gc;\n");
  }
  absl::StrAppend(&code, "    const int gtco_dst = ", copy.dst_bytes, " + (gtco_tr * ", copy.stride,
                  " + gtco_tc) * ", elem_bytes, ";\n");
  if (chunks.Guarded()) {
    absl::StrAppend(&code, "    if ((int)threadIdx.x < ", chunks.Chunks(), ") {\n");
  } else {
    absl::StrAppend(&code, "    {\n");
  }
  for (int64_t it = 0; it < chunks.Iterations(); ++it) {
    const int64_t row_offset = chunks.RowOffset(it), col_offset = chunks.ColOffset(it);
    const int64_t dst_offset = (row_offset * copy.stride + col_offset) * elem_bytes;
    if (gathered) {
      absl::StrAppend(&code, "      {\n",
                      copy.gather->emit(absl::StrCat("gtco_gr + ", row_offset),
                                        absl::StrCat("gtco_gc + ", col_offset)));
      if (async) {
        absl::StrAppend(&code, "      gtco_cp_async4(gtco_smem_base + gtco_dst + ", dst_offset,
                        ", gtco_src, gtco_ok ? 4 : 0);\n      }\n");
      } else {
        absl::StrAppend(&code, "      *reinterpret_cast<float*>(gtco_smem + gtco_dst + ",
                        dst_offset, ") = gtco_ok ? *gtco_src : 0.0f;\n      }\n");
      }
      continue;
    }
    std::vector<std::string> conditions;
    if (check_rows) {
      conditions.push_back(absl::StrCat("gtco_gr + ", row_offset, " < ", copy.global_rows));
    }
    if (check_cols) {
      conditions.push_back(absl::StrCat("gtco_gc + ", col_offset, " < ", copy.global_cols));
    }
    const std::string ok = conditions.empty() ? "true" : absl::StrJoin(conditions, " && ");
    const std::string src = absl::StrCat("gtco_src + ", row_offset * copy.global_cols + col_offset);
    if (async) {
      absl::StrAppend(&code, "      gtco_cp_async", chunk_bytes, "(gtco_smem_base + gtco_dst + ",
                      dst_offset, ", ", src, ", (", ok, ") ? ", chunk_bytes, " : 0);\n");
    } else {
      absl::StrAppend(&code, "      {\n        const bool gtco_ok = ", ok, ";\n");
      for (int64_t e = 0; e < copy.vw; ++e) {
        absl::StrAppend(&code, "        reinterpret_cast<", type, "*>(gtco_smem + gtco_dst + ",
                        dst_offset, ")[", e, "] = gtco_ok ? (", src, ")[", e, "] : (", type,
                        ")0;\n");
      }
      absl::StrAppend(&code, "      }\n");
    }
  }
  absl::StrAppend(&code, "    }\n  }\n");
  return code;
}

}  // namespace gtco::kernels::mm
