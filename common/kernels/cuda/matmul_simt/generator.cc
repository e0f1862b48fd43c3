// CUDA C for "cuda_mm_simt/v1": fp32 FMA matmuls on CUDA cores. Both operand tiles live in
// shared memory as f32, k-major (A as [bk][bm+4], B as [bk][bn+4]) so that a thread reads its
// A column and B row as float4s. Thread (tx, ty) of the (bm/tm) x (bn/tn) grid owns rows
// r*4*TY + 4*ty + i and columns c*4*TX + 4*tx + j (i, j < 4), which keeps those float4 reads
// free of bank conflicts. Tiles stream either through registers into two buffers (stages 1;
// 16-bit inputs are converted to f32 there) or through a cp.async pipeline (stages 2..4, f32).
#include "common/kernels/cuda/matmul_simt/generator.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/codegen/cuda/cuda_source.h"
#include "common/kernels/cuda/matmul_common/cuda_matmul_common.h"
#include "common/kernels/cuda/matmul_common/matmul_kernel_util.h"
#include "common/kernels/family.h"
#include "common/util/status.h"

namespace gtco::kernels {
namespace {

using mm::AsyncCopyHelpers;
using mm::EmitMatMulPreamble;
using mm::EmitStoreCall;
using mm::EmitStoreFunction;
using mm::MatMulKernelSignature;

using cuda_matmul::SimtTiling;

/// One operand as the SIMT kernel copies it into its k-major shared tile.
struct SimtOperand {
  std::string name;    ///< "a" or "b": registers gtco_r<name>, tile gtco_s<name>
  std::string global;  ///< this batch's pointer
  ir::DType dtype = ir::DType::kF32;
  bool k_contiguous = false;  ///< stored [MN, K] (else [K, MN])
  int64_t extent = 0;         ///< M or N
  std::string origin;         ///< gtco_block_m or gtco_block_n
  int64_t tile = 0;           ///< bm or bn
  int64_t stride = 0;         ///< shared row stride (elements)
  int64_t vw = 1;
  int64_t smem_offset = 0;  ///< bytes from gtco_smem to buffer 0
  /// When active, the operand's elements are gathered (vw 1, f32, stored [K, N]) rather than read
  /// from `global`.
  const mm::OperandGather* gather = nullptr;

