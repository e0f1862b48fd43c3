// CUDA C generator of "cuda_mm_wmma/v1": a block computes a bm x bn output tile of one batch with
// warps of (wm/16) x (wn/16) wmma.m16n16k16 fragments (f16 or bf16 inputs, f32 accumulators),
// operand tiles staged in padded shared memory by a `stages`-deep cp.async pipeline, and the
// accumulators stored through shared memory so that the epilogue and bounds checks apply per
// element with 16-byte output stores.
#include "common/kernels/cuda/matmul_wmma/generator.h"

#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/codegen/cuda/cuda_source.h"
#include "common/kernels/cuda/matmul_common/cuda_matmul_common.h"
#include "common/kernels/cuda/matmul_common/cuda_matmul_tc.h"
#include "common/kernels/cuda/matmul_common/matmul_kernel_util.h"
#include "common/kernels/cuda/matmul_common/matmul_tc_emit.h"
#include "common/kernels/family.h"
#include "common/util/status.h"

namespace gtco::kernels {
namespace {

/// Device wrappers of wmma.load.a/.b (from shared memory, in the operands' global orientation),
/// wmma.mma and wmma.store.d for configuration `c`.
std::string WmmaWrappers(const WmmaMatMulConfig& c) {
  const bool bf16 = c.input == ir::DType::kBF16;
  const int regs = bf16 ? 4 : 8;  // 32-bit registers of an A or B fragment
  const char* type = bf16 ? "bf16" : "f16";
  const char* a_layout = c.trans_a ? "col" : "row";
  const char* b_layout = c.trans_b ? "col" : "row";
  std::string code;
  for (const auto& [operand, layout] : {std::pair<const char*, const char*>{"a", a_layout},
                                        std::pair<const char*, const char*>{"b", b_layout}}) {
    absl::StrAppend(&code, "__device__ __forceinline__ void gtco_wmma_load_", operand,
                    "(unsigned int (&f)[", regs, "], unsigned int addr, int stride) {\n",
                    "  asm volatile(\"wmma.load.", operand, ".sync.aligned.", layout,
                    ".m16n16k16.shared.", type, " ", AsmRegisterList(0, regs), ", [%", regs, "], %",
                    regs + 1, ";\\n\"\n               : ", AsmOperands("=r", "f", regs),
                    "\n               : \"r\"(addr), \"r\"(stride) : \"memory\");\n}\n");
  }
  // f16: .dtype.ctype = .f32.f32; bf16: .f32.bf16.bf16.f32.
  const std::string types = bf16 ? "f32.bf16.bf16.f32" : "f32.f32";
  absl::StrAppend(
      &code,
      "__device__ __forceinline__ void gtco_wmma_mma(float (&d)[8], const unsigned int (&a)[", regs,
      "], const unsigned int (&b)[", regs, "]) {\n", "  asm volatile(\"wmma.mma.sync.aligned.",
      a_layout, ".", b_layout, ".m16n16k16.", types, " ", AsmRegisterList(0, 8), ", ",
      AsmRegisterList(8, regs), ", ", AsmRegisterList(8 + regs, regs), ", ", AsmRegisterList(0, 8),
      ";\\n\"\n               : ", AsmOperands("+f", "d", 8),
      "\n               : ", AsmOperands("r", "a", regs), ", ", AsmOperands("r", "b", regs),
      ");\n}\n");
  absl::StrAppend(
      &code,
      "__device__ __forceinline__ void gtco_wmma_store(unsigned int addr, const float (&d)[8], "
      "int stride) {\n  asm volatile(\"wmma.store.d.sync.aligned.row.m16n16k16.shared.f32 [%0], ",
      AsmRegisterList(1, 8), ", %9;\\n\"\n               :: \"r\"(addr), ",
      AsmOperands("f", "d", 8), ", \"r\"(stride) : \"memory\");\n}\n");
  return code;
}

/// The kernel body; @KEY@ fields are filled by GenerateWmmaMatMul.
constexpr const char kBody[] = R"( {
  extern __shared__ __align__(128) unsigned char gtco_smem[];
  constexpr int kM = @M@, kN = @N@, kK = @K@;
  constexpr int kBM = @BM@, kBN = @BN@, kBK = @BK@, kWM = @WM@, kWN = @WN@;
  constexpr int kStages = @STAGES@, kThreads = @THREADS@, kWarpsN = kBN / kWN;
  constexpr int kFragM = kWM / 16, kFragN = kWN / 16, kOperandRegs = @OPERAND_REGS@;
  constexpr int kKTiles = (kK + kBK - 1) / kBK;
  constexpr int kAStride = @A_STRIDE@, kBStride = @B_STRIDE@, kOutStride = kBN + @OUT_PAD@;
  constexpr unsigned int kABytes = @A_BYTES@, kStageBytes = kABytes + @B_BYTES@;
  const int tid = threadIdx.x, warp = tid >> 5;
  const int warp_m = warp / kWarpsN, warp_n = warp % kWarpsN;
@RASTERIZATION@  const int m0 = tile_row * kBM, n0 = tile_col * kBN, batch = blockIdx.z;
  const unsigned short* __restrict__ a_src = in0 + @A_BATCH_OFFSET@;
  const unsigned short* __restrict__ b_src = in1 + @B_BATCH_OFFSET@;
  const unsigned int smem_base = gtco_smem_addr(gtco_smem);
@OUTPUT_LAMBDAS@
  float acc[kFragM][kFragN][8];
#pragma unroll
  for (int i = 0; i < kFragM; ++i)
#pragma unroll
    for (int j = 0; j < kFragN; ++j)
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[i][j][e] = 0.0f;

