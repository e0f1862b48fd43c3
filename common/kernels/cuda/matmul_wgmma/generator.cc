// CUDA C generator of "cuda_mm_wgmma/v1" (sm_90a): a block of 1 or 2 warpgroups computes a
// bm x bn output tile of one batch with wgmma.mma_async.m64n<bn>k16 (f16 or bf16 inputs, f32
// accumulators in registers). Operand tiles are staged by a `stages`-deep cp.async pipeline into
// 128-byte-swizzled shared memory in their global orientation: K-major tiles (A, and B when
// trans_b) as rows of 64 k-elements, MN-major tiles (A when trans_a, B otherwise) as 64-element
// column blocks of 64 k-rows read with the descriptor's transpose bit. The epilogue runs on the
// accumulator registers and stores element pairs with bounds checks.
//
// Pipeline invariant: at most one wgmma group is in flight (wgmma.wait_group 1 after each k step),
// so once every thread passed the barrier of step kt, stage (kt - 2) % stages is free: step kt
// refills it with tile kt + stages - 2.
#include "common/kernels/cuda/matmul_wgmma/generator.h"

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

/// Bytes of one 128-byte-swizzle row and of one 8-row swizzle atom.
constexpr int kSwizzleRowBytes = 128;
constexpr int kSwizzleAtomBytes = 1024;
/// Bytes between the 64-element column blocks of an MN-major tile of 64 k-rows.
constexpr int kMnBlockBytes = 64 * kSwizzleRowBytes;

/// Device wrappers of the wgmma instructions, descriptors and the proxy fence for `c`.
std::string WgmmaWrappers(const WgmmaMatMulConfig& c) {
  const int regs = static_cast<int>(c.bn / 2);  // f32 accumulators per thread of one m64 tile
  const char* type = c.input == ir::DType::kBF16 ? "bf16" : "f16";
  // imm-trans-a/b = 1 reads an MN-major operand: A when trans_a, B when it is not trans_b.
  const int trans_a = c.trans_a ? 1 : 0, trans_b = c.trans_b ? 0 : 1;
  std::string code = R"(/// wgmma shared-memory matrix descriptor: start address, leading and stride
/// byte offsets (all >> 4, 14 bits each), 128-byte swizzle (mode 1 in bits 62-63), base offset 0
/// (the swizzle atoms are 1024-byte aligned).
__device__ __forceinline__ unsigned long long gtco_wgmma_desc(unsigned int addr, unsigned int lbo,
                                                              unsigned int sbo) {
  return (unsigned long long)((addr & 0x3FFFFu) >> 4) |
         ((unsigned long long)((lbo >> 4) & 0x3FFFu) << 16) |
         ((unsigned long long)((sbo >> 4) & 0x3FFFu) << 32) | (1ull << 62);
}
__device__ __forceinline__ void gtco_wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void gtco_wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int kPending>
__device__ __forceinline__ void gtco_wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" :: "n"(kPending) : "memory");
}
/// Makes this thread's completed shared-memory writes visible to the async proxy (wgmma reads).
__device__ __forceinline__ void gtco_fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
)";
  absl::StrAppend(&code, "__device__ __forceinline__ void gtco_wgmma(float (&d)[", regs,
                  "], unsigned long long desc_a, unsigned long long desc_b) {\n",
                  "  asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %", regs + 2,
                  ", 0;\\n\"\n               \"wgmma.mma_async.sync.aligned.m64n", c.bn, "k16.f32.",
                  type, ".", type, " ", AsmRegisterList(0, regs), ", %", regs, ", %", regs + 1,
                  ", p, 1, 1, ", trans_a, ", ", trans_b,
                  ";\\n}\\n\"\n               : ", AsmOperands("+f", "d", regs),
                  "\n               : \"l\"(desc_a), \"l\"(desc_b), \"r\"(1));\n}\n");
  return code;
}

/// The kernel body; @KEY@ fields are filled by GenerateWgmmaMatMul.
constexpr const char kBody[] = R"( {
  extern __shared__ __align__(1024) unsigned char gtco_smem[];
  constexpr int kM = @M@, kN = @N@, kK = @K@;
  constexpr int kBM = @BM@, kBN = @BN@, kBK = 64, kStages = @STAGES@, kMTiles = @M_TILES@;
  constexpr int kKTiles = (kK + kBK - 1) / kBK;
  constexpr unsigned int kABytes = kBM * kBK * 2, kStageBytes = kABytes + kBN * kBK * 2;
  // The swizzle atoms must start on 1024-byte boundaries: align the base (the plan requests
  // 1024 bytes of slack).
  const unsigned int raw_base = gtco_smem_addr(gtco_smem);
  const unsigned int smem_base = (raw_base + 1023u) & ~1023u;
  unsigned char* const smem = gtco_smem + (smem_base - raw_base);
  const int tid = threadIdx.x, warpgroup = tid >> 7;