  bool Gathered() const { return gather != nullptr && gather->active(); }
};

/// The operand's K tile in its stored layout: rows x cols with chunks of vw along cols.
mm::TileChunks StoredChunks(const SimtOperand& op, const SimtTiling& tiling) {
  if (op.k_contiguous) return {op.tile, tiling.bk, op.vw, tiling.Threads()};
  return {tiling.bk, op.tile, op.vw, tiling.Threads()};
}

/// Opens a block defining the thread's first chunk (gtco_tr, gtco_tc) and, for K tile `kt`
/// unless empty, gtco_gr, gtco_gc (its stored coordinates) and gtco_src (its address); then
/// opens the guard. The caller closes two braces.
std::string OpenChunks(const SimtOperand& op, const SimtTiling& tiling, const std::string& kt) {
  const mm::TileChunks chunks = StoredChunks(op, tiling);
  std::string code = absl::StrCat("  {\n    ", chunks.DeclareThreadOrigin());
  if (!kt.empty()) {
    const std::string k0 = absl::StrCat("(", kt, ") * ", tiling.bk);
    const std::string row0 = op.k_contiguous ? op.origin : k0;
    const std::string col0 = op.k_contiguous ? k0 : op.origin;
    absl::StrAppend(&code, "    const int gtco_gr = ", row0, " + gtco_tr;\n");
    absl::StrAppend(&code, "    const int gtco_gc = ", col0, " + gtco_tc;\n");
    if (!op.Gathered()) {
      absl::StrAppend(&code, "    const ", StorageType(op.dtype), "* gtco_src = ", op.global,
                      " + (gtco_index)gtco_gr * ",
                      op.k_contiguous ? "kK" : std::to_string(op.extent), " + gtco_gc;\n");
    }
  }
  if (chunks.Guarded()) {
    absl::StrAppend(&code, "    if ((int)threadIdx.x < ", chunks.Chunks(), ") {\n");
  } else {
    absl::StrAppend(&code, "    {\n");
  }
  return code;
}

/// The bounds condition and source offset of chunk `it` (inside OpenChunks with a K tile).
std::pair<std::string, int64_t> ChunkSource(const SimtOperand& op, const SimtTiling& tiling,
                                            const ir::MatMulParams& p, int64_t it) {
  const mm::TileChunks chunks = StoredChunks(op, tiling);
  const int64_t row_offset = chunks.RowOffset(it), col_offset = chunks.ColOffset(it);
  const int64_t global_rows = op.k_contiguous ? op.extent : p.k;
  const int64_t global_cols = op.k_contiguous ? p.k : op.extent;
  std::vector<std::string> conditions;
  if (global_rows % chunks.rows != 0) {
    conditions.push_back(absl::StrCat("gtco_gr + ", row_offset, " < ", global_rows));
  }
  if (global_cols % chunks.cols != 0) {
    conditions.push_back(absl::StrCat("gtco_gc + ", col_offset, " < ", global_cols));
  }
  return {conditions.empty() ? std::string("true") : absl::StrJoin(conditions, " && "),
          row_offset * global_cols + col_offset};
}

/// Loads this thread's chunks of K tile `kt` into registers gtco_r<name> as f32 (zeros outside
/// the matrix): element e of chunk it goes to gtco_r<name>[it * vw + e].
std::string FetchToRegisters(const SimtOperand& op, const SimtTiling& tiling,
                             const ir::MatMulParams& p, const std::string& kt) {
  const mm::TileChunks chunks = StoredChunks(op, tiling);
  std::string code = OpenChunks(op, tiling, kt);
  const char* lanes[] = {"x", "y", "z", "w"};
  for (int64_t it = 0; op.Gathered() && it < chunks.Iterations(); ++it) {
    absl::StrAppend(&code, "    {\n",
                    op.gather->emit(absl::StrCat("gtco_gr + ", chunks.RowOffset(it)),
                                    absl::StrCat("gtco_gc + ", chunks.ColOffset(it))),
                    "    gtco_r", op.name, "[", it, "] = gtco_ok ? *gtco_src : 0.0f;\n    }\n");
  }
  for (int64_t it = 0; !op.Gathered() && it < chunks.Iterations(); ++it) {
    const auto [ok, offset] = ChunkSource(op, tiling, p, it);
    const std::string reg = absl::StrCat("gtco_r", op.name, "[", it * op.vw, " + ");
    const std::string src = absl::StrCat("(gtco_src + ", offset, ")");
    absl::StrAppend(&code, "    {\n    const bool gtco_ok = ", ok, ";\n");
    if (op.dtype == ir::DType::kF32) {
      if (op.vw == 1) {
        absl::StrAppend(&code, "    ", reg, "0] = gtco_ok ? *", src, " : 0.0f;\n");
      } else {
        absl::StrAppend(&code, "    float", op.vw, " gtco_v = {};\n");
        absl::StrAppend(&code, "    if (gtco_ok) gtco_v = *reinterpret_cast<const float", op.vw,
                        "*>", src, ";\n");
        for (int64_t e = 0; e < op.vw; ++e) {
          absl::StrAppend(&code, "    ", reg, e, "] = gtco_v.", lanes[e], ";\n");
        }
      }
    } else {
      const char* convert = op.dtype == ir::DType::kBF16 ? "gtco_bf16_to_f32" : "gtco_f16_to_f32";
      if (op.vw == 1) {
        absl::StrAppend(&code, "    ", reg, "0] = ", convert, "(gtco_ok ? *", src,
                        " : (unsigned short)0);\n");
      } else {
        // vw 2, 4, 8 halves: one 32-bit word per pair, loaded as one vector.
        const int64_t words = op.vw / 2;
        const std::string vector_type = words == 1 ? "unsigned int" : absl::StrCat("uint", words);
        absl::StrAppend(&code, "    ", vector_type, " gtco_v = {};\n");
        absl::StrAppend(&code, "    if (gtco_ok) gtco_v = *reinterpret_cast<const ", vector_type,
                        "*>", src, ";\n");
        for (int64_t e = 0; e < op.vw; ++e) {
          const std::string word =
              words == 1 ? std::string("gtco_v") : absl::StrCat("gtco_v.", lanes[e / 2]);
          absl::StrAppend(&code, "    ", reg, e, "] = ", convert, "((unsigned short)(", word, " ",
                          e % 2 ? ">> 16" : "& 0xffffu", "));\n");
        }
      }
    }
    absl::StrAppend(&code, "    }\n");
  }
  absl::StrAppend(&code, "    }\n  }\n");
  return code;
}

/// Shared-memory element offset (from the buffer's start) of element e of chunk `it`, relative to
/// the thread's first chunk.
int64_t SharedOffset(const SimtOperand& op, const mm::TileChunks& chunks, int64_t it, int64_t e) {
  const int64_t row_offset = chunks.RowOffset(it), col_offset = chunks.ColOffset(it);
  if (op.k_contiguous) return (col_offset + e) * op.stride + row_offset;  // transposed
  return row_offset * op.stride + col_offset + e;
}

/// The thread's first chunk's shared-memory element offset from the buffer's start.
std::string SharedThreadOffset(const SimtOperand& op) {
  return op.k_contiguous ? absl::StrCat("gtco_tc * ", op.stride, " + gtco_tr")
                         : absl::StrCat("gtco_tr * ", op.stride, " + gtco_tc");
}

/// Stores registers gtco_r<name> (as FetchToRegisters left them) into buffer `buffer`.
std::string StashRegisters(const SimtOperand& op, const SimtTiling& tiling,
                           const std::string& buffer) {
  const mm::TileChunks chunks = StoredChunks(op, tiling);
  std::string code = OpenChunks(op, tiling, "");
  absl::StrAppend(&code, "    float* gtco_dst = gtco_s", op.name, " + (", buffer, ") * ",
                  tiling.bk * op.stride, " + ", SharedThreadOffset(op), ";\n");
  for (int64_t it = 0; it < chunks.Iterations(); ++it) {
    const std::string reg = absl::StrCat("gtco_r", op.name, "[", it * op.vw, " + ");
    if (op.k_contiguous || op.vw == 1) {
      for (int64_t e = 0; e < op.vw; ++e) {
        absl::StrAppend(&code, "    gtco_dst[", SharedOffset(op, chunks, it, e), "] = ", reg, e,
                        "];\n");
      }
      continue;
    }
    for (int64_t e = 0; e < op.vw; e += 4) {  // contiguous in shared memory too
      const int64_t offset = SharedOffset(op, chunks, it, e);
      if (op.vw - e >= 4) {
        absl::StrAppend(&code, "    *reinterpret_cast<float4*>(gtco_dst + ", offset,
                        ") = make_float4(", reg, e, "], ", reg, e + 1, "], ", reg, e + 2, "], ",
                        reg, e + 3, "]);\n");
      } else {
        absl::StrAppend(&code, "    *reinterpret_cast<float2*>(gtco_dst + ", offset,
                        ") = make_float2(", reg, e, "], ", reg, e + 1, "]);\n");
      }
    }
  }
  absl::StrAppend(&code, "    }\n  }\n");
  return code;
}

/// cp.async copies (f32 only) of K tile `kt` of `op` into buffer `buffer`: vw-element vectors of
/// a k-strided operand, single elements of a k-contiguous one (transposed on the way).
std::string CopyAsync(const SimtOperand& op, const SimtTiling& tiling, const ir::MatMulParams& p,
                      const std::string& buffer, const std::string& kt) {
  const mm::TileChunks chunks = StoredChunks(op, tiling);
  std::string code = OpenChunks(op, tiling, kt);
  absl::StrAppend(&code, "    const unsigned int gtco_dst = gtco_smem_base + ", op.smem_offset,
                  " + (", buffer, ") * ", tiling.bk * op.stride * 4, " + (", SharedThreadOffset(op),
                  ") * 4;\n");
  const int64_t bytes = op.vw * 4;
  for (int64_t it = 0; op.Gathered() && it < chunks.Iterations(); ++it) {
    absl::StrAppend(&code, "    {\n",
                    op.gather->emit(absl::StrCat("gtco_gr + ", chunks.RowOffset(it)),
                                    absl::StrCat("gtco_gc + ", chunks.ColOffset(it))),
                    "    gtco_cp_async4(gtco_dst + ", SharedOffset(op, chunks, it, 0) * 4,
                    ", gtco_src, gtco_ok ? 4 : 0);\n    }\n");
  }
  for (int64_t it = 0; !op.Gathered() && it < chunks.Iterations(); ++it) {
    const auto [ok, offset] = ChunkSource(op, tiling, p, it);
    absl::StrAppend(&code, "    gtco_cp_async", bytes, "(gtco_dst + ",
                    SharedOffset(op, chunks, it, 0) * 4, ", gtco_src + ", offset, ", (", ok, ") ? ",
                    bytes, " : 0);\n");
  }
  absl::StrAppend(&code, "    }\n  }\n");
  return code;
}

/// The FMA loop over buffer `buffer`.
std::string Compute(const SimtTiling& tiling, const SimtOperand& a, const SimtOperand& b,
                    const std::string& buffer) {
  const int64_t tx_count = tiling.ThreadsN(), ty_count = tiling.ThreadsM();
  std::string code = "  {\n";
  absl::StrAppend(&code, "    const float* gtco_as = gtco_sa + (", buffer, ") * ",
                  tiling.bk * a.stride, " + gtco_ty * 4;\n");
  absl::StrAppend(&code, "    const float* gtco_bs = gtco_sb + (", buffer, ") * ",
                  tiling.bk * b.stride, " + gtco_tx * 4;\n");
  absl::StrAppend(&code, "    #pragma unroll\n    for (int k = 0; k < ", tiling.bk, "; ++k) {\n");
  absl::StrAppend(&code, "      float gtco_fa[", tiling.tm, "], gtco_fb[", tiling.tn, "];\n");
  absl::StrAppend(&code, "      #pragma unroll\n      for (int r = 0; r < ", tiling.tm / 4,
                  "; ++r) {\n        const float4 gtco_v = *reinterpret_cast<const float4*>("
                  "gtco_as + k * ",
                  a.stride, " + r * ", 4 * ty_count,
                  ");\n        gtco_fa[r * 4] = gtco_v.x; gtco_fa[r * 4 + 1] = gtco_v.y; "
                  "gtco_fa[r * 4 + 2] = gtco_v.z; gtco_fa[r * 4 + 3] = gtco_v.w;\n      }\n");
  absl::StrAppend(&code, "      #pragma unroll\n      for (int c = 0; c < ", tiling.tn / 4,
                  "; ++c) {\n        const float4 gtco_v = *reinterpret_cast<const float4*>("
                  "gtco_bs + k * ",
                  b.stride, " + c * ", 4 * tx_count,
                  ");\n        gtco_fb[c * 4] = gtco_v.x; gtco_fb[c * 4 + 1] = gtco_v.y; "
                  "gtco_fb[c * 4 + 2] = gtco_v.z; gtco_fb[c * 4 + 3] = gtco_v.w;\n      }\n");
  absl::StrAppend(&code, "      #pragma unroll\n      for (int i = 0; i < ", tiling.tm,
                  "; ++i)\n        #pragma unroll\n        for (int j = 0; j < ", tiling.tn,
                  "; ++j) gtco_acc[i][j] = fmaf(gtco_fa[i], gtco_fb[j], gtco_acc[i][j]);\n");
  absl::StrAppend(&code, "    }\n  }\n");
  return code;
}

std::string RegisterPipeline(const SimtTiling& tiling, const ir::MatMulParams& p,
                             const SimtOperand& a, const SimtOperand& b) {
  const int64_t threads = tiling.Threads();
  std::string code;
  absl::StrAppend(&code, "  float gtco_ra[", CeilDiv(tiling.bk * a.tile / a.vw, threads) * a.vw,
                  "];\n");
  absl::StrAppend(&code, "  float gtco_rb[", CeilDiv(tiling.bk * b.tile / b.vw, threads) * b.vw,
                  "];\n");
  absl::StrAppend(&code, FetchToRegisters(a, tiling, p, "0"), FetchToRegisters(b, tiling, p, "0"));
  absl::StrAppend(&code, StashRegisters(a, tiling, "0"), StashRegisters(b, tiling, "0"));
  absl::StrAppend(&code, "  __syncthreads();\n");
  // Loads of tile kt+1 are in flight while tile kt is multiplied; the buffer written after the
  // multiply was last read in the previous iteration, before its closing barrier.
  absl::StrAppend(&code,
                  "  #pragma unroll 1\n  for (int gtco_kt = 0; gtco_kt < kTiles; ++gtco_kt) {\n");
  absl::StrAppend(&code, "  const bool gtco_more = gtco_kt + 1 < kTiles;\n");
  absl::StrAppend(&code, "  if (gtco_more) {\n", FetchToRegisters(a, tiling, p, "gtco_kt + 1"),
                  FetchToRegisters(b, tiling, p, "gtco_kt + 1"), "  }\n");
  absl::StrAppend(&code, Compute(tiling, a, b, "gtco_kt & 1"));
  absl::StrAppend(&code, "  if (gtco_more) {\n", StashRegisters(a, tiling, "(gtco_kt + 1) & 1"),
                  StashRegisters(b, tiling, "(gtco_kt + 1) & 1"), "  }\n");
  absl::StrAppend(&code, "  __syncthreads();\n  }\n");
  return code;
}

std::string AsyncPipeline(const SimtTiling& tiling, const ir::MatMulParams& p, const SimtOperand& a,
                          const SimtOperand& b) {
  const int stages = tiling.stages;
  std::string code;
  absl::StrAppend(
      &code, "  #pragma unroll\n  for (int gtco_s = 0; gtco_s < ", stages - 1,
      "; ++gtco_s) {\n    if (gtco_s < kTiles) {\n", CopyAsync(a, tiling, p, "gtco_s", "gtco_s"),
      CopyAsync(b, tiling, p, "gtco_s", "gtco_s"), "    }\n    gtco_cp_async_commit();\n  }\n");
  absl::StrAppend(&code,
                  "  #pragma unroll 1\n  for (int gtco_kt = 0; gtco_kt < kTiles; ++gtco_kt) {\n");
  absl::StrAppend(&code, "  gtco_cp_async_wait<", stages - 2, ">();\n  __syncthreads();\n");
  absl::StrAppend(&code, "  {\n  const int gtco_next = gtco_kt + ", stages - 1,
                  ";\n  if (gtco_next < kTiles) {\n",
                  CopyAsync(a, tiling, p, absl::StrCat("gtco_next % ", stages), "gtco_next"),
                  CopyAsync(b, tiling, p, absl::StrCat("gtco_next % ", stages), "gtco_next"),
                  "  }\n  gtco_cp_async_commit();\n  }\n");
  absl::StrAppend(&code, Compute(tiling, a, b, absl::StrCat("gtco_kt % ", stages)));
  absl::StrAppend(&code, "  }\n");
  return code;
}

absl::Status CheckSimtValues(const ir::Workload& w, const SimtTiling& tiling) {
  namespace cm = cuda_matmul;
  const auto one_of = [](int64_t value, std::initializer_list<int64_t> allowed) {
    for (int64_t candidate : allowed) {
      if (value == candidate) return true;
    }
    return false;
  };
  const ir::MatMulParams& p = w.matmul;
  const bool async_ok =
      w.inputs[0].dtype == ir::DType::kF32 && w.inputs[1].dtype == ir::DType::kF32 &&
      (!cm::AKContiguous(p) || tiling.vw_a == 1) && (!cm::BKContiguous(p) || tiling.vw_b == 1);
  if (!one_of(tiling.bm, {32, 64, 128}) || !one_of(tiling.bn, {32, 64, 128}) ||
      !one_of(tiling.bk, {8, 16, 32}) || !one_of(tiling.tm, {4, 8}) || !one_of(tiling.tn, {4, 8}) ||
      tiling.stages < 1 || tiling.stages > 4 || (tiling.stages > 1 && !async_ok) ||
      tiling.Threads() > 1024 || !one_of(tiling.vw_a, {1, 2, 4, 8}) ||
      !one_of(tiling.vw_b, {1, 2, 4, 8}) || tiling.vw_a > cm::Vector16Elements(w.inputs[0].dtype) ||
      tiling.vw_b > cm::Vector16Elements(w.inputs[1].dtype) ||
      cm::AContiguousExtent(p) % tiling.vw_a != 0 || cm::BContiguousExtent(p) % tiling.vw_b != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unsupported cuda_mm_simt/v1 schedule bm=", tiling.bm, " bn=", tiling.bn, " bk=", tiling.bk,
        " tm=", tiling.tm, " tn=", tiling.tn, " stages=", tiling.stages, " vw_a=", tiling.vw_a,
        " vw_b=", tiling.vw_b, " for ", w.Description()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> GenerateSimtMatMul(const ir::Workload& w, const KnobValues& values,
                                               const CudaPlan& plan, const std::string& entry) {
  GTCO_RETURN_IF_ERROR(cuda_matmul::CheckCudaMatMul(w));
  return EmitSimtMatMul(w, values, plan, entry, mm::MatMulOperands{});
}

absl::StatusOr<std::string> EmitSimtMatMul(const ir::Workload& w, const KnobValues& values,
                                           const CudaPlan& plan, const std::string& entry,
                                           const mm::MatMulOperands& operands) {
  namespace cm = cuda_matmul;
  if (!cm::IsFloatDType(w.inputs[0].dtype) || !cm::IsFloatDType(w.inputs[1].dtype) ||
      !cm::IsFloatDType(w.output.dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat("cuda_mm_simt/v1 needs floating-point operands, not ", w.Description()));
  }
  if (values.size() != 8) {
    return absl::InvalidArgumentError("cuda_mm_simt/v1 expects 8 decisions");
  }
  const SimtTiling tiling = cm::MakeSimtTiling(values);
  GTCO_RETURN_IF_ERROR(CheckSimtValues(w, tiling));
  if (plan.Threads() != tiling.Threads()) {
    return absl::InvalidArgumentError("cuda_mm_simt/v1: plan and knobs disagree");
  }
  const ir::MatMulParams& p = w.matmul;
  if (operands.b_gather.active() &&
      (cm::BKContiguous(p) || tiling.vw_b != 1 || w.inputs[1].dtype != ir::DType::kF32)) {
    return absl::InvalidArgumentError(
        "cuda_mm_simt/v1: a gathered B must be f32, stored [K, N] and copied with vw_b=1");
  }
  const SimtOperand a{"a",         "gtco_a",         w.inputs[0].dtype, cm::AKContiguous(p),
                      p.m,         "gtco_block_m",   tiling.bm,         tiling.AStride(),
                      tiling.vw_a, /*smem_offset=*/0};
  const SimtOperand b{"b",
                      "gtco_b",
                      w.inputs[1].dtype,
                      cm::BKContiguous(p),
                      p.n,
                      "gtco_block_n",
                      tiling.bn,
                      tiling.BStride(),
                      tiling.vw_b,
                      /*smem_offset=*/tiling.Buffers() * tiling.bk * tiling.AStride() * 4,
                      &operands.b_gather};

  std::string code = Prelude();
  if (tiling.stages > 1) absl::StrAppend(&code, AsyncCopyHelpers());
  GTCO_ASSIGN_OR_RETURN(const std::string store, EmitStoreFunction(w, 4));
  absl::StrAppend(&code, store, "\n");
  absl::StrAppend(&code, MatMulKernelSignature(w, entry, static_cast<int>(tiling.Threads())),
                  " {\n");
  absl::StrAppend(&code, "  extern __shared__ __align__(16) unsigned char gtco_smem[];\n");
  absl::StrAppend(&code, EmitMatMulPreamble(w, tiling.bm, tiling.bn, operands));
  absl::StrAppend(&code, "  constexpr int kTiles = ", CeilDiv(p.k, tiling.bk), ";\n");
  absl::StrAppend(&code, "  const int gtco_tx = threadIdx.x % ", tiling.ThreadsN(), ";\n");
  absl::StrAppend(&code, "  const int gtco_ty = threadIdx.x / ", tiling.ThreadsN(), ";\n");
  if (tiling.stages > 1) absl::StrAppend(&code, mm::EmitSharedBase());
  absl::StrAppend(&code, "  float* const gtco_sa = reinterpret_cast<float*>(gtco_smem);\n");
  absl::StrAppend(&code, "  float* const gtco_sb = gtco_sa + ",
                  tiling.Buffers() * tiling.bk * tiling.AStride(), ";\n");
  absl::StrAppend(&code, "  float gtco_acc[", tiling.tm, "][", tiling.tn, "];\n");
  absl::StrAppend(&code, "  #pragma unroll\n  for (int i = 0; i < ", tiling.tm,
                  "; ++i)\n    #pragma unroll\n    for (int j = 0; j < ", tiling.tn,
                  "; ++j) gtco_acc[i][j] = 0.0f;\n");
  absl::StrAppend(&code, tiling.stages == 1 ? RegisterPipeline(tiling, p, a, b)
                                            : AsyncPipeline(tiling, p, a, b));
  // Each thread stores rows r*4*TY + 4*ty + i and four adjacent columns per c.
  absl::StrAppend(&code, "  #pragma unroll\n  for (int r = 0; r < ", tiling.tm / 4,
                  "; ++r)\n  #pragma unroll\n  for (int i = 0; i < 4; ++i)\n"
                  "  #pragma unroll\n  for (int c = 0; c < ",
                  tiling.tn / 4, "; ++c) {\n");
  absl::StrAppend(&code, "    const int gtco_i = gtco_block_m + r * ", 4 * tiling.ThreadsM(),
                  " + gtco_ty * 4 + i;\n");
  absl::StrAppend(&code, "    const int gtco_j = gtco_block_n + c * ", 4 * tiling.ThreadsN(),
                  " + gtco_tx * 4;\n");
  absl::StrAppend(
      &code, "    ",
      EmitStoreCall(w, "gtco_i", "gtco_j",
                    {"gtco_acc[r * 4 + i][c * 4]", "gtco_acc[r * 4 + i][c * 4 + 1]",
                     "gtco_acc[r * 4 + i][c * 4 + 2]", "gtco_acc[r * 4 + i][c * 4 + 3]"}));
  absl::StrAppend(&code, "  }\n}\n");
  return code;
}

}  // namespace gtco::kernels