  // Pipeline: tile kt is copied into stage kt % kStages, kStages - 1 tiles ahead of the math.
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < kKTiles) {
      gtco_load_a(gtco_smem + s * kStageBytes, a_src, @A_ORIGIN(s * kBK)@, tid);
      gtco_load_b(gtco_smem + s * kStageBytes + kABytes, b_src, @B_ORIGIN(s * kBK)@, tid);
    }
    gtco_cp_async_commit();
  }
  for (int kt = 0; kt < kKTiles; ++kt) {
    gtco_cp_async_wait<kStages - 2>();
    __syncthreads();  // tile kt landed for every thread; tile kt - 1 is no longer read
    {
      const int next = kt + kStages - 1;
      if (next < kKTiles) {
        unsigned char* const stage = gtco_smem + (next % kStages) * kStageBytes;
        gtco_load_a(stage, a_src, @A_ORIGIN(next * kBK)@, tid);
        gtco_load_b(stage + kABytes, b_src, @B_ORIGIN(next * kBK)@, tid);
      }
      gtco_cp_async_commit();
    }
    __syncwarp();  // reconverge after the copies' bounds checks before .aligned MMAs
    const unsigned int a_stage = smem_base + (kt % kStages) * kStageBytes;
    const unsigned int b_stage = a_stage + kABytes;
#pragma unroll
    for (int kk = 0; kk < kBK / 16; ++kk) {
      unsigned int a_frag[kFragM][kOperandRegs], b_frag[kFragN][kOperandRegs];
#pragma unroll
      for (int i = 0; i < kFragM; ++i) {
        const int m = warp_m * kWM + i * 16;
        gtco_wmma_load_a(a_frag[i], a_stage + (@A_FRAG_ELEMENT@) * 2, kAStride);
      }
#pragma unroll
      for (int j = 0; j < kFragN; ++j) {
        const int n = warp_n * kWN + j * 16;
        gtco_wmma_load_b(b_frag[j], b_stage + (@B_FRAG_ELEMENT@) * 2, kBStride);
      }
#pragma unroll
      for (int i = 0; i < kFragM; ++i)
#pragma unroll
        for (int j = 0; j < kFragN; ++j) gtco_wmma_mma(acc[i][j], a_frag[i], b_frag[j]);
    }
  }
  gtco_cp_async_wait<0>();
  __syncthreads();  // the pipeline's memory becomes the f32 output tile

#pragma unroll
  for (int i = 0; i < kFragM; ++i)
#pragma unroll
    for (int j = 0; j < kFragN; ++j) {
      const int row = warp_m * kWM + i * 16, col = warp_n * kWN + j * 16;
      gtco_wmma_store(smem_base + (row * kOutStride + col) * 4, acc[i][j], kOutStride);
    }
  __syncthreads();

  const float* const tile = reinterpret_cast<const float*>(gtco_smem);
  constexpr int kRun = @RUN@, kRunsPerRow = kBN / kRun;
#pragma unroll
  for (int i = 0; i < kBM * kRunsPerRow / kThreads; ++i) {
    const int run = tid + i * kThreads;
    const int r = run / kRunsPerRow, c = (run % kRunsPerRow) * kRun;
    if (m0 + r < kM) {
      gtco_store_run((long long)batch * kM + m0 + r, n0 + c, tile + r * kOutStride + c);
    }
  }
}
)";

}  // namespace