@RASTERIZATION@  const int m0 = tile_row * kBM, n0 = tile_col * kBN, batch = blockIdx.z;
  const unsigned short* __restrict__ a_src = in0 + @A_BATCH_OFFSET@;
  const unsigned short* __restrict__ b_src = in1 + @B_BATCH_OFFSET@;
@OUTPUT_LAMBDAS@
  float acc[kMTiles][kBN / 2];
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int e = 0; e < kBN / 2; ++e) acc[mt][e] = 0.0f;

#pragma unroll
  for (int s = 0; s < kStages - 2; ++s) {
    if (s < kKTiles) {
      gtco_load_a(smem + s * kStageBytes, a_src, @A_ORIGIN(s * kBK)@, tid);
      gtco_load_b(smem + s * kStageBytes + kABytes, b_src, @B_ORIGIN(s * kBK)@, tid);
    }
    gtco_cp_async_commit();
  }
  // Descriptors of stage 0: this warpgroup's first m64 tile of A (64 rows = @A_MTILE_BYTES@
  // bytes in either orientation), and all of B.
  const unsigned long long desc_a =
      gtco_wgmma_desc(smem_base + warpgroup * (kMTiles * @A_MTILE_BYTES@u), @A_LBO@u, @SBO@u);
  const unsigned long long desc_b = gtco_wgmma_desc(smem_base + kABytes, @B_LBO@u, @SBO@u);
  for (int kt = 0; kt < kKTiles; ++kt) {
    gtco_cp_async_wait<kStages - 3>();
    gtco_fence_proxy_async();
    __syncthreads();  // tile kt landed for everyone; wgmma groups of tile kt - 2 completed
    {
      const int next = kt + kStages - 2;
      if (next < kKTiles) {
        unsigned char* const stage = smem + (next % kStages) * kStageBytes;
        gtco_load_a(stage, a_src, @A_ORIGIN(next * kBK)@, tid);
        gtco_load_b(stage + kABytes, b_src, @B_ORIGIN(next * kBK)@, tid);
      }
      gtco_cp_async_commit();
    }
    __syncwarp();  // reconverge after the copies' bounds checks before .aligned MMAs
    // Descriptor addresses advance in 16-byte units.
    const unsigned long long stage_offset = (kt % kStages) * (kStageBytes >> 4);
    gtco_wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBK / 16; ++kk) {
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt) {
        gtco_wgmma(acc[mt], desc_a + stage_offset + (mt * @A_MTILE_BYTES@ + kk * @A_KSTEP@) / 16,
                   desc_b + stage_offset + (kk * @B_KSTEP@) / 16);
      }
    }
    gtco_wgmma_commit();
    gtco_wgmma_wait<1>();
  }
  gtco_wgmma_wait<0>();
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int e = 0; e < kBN / 2; ++e) asm volatile("" : "+f"(acc[mt][e]) :: "memory");

  // Accumulator layout of wgmma m64nNk16 (f32): warp w of the warpgroup holds rows 16w..16w+15;
  // register 4j + 2h + e holds row (lane / 4) + 8h, column 8j + 2 (lane % 4) + e.
  const int warp_in_group = (tid >> 5) & 3, lane = tid & 31;
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int m = m0 + (warpgroup * kMTiles + mt) * 64 + warp_in_group * 16 + half * 8 +
                    (lane >> 2);
      if (m < kM) {
        const long long row = (long long)batch * kM + m;
#pragma unroll
        for (int j = 0; j < kBN / 8; ++j) {
          gtco_store_pair(row, n0 + j * 8 + (lane & 3) * 2, acc[mt][j * 4 + half * 2],
                          acc[mt][j * 4 + half * 2 + 1]);
        }
      }
    }
}
)";

}  // namespace

