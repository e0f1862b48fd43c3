// What the CUDA matmul sketches (cuda_matmul_{simt,tf32,mma}_sketch.cc) and their code
// generators (common/codegen/cuda/matmul_*_gen.cc) agree on: operand layouts, vector widths,
// the shared-memory tiling of the tensor-core kernels, the "exceeds_shape" rule, and the choice
// of a default schedule. Keeping these here makes a plan's shared memory and the generated
// kernel's layout one computation.
//
// Operand terms: A is stored [M, K] ("k-contiguous") or, with trans_a, [K, M]; B is stored
// [K, N] or, with trans_b, [N, K] ("k-contiguous"). Every kernel copies a tile of each operand
// into shared memory row by row of the stored layout, in chunks of `vw` consecutive elements.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/ir/workload.h"
#include "common/kernels/family.h"
#include "common/schedule/cuda_sketch.h"
#include "common/schedule/sketch.h"
#include "common/target/target.h"

namespace gtco::kernels::cuda_matmul {

/// Largest grid dimension y and z a launch may use.
constexpr int64_t kMaxGridYZ = 65535;

/// True when A is stored with K contiguous (not trans_a).
inline bool AKContiguous(const ir::MatMulParams& p) { return !p.trans_a; }
/// True when B is stored with K contiguous (trans_b).
inline bool BKContiguous(const ir::MatMulParams& p) { return p.trans_b; }
/// Length of A's contiguous dimension (K, or M with trans_a).
inline int64_t AContiguousExtent(const ir::MatMulParams& p) { return p.trans_a ? p.m : p.k; }
/// Length of B's contiguous dimension (N, or K with trans_b).
inline int64_t BContiguousExtent(const ir::MatMulParams& p) { return p.trans_b ? p.k : p.n; }

/// True for f32, f16 and bf16.
bool IsFloatDType(ir::DType dtype);
/// True for f16 and bf16.
bool Is16BitFloat(ir::DType dtype);

/// Elements of a 16-byte vector of `dtype` (4 for f32, 8 for 16-bit types).
int64_t Vector16Elements(ir::DType dtype);
/// The widest copy chunk (16, 8 or 4 bytes, else one element) whose element count divides
/// `contiguous_extent`, in elements of `dtype`. Rows of the stored operand then start aligned.
int64_t WidestAlignedChunk(int64_t contiguous_extent, ir::DType dtype);

/// "exceeds_shape": a tile of `tile` covering a dimension of `extent` when the smallest candidate
/// tile is `smallest` wastes more than half of itself (tile >= 2 * max(extent, smallest)).
bool TileExceeds(int64_t tile, int64_t extent, int64_t smallest);

/// INVALID_ARGUMENT unless `w` is a consistent matmul (positive sizes, shapes matching params)
/// whose dimensions fit 32-bit kernel indices and a CUDA grid.
absl::Status CheckCudaMatMul(const ir::Workload& w);

/// Knob order of "cuda_mm_simt/v1".
enum SimtKnob { kSimtBm, kSimtBn, kSimtBk, kSimtTm, kSimtTn, kSimtStages, kSimtVwA, kSimtVwB };
/// Knob order of "cuda_mm_tf32/v1" and "cuda_mm_mma/v1"; "cuda_mm_tf32_split/v1" adds kTcSplit.
enum TensorCoreKnob { kTcBm, kTcBn, kTcBk, kTcWm, kTcWn, kTcStages, kTcSplit };

/// Shared-memory row paddings (elements) of the tensor-core kernels: tf32 fragments are read as
/// float pairs (k-contiguous tiles) or single floats (k-strided tiles); f16/bf16 fragments by
/// ldmatrix, whose eight 16-byte rows must fall in distinct bank groups.
constexpr int64_t kTf32PadKContiguous = 8;
constexpr int64_t kTf32PadKStrided = 4;
constexpr int64_t kMmaPad = 8;

/// Tiling of the SIMT kernel: a (bm/tm) x (bn/tn) thread grid, each thread owning tm x tn
/// outputs in 4-wide groups. Shared memory holds both operands as f32, k-major: A as
/// [bk][bm + 4], B as [bk][bn + 4], in Buffers() buffers.
struct SimtTiling {
  int64_t bm = 0, bn = 0, bk = 0, tm = 0, tn = 0;
  int stages = 1;  ///< 1: register prefetch into two buffers; 2..4: cp.async pipeline depth
  int64_t vw_a = 1, vw_b = 1;  ///< elements per global load of A and B