absl::StatusOr<std::string> GenerateWmmaMatMul(const ir::Workload& w, const KnobValues& values,
                                               const CudaPlan& plan, const std::string& entry) {
  GTCO_ASSIGN_OR_RETURN(const WmmaMatMulConfig c, ResolveWmmaMatMul(w, values));
  const ir::MatMulParams& p = w.matmul;
  // The launch grid (as in the plan): column tiles, row tiles, batches.
  const int64_t grid_x = (p.n + c.bn - 1) / c.bn, grid_y = (p.m + c.bm - 1) / c.bm;
  if (grid_y > cuda_matmul::kMaxGridYZ || p.batch > cuda_matmul::kMaxGridYZ) {
    return absl::InvalidArgumentError(absl::StrCat("matmul ", w.Description(), " needs grid ",
                                                   grid_x, "x", grid_y, "x", p.batch,
                                                   ", over the launch limit"));
  }
  const int threads = static_cast<int>(c.Threads());
  // A is M x K (K x M when transposed), B is K x N (N x K when transposed), row-major.
  TileCopy a_copy{
      "gtco_load_a",         c.ASmemRows(), c.ASmemStride() - c.kPad, p.trans_a ? p.k : p.m,
      p.trans_a ? p.m : p.k, threads,       TileLayout::kPadded,      c.kPad};
  TileCopy b_copy{
      "gtco_load_b",         c.BSmemRows(), c.BSmemStride() - c.kPad, p.trans_b ? p.n : p.k,
      p.trans_b ? p.k : p.n, threads,       TileLayout::kPadded,      c.kPad};
  GTCO_ASSIGN_OR_RETURN(const std::string output_lambdas, EmitOutputLambdas(w, OutputStore::kRuns));
  // (r0, c0) of a tile copy: k first when the operand's rows run along K.
  const auto origin = [](bool k_first, const char* tile_origin, const std::string& k) {
    return k_first ? absl::StrCat(k, ", ", tile_origin) : absl::StrCat(tile_origin, ", ", k);
  };
  std::map<std::string, std::string> fields = {
      {"M", absl::StrCat(p.m)},
      {"N", absl::StrCat(p.n)},
      {"K", absl::StrCat(p.k)},
      {"BM", absl::StrCat(c.bm)},
      {"BN", absl::StrCat(c.bn)},
      {"BK", absl::StrCat(c.bk)},
      {"WM", absl::StrCat(c.wm)},
      {"WN", absl::StrCat(c.wn)},
      {"STAGES", absl::StrCat(c.stages)},
      {"THREADS", absl::StrCat(threads)},
      {"OPERAND_REGS", c.input == ir::DType::kBF16 ? "4" : "8"},
      {"A_STRIDE", absl::StrCat(c.ASmemStride())},
      {"B_STRIDE", absl::StrCat(c.BSmemStride())},
      {"OUT_PAD", absl::StrCat(c.kOutPad)},
      {"A_BYTES", absl::StrCat(c.AStageBytes(), "u")},
      {"B_BYTES", absl::StrCat(c.BStageBytes(), "u")},
      {"A_BATCH_OFFSET", p.a_batched ? "(long long)batch * kM * kK" : "0"},
      {"B_BATCH_OFFSET", p.b_batched ? "(long long)batch * kK * kN" : "0"},
      {"OUTPUT_LAMBDAS", output_lambdas},
      {"RASTERIZATION", EmitTileRasterization(grid_x, grid_y)},
      {"A_ORIGIN(s * kBK)", origin(p.trans_a, "m0", "s * kBK")},
      {"B_ORIGIN(s * kBK)", origin(!p.trans_b, "n0", "s * kBK")},
      {"A_ORIGIN(next * kBK)", origin(p.trans_a, "m0", "next * kBK")},
      {"B_ORIGIN(next * kBK)", origin(!p.trans_b, "n0", "next * kBK")},
      // Fragment origin (element index in the stage): row-major A is [m][k], transposed [k][m];
      // row-major B is [k][n], transposed [n][k].
      {"A_FRAG_ELEMENT", p.trans_a ? "kk * 16 * kAStride + m" : "m * kAStride + kk * 16"},
      {"B_FRAG_ELEMENT", p.trans_b ? "n * kBStride + kk * 16" : "kk * 16 * kBStride + n"},
      {"RUN", absl::StrCat(StoreRunLength(w))},
  };
  return absl::StrCat(Prelude(), mm::AsyncCopyHelpers(), WmmaWrappers(c), EmitTileCopy(a_copy),
                      EmitTileCopy(b_copy), KernelSignature(w, entry, threads),
                      FillTemplate(kBody, fields));
}

}  // namespace gtco::kernels