absl::StatusOr<std::string> GenerateWgmmaMatMul(const ir::Workload& w, const KnobValues& values,
                                                const CudaPlan& plan, const std::string& entry) {
  GTCO_ASSIGN_OR_RETURN(const WgmmaMatMulConfig c, ResolveWgmmaMatMul(w, values));
  const ir::MatMulParams& p = w.matmul;
  // The launch grid (as in the plan): column tiles, row tiles, batches.
  const int64_t grid_x = (p.n + c.bn - 1) / c.bn, grid_y = (p.m + c.bm - 1) / c.bm;
  if (grid_y > cuda_matmul::kMaxGridYZ || p.batch > cuda_matmul::kMaxGridYZ) {
    return absl::InvalidArgumentError(absl::StrCat("matmul ", w.Description(), " needs grid ",
                                                   grid_x, "x", grid_y, "x", p.batch,
                                                   ", over the launch limit"));
  }
  const int threads = static_cast<int>(c.Threads());
  constexpr int64_t kBk = WgmmaMatMulConfig::kBk;
  // K-major tiles: rows = M (N) extent, 64 k columns. MN-major tiles: 64 k rows, M (N) columns.
  TileCopy a_copy{"gtco_load_a",           p.trans_a ? kBk : c.bm,
                  p.trans_a ? c.bm : kBk,  p.trans_a ? p.k : p.m,
                  p.trans_a ? p.m : p.k,   threads,
                  TileLayout::kSwizzle128, 0};
  TileCopy b_copy{"gtco_load_b",           p.trans_b ? c.bn : kBk,
                  p.trans_b ? kBk : c.bn,  p.trans_b ? p.n : p.k,
                  p.trans_b ? p.k : p.n,   threads,
                  TileLayout::kSwizzle128, 0};
  GTCO_ASSIGN_OR_RETURN(const std::string output_lambdas,
                        EmitOutputLambdas(w, OutputStore::kPairs));
  // (r0, c0) of a tile copy: k first when the operand's rows run along K.
  const auto origin = [](bool k_first, const char* tile_origin, const std::string& k) {
    return k_first ? absl::StrCat(k, ", ", tile_origin) : absl::StrCat(tile_origin, ", ", k);
  };
  // K-major: a 16-wide k step is 32 bytes along the swizzled row; the leading byte offset is
  // unused (encoded 1). MN-major: a k step is 16 rows; the leading byte offset steps between
  // 64-element column blocks. Both: 8-row groups (stride byte offset) are 1024 bytes apart.
  const bool a_mn_major = p.trans_a, b_mn_major = !p.trans_b;
  const auto k_step = [](bool mn_major) { return mn_major ? 16 * kSwizzleRowBytes : 32; };
  const auto lbo = [](bool mn_major) { return mn_major ? kMnBlockBytes : 16; };
  std::map<std::string, std::string> fields = {
      {"M", absl::StrCat(p.m)},
      {"N", absl::StrCat(p.n)},
      {"K", absl::StrCat(p.k)},
      {"BM", absl::StrCat(c.bm)},
      {"BN", absl::StrCat(c.bn)},
      {"STAGES", absl::StrCat(c.stages)},
      {"M_TILES", absl::StrCat(c.MTilesPerWarpgroup())},
      {"A_BATCH_OFFSET", p.a_batched ? "(long long)batch * kM * kK" : "0"},
      {"B_BATCH_OFFSET", p.b_batched ? "(long long)batch * kK * kN" : "0"},
      {"OUTPUT_LAMBDAS", output_lambdas},
      {"RASTERIZATION", EmitTileRasterization(grid_x, grid_y)},
      {"A_ORIGIN(s * kBK)", origin(p.trans_a, "m0", "s * kBK")},
      {"B_ORIGIN(s * kBK)", origin(!p.trans_b, "n0", "s * kBK")},
      {"A_ORIGIN(next * kBK)", origin(p.trans_a, "m0", "next * kBK")},
      {"B_ORIGIN(next * kBK)", origin(!p.trans_b, "n0", "next * kBK")},
      {"A_MTILE_BYTES", absl::StrCat(64 * kSwizzleRowBytes)},
      {"A_LBO", absl::StrCat(lbo(a_mn_major))},
      {"B_LBO", absl::StrCat(lbo(b_mn_major))},
      {"SBO", absl::StrCat(kSwizzleAtomBytes)},
      {"A_KSTEP", absl::StrCat(k_step(a_mn_major))},
      {"B_KSTEP", absl::StrCat(k_step(b_mn_major))},
  };
  return absl::StrCat(Prelude(), mm::AsyncCopyHelpers(), WgmmaWrappers(c), EmitTileCopy(a_copy),
                      EmitTileCopy(b_copy), KernelSignature(w, entry, threads),
                      FillTemplate(kBody, fields));
}

}  // namespace gtco::kernels