  int64_t ThreadsM() const { return tm > 0 ? bm / tm : 0; }
  int64_t ThreadsN() const { return tn > 0 ? bn / tn : 0; }
  int64_t Threads() const { return ThreadsM() * ThreadsN(); }
  int Buffers() const { return stages == 1 ? 2 : stages; }
  int64_t AStride() const { return bm + 4; }
  int64_t BStride() const { return bn + 4; }
  int64_t SharedBytes() const { return Buffers() * bk * (AStride() + BStride()) * 4; }
};
/// The tiling of values in "cuda_mm_simt/v1" knob order (no range checks).
SimtTiling MakeSimtTiling(const KnobValues& values);

/// Shared-memory tiling of the tensor-core kernels (tf32 and f16/bf16 mma.sync). Each stage holds
/// an A tile and a B tile in the stored layout of the operand: a k-contiguous operand as
/// [block rows][bk + pad_k_contiguous], a k-strided one as [bk][block cols + pad_k_strided].
struct TensorCoreTiling {
  int64_t bm = 0, bn = 0, bk = 0;  ///< block tile
  int64_t wm = 0, wn = 0;          ///< warp tile
  int stages = 0;                  ///< cp.async pipeline depth (>= 2)
  int64_t elem_bytes = 0;          ///< bytes of one input element in shared memory
  bool a_k_contiguous = false, b_k_contiguous = false;
  int64_t a_rows = 0, a_stride = 0;  ///< A tile in shared memory: rows x stride elements
  int64_t b_rows = 0, b_stride = 0;
  int64_t vw_a = 1, vw_b = 1;  ///< elements per global->shared copy chunk
  /// K split across a thread-block cluster of this many blocks (sm_90): each block sums one
  /// slice of the K tiles, then the cluster adds the partial tiles through distributed shared
  /// memory and each block stores its share of the output. 1: no split.
  int64_t split = 1;

  int64_t WarpsM() const { return wm > 0 ? bm / wm : 0; }
  int64_t WarpsN() const { return wn > 0 ? bn / wn : 0; }
  int64_t Threads() const { return WarpsM() * WarpsN() * 32; }
  int64_t AStageBytes() const { return a_rows * a_stride * elem_bytes; }
  int64_t BStageBytes() const { return b_rows * b_stride * elem_bytes; }
  /// The pipeline's stages; with a split, at least the f32 partial tile the cluster adds up.
  int64_t SharedBytes() const {
    const int64_t pipeline = stages * (AStageBytes() + BStageBytes());
    return split > 1 ? std::max(pipeline, bm * bn * 4) : pipeline;
  }
  /// K tiles of one block's slice.
  int64_t SliceTiles(int64_t k) const {
    const int64_t tiles = bk > 0 ? (k + bk - 1) / bk : 0;
    return split > 1 ? (tiles + split - 1) / split : tiles;
  }
};

/// The tiling of (w, tile knobs). `pad_k_contiguous` and `pad_k_strided` are the row paddings
/// (in elements) that make the kernel's fragment reads free of bank conflicts.
TensorCoreTiling MakeTensorCoreTiling(const ir::Workload& w, int64_t bm, int64_t bn, int64_t bk,
                                      int64_t wm, int64_t wn, int stages, int64_t pad_k_contiguous,
                                      int64_t pad_k_strided);

/// The common part of a tensor-core plan: grid (N tiles, M tiles, batch), block, shared memory,
/// tile geometry and the vector width (the narrower operand's chunk). With a K split, grid x
/// holds `split` blocks (one cluster) per N tile and the kernel needs sm_90.
CudaPlan TensorCorePlan(const ir::Workload& w, const TensorCoreTiling& tiling);

/// The shape rules shared by the tensor-core sketches after CudaResourceRule: "exceeds_shape"
/// (block or K tile far larger than the problem, a pipeline deeper than a block's K loop, a K
/// split leaving a block no K tile) and
/// "grid_limit" (more than 65535 M tiles or batches). nullptr when none rejects.
const char* TensorCoreShapeRule(const ir::Workload& w, const TensorCoreTiling& tiling,
                                int64_t smallest_block, int64_t smallest_bk);

/// Moves `value` to the front of `values` (keeping the others' order); no-op when absent.
void MoveToFront(std::vector<int64_t>* values, int64_t value);

/// Picks the default schedule among `preferred` (complete knob values in preference order): the
/// first that `admits` accepts and that launches at least `min_blocks` blocks, else the admitted
/// one launching the most blocks. Then reorders `knobs` so that its values come first. Leaves
/// `knobs` unchanged when none is admitted.
void PutDefaultFirst(const std::vector<KnobValues>& preferred,
                     const std::function<bool(const KnobValues&)>& admits,
                     const std::function<int64_t(const KnobValues&)>& blocks, int64_t min_blocks,
                     std::vector<Knob>* knobs);

}  // namespace gtco::kernels::cuda_matmul
