// Operand tile copies, output stores with the fused epilogue, and inline-asm helpers for the
// Tensor Core matmul generators.
#include "common/kernels/cuda/matmul_common/matmul_tc_emit.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/codegen/cuda/cuda_source.h"
#include "common/kernels/cuda/matmul_common/matmul_kernel_util.h"
#include "common/kernels/family.h"
#include "common/util/status.h"

namespace gtco::kernels {
namespace {

/// Byte offset in the tile of element (r, c) as a C expression of ints `r` and `c`.
std::string TileOffset(const TileCopy& copy) {
  if (copy.layout == TileLayout::kPadded) {
    return absl::StrCat("(r * ", copy.cols + copy.pad, " + c) * 2");
  }
  return absl::StrCat("(c >> 6) * ", copy.rows * 128,
                      " + r * 128 + ((((c >> 3) & 7) ^ (r & 7)) << 4) + (c & 7) * 2");
}

std::string StoreRunLambda(const ir::Workload& w) {
  const ir::DType out = w.output.dtype;
  const int run = StoreRunLength(w);
  std::string code =
      "  auto gtco_store_run = [&](long long row, int col, const float* vals) {\n"
      "    const long long index = row * kN + col;\n";
  if (w.matmul.n % run == 0 &&
      (out == ir::DType::kF32 || out == ir::DType::kF16 || out == ir::DType::kBF16)) {
    absl::StrAppend(&code, "    if (col >= kN) return;\n");
    for (int v = 0; v < run; ++v) {
      absl::StrAppend(&code, "    const float r", v, " = gtco_apply(vals[", v, "], row, col + ", v,
                      ");\n");
    }
    if (out == ir::DType::kF32) {
      absl::StrAppend(&code,
                      "    *reinterpret_cast<gtco_f4*>(out + index) = gtco_f4{r0, r1, r2, r3};\n");
    } else {
      absl::StrAppend(&code, "    *reinterpret_cast<gtco_u4*>(out + index) = gtco_u4{",
                      mm::PackHalf2(out, "r0", "r1"), ", ", mm::PackHalf2(out, "r2", "r3"), ", ",
                      mm::PackHalf2(out, "r4", "r5"), ", ", mm::PackHalf2(out, "r6", "r7"), "};\n");
    }
  } else {
    absl::StrAppend(&code, "#pragma unroll\n    for (int v = 0; v < ", run,
                    "; ++v) {\n      if (col + v < kN) { ",
                    StoreFromFloat(out, "out", "index + v", "gtco_apply(vals[v], row, col + v)"),
                    " }\n    }\n");
  }
  absl::StrAppend(&code, "  };\n");
  return code;
}

std::string StorePairLambda(const ir::Workload& w) {
  const ir::DType out = w.output.dtype;
  std::string code =
      "  auto gtco_store_pair = [&](long long row, int col, float v0, float v1) {\n"
      "    const long long index = row * kN + col;\n";
  if (w.matmul.n % 2 == 0 &&
      (out == ir::DType::kF32 || out == ir::DType::kF16 || out == ir::DType::kBF16)) {
    absl::StrAppend(&code,
                    "    if (col >= kN) return;\n"
                    "    const float r0 = gtco_apply(v0, row, col);\n"
                    "    const float r1 = gtco_apply(v1, row, col + 1);\n");
    if (out == ir::DType::kF32) {
      absl::StrAppend(&code, "    *reinterpret_cast<gtco_f2*>(out + index) = gtco_f2{r0, r1};\n");
    } else {
      absl::StrAppend(&code, "    *reinterpret_cast<unsigned int*>(out + index) = ",
                      mm::PackHalf2(out, "r0", "r1"), ";\n");
    }
  } else {
    absl::StrAppend(&code, "    if (col < kN) { ",
                    StoreFromFloat(out, "out", "index", "gtco_apply(v0, row, col)"),
                    " }\n    if (col + 1 < kN) { ",
                    StoreFromFloat(out, "out", "index + 1", "gtco_apply(v1, row, col + 1)"),
                    " }\n");
  }
  absl::StrAppend(&code, "  };\n");
  return code;
}

/// 16-byte chunks into a padded tile: a pass of the block covers threads / (cols / 8) whole rows,
/// so every chunk of a thread lies at a constant offset from its first one (no per-chunk address
/// registers). Chunks past the matrix are zero-filled with src-size 0, for which cp.async reads
/// no source bytes (the address is not dereferenced, as for masked-off Triton / CUTLASS loads).
std::string PaddedChunkCopy(const TileCopy& copy) {
  const int64_t per_row = copy.cols / 8, rows_per_pass = copy.threads / per_row;
  const int64_t passes = (copy.rows + rows_per_pass - 1) / rows_per_pass;
  const int64_t row_bytes = (copy.cols + copy.pad) * 2;
  return absl::StrCat(
      "  const int r = tid / ", per_row, ", c = (tid % ", per_row, ") * 8;\n",
      "  const int rows_left = ", copy.global_rows, " - r0 - r;\n",
      "  const bool col_ok = c0 + c < ", copy.global_cols, ";\n",
      "  const unsigned short* g = src + (long long)(r0 + r) * ", copy.global_cols,
      " + (c0 + c);\n", "  const unsigned int s = gtco_smem_addr(dst) + (unsigned int)((r * ",
      copy.cols + copy.pad, " + c) * 2);\n#pragma unroll\n  for (int pass = 0; pass < ", passes,
      "; ++pass) {\n",
      copy.rows % rows_per_pass == 0
          ? ""
          : absl::StrCat("    if (r + pass * ", rows_per_pass, " >= ", copy.rows, ") break;\n"),
      "    gtco_cp_async16(s + pass * ", rows_per_pass * row_bytes, "u, g + (long long)pass * ",
      rows_per_pass * copy.global_cols, ", col_ok && pass * ", rows_per_pass,
      " < rows_left ? 16 : 0);\n  }\n");
}

/// 16-byte chunks into a 128-byte-swizzled tile, viewed as [cols / 64 blocks][rows][8 chunks]:
/// thread t always copies chunk t % 8 of rows t / 8 + pass * (threads / 8), a multiple of 8 rows
/// apart, so its swizzle phase (row % 8) and thus its offsets within each block are constant.
/// Eight consecutive threads read one 128-byte row segment.
std::string SwizzledChunkCopy(const TileCopy& copy) {
  const int64_t rows_per_pass = copy.threads / 8;
  const int64_t passes_per_block = copy.rows / rows_per_pass, blocks = copy.cols / 64;
  return absl::StrCat(
      "  const int j = tid & 7, r = tid >> 3;\n", "  const int rows_left = ", copy.global_rows,
      " - r0 - r;\n", "  const int cols_left = ", copy.global_cols, " - c0 - j * 8;\n",
      "  const unsigned short* g = src + (long long)(r0 + r) * ", copy.global_cols,
      " + (c0 + j * 8);\n",
      "  const unsigned int s = gtco_smem_addr(dst) + r * 128 + ((j ^ (r & 7)) << 4);\n",
      "#pragma unroll\n  for (int block = 0; block < ", blocks, "; ++block) {\n",
      "#pragma unroll\n    for (int pass = 0; pass < ", passes_per_block, "; ++pass) {\n",
      "      gtco_cp_async16(s + block * ", copy.rows * 128, "u + pass * ", rows_per_pass * 128,
      "u, g + (long long)pass * ", rows_per_pass * copy.global_cols, " + block * 64, pass * ",
      rows_per_pass, " < rows_left && block * 64 < cols_left ? 16 : 0);\n", "    }\n  }\n");
}

/// One element per copy, synchronously (operands whose rows are not 16-byte multiples).
std::string ElementCopy(const TileCopy& copy) {
  const int64_t elements = copy.rows * copy.cols;
  return absl::StrCat(
      "#pragma unroll 8\n", "  for (int i = 0; i < ", (elements + copy.threads - 1) / copy.threads,
      "; ++i) {\n", "    const int e = tid + i * ", copy.threads, ";\n",
      elements % copy.threads == 0 ? "" : absl::StrCat("    if (e >= ", elements, ") break;\n"),
      "    const int r = e / ", copy.cols, ", c = e % ", copy.cols, ";\n",
      "    const int gr = r0 + r, gc = c0 + c;\n", "    const bool valid = gr < ", copy.global_rows,
      " && gc < ", copy.global_cols, ";\n", "    *reinterpret_cast<unsigned short*>(dst + (",
      TileOffset(copy), ")) = valid ? src[(long long)gr * ", copy.global_cols,
      " + gc] : (unsigned short)0;\n", "  }\n");
}

}  // namespace

std::string EmitTileCopy(const TileCopy& copy) {
  std::string code = absl::StrCat(
      "__device__ __forceinline__ void ", copy.name,
      "(unsigned char* dst, const unsigned short* __restrict__ src, int r0, int c0, int tid) {\n");
  const bool aligned = copy.global_cols % 8 == 0 && copy.cols % 8 == 0;
  if (aligned && copy.layout == TileLayout::kPadded && copy.threads % (copy.cols / 8) == 0) {
    absl::StrAppend(&code, PaddedChunkCopy(copy));
  } else if (aligned && copy.layout == TileLayout::kSwizzle128 && copy.cols % 64 == 0 &&
             copy.threads % 64 == 0 && copy.rows % (copy.threads / 8) == 0) {
    absl::StrAppend(&code, SwizzledChunkCopy(copy));
  } else {
    absl::StrAppend(&code, ElementCopy(copy));
  }
  absl::StrAppend(&code, "}\n");
  return code;
}

std::string EmitTileRasterization(int64_t grid_x, int64_t grid_y) {
  constexpr int64_t kGroupRows = 8;
  if (grid_x == 1 || grid_y == 1) {
    return "  const int tile_row = blockIdx.y, tile_col = blockIdx.x;\n";
  }
  const int64_t group_blocks = kGroupRows * grid_x;
  return absl::StrCat("  const int linear_block = blockIdx.y * ", grid_x, " + blockIdx.x;\n",
                      "  const int first_row = linear_block / ", group_blocks, " * ", kGroupRows,
                      ";\n", "  const int group_rows = ", grid_y, " - first_row < ", kGroupRows,
                      " ? ", grid_y, " - first_row : ", kGroupRows, ";\n",
                      "  const int in_group = linear_block % ", group_blocks, ";\n",
                      "  const int tile_row = first_row + in_group % group_rows, tile_col = "
                      "in_group / group_rows;\n");
}

int StoreRunLength(const ir::Workload& w) { return w.output.dtype == ir::DType::kF32 ? 4 : 8; }

absl::StatusOr<std::string> EmitOutputLambdas(const ir::Workload& w, OutputStore store) {
  GTCO_ASSIGN_OR_RETURN(const std::string epilogue, EmitEpilogue(w, "acc", "row", "col"));
  std::string code =
      "  auto gtco_apply = [&](float acc, long long row, int col) -> float {\n"
      "    (void)row; (void)col;\n";
  absl::StrAppend(&code, "    ", absl::StrReplaceAll(epilogue, {{"\n", "\n    "}}),
                  "return result;\n  };\n");
  absl::StrAppend(&code, store == OutputStore::kPairs ? StorePairLambda(w) : StoreRunLambda(w));
  return code;
}

std::string AsmRegisterList(int first, int count) {
  std::string list = "{";
  for (int reg = 0; reg < count; ++reg) {
    absl::StrAppend(&list, reg == 0 ? "" : ", ", "%", first + reg);
  }
  return list + "}";
}

std::string AsmOperands(const std::string& constraint, const std::string& name, int count) {
  std::string list;
  for (int idx = 0; idx < count; ++idx) {
    absl::StrAppend(&list, idx == 0 ? "" : ", ", "\"", constraint, "\"(", name, "[", idx, "])");
  }
  return list;
}

std::string FillTemplate(const std::string& text,
                         const std::map<std::string, std::string>& values) {
  std::string filled = text;
  for (const auto& [key, value] : values) {
    filled = absl::StrReplaceAll(filled, {{absl::StrCat("@", key, "@"), value}});
  }
  return filled;
}

}  // namespace gtco::kernels
