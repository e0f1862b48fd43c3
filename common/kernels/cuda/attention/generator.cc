// CUDA C generator of the fused-attention sketch "cuda_attention/v1" (layout and knobs in
// common/schedule/cuda_attention_sketch.cc): one block per (batch entry, block of bq query rows).
// Q is staged once in shared memory, pre-scaled by scale * log2(e); K/V tiles of bk keys are
// staged per iteration (f16/bf16 converted to fp32); each thread computes its tm x tn scores in
// registers, updates its rows' running max m and partial sums l (online softmax: the output and
// l are rescaled by exp2(m_old - m_new)), passes P through shared memory and accumulates its
// output columns in registers; the rows are normalized by the lanes' summed l and written once.
#include "common/kernels/cuda/attention/generator.h"

#include <cmath>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "common/codegen/cuda/cuda_source.h"
#include "common/kernels/family.h"
#include "common/util/status.h"

namespace gtco::kernels {
namespace {

constexpr int kWarpSize = 32;
constexpr int64_t kMaxHeadDim = 256;
constexpr int64_t kMaxGridX = 2147483647;

constexpr char kKernel[] = R"(// cuda_attention/v1 ${KNOBS}: ${DESCRIPTION}
${SIGNATURE} {
  constexpr int kBQ = ${BQ}, kBK = ${BK}, kCG = ${CG}, kRG = ${RG}, kTM = ${TM}, kTN = ${TN};
  constexpr int kThreads = ${THREADS}, kQBlocks = ${QBLOCKS};
  constexpr int kD = ${D}, kDPad = ${DPAD}, kDV = ${DV}, kOW = ${OW}, kChunks = ${CHUNKS};
  constexpr int kQKStride = ${QKSTRIDE}, kVStride = ${VSTRIDE}, kPStride = kBK + 4;
  constexpr long long kSeqQ = ${SEQQ}, kSeqK = ${SEQK};
  const float kNegInf = __int_as_float(0xff800000u);  // NVRTC has no math header (INFINITY)
  const float kQScale = ${QSCALE};  // scale * log2(e): the softmax runs on exp2
  extern __shared__ __align__(16) float gtco_smem[];
  float* q_s = gtco_smem;              // [kBQ][kQKStride]
  float* k_s = q_s + kBQ * kQKStride;  // [kBK][kQKStride]
  float* v_s = k_s + kBK * kQKStride;  // [kBK][kVStride]
  float* p_s = v_s + kBK * kVStride;   // [kBQ][kPStride]
  const int cg = threadIdx.x, rg = threadIdx.y, tid = rg * kCG + cg;
  const long long batch = blockIdx.x / kQBlocks;
  const int q0 = (int)(blockIdx.x % kQBlocks) * kBQ;
  const int q_limit = (int)(kSeqQ - q0);
  const ${T}* q_g = in0 + (batch * kSeqQ + q0) * kD;
  const ${T}* k_g = in1 + batch * kSeqK * kD;
  const ${T}* v_g = in2 + batch * kSeqK * kDV;
${LOAD_Q}
  float o[kTM][kChunks * kOW], m[kTM], l[kTM];
#pragma unroll
  for (int i = 0; i < kTM; ++i) {
    m[i] = kNegInf;
    l[i] = 0.0f;
#pragma unroll
    for (int col = 0; col < kChunks * kOW; ++col) o[i][col] = 0.0f;
  }
  for (int k0 = 0; k0 < kSeqK; k0 += kBK) {
    const int key_limit = (int)(kSeqK - k0);
    __syncthreads();  // the previous tile's K, V and P are consumed
${LOAD_K}
${LOAD_V}
    __syncthreads();
    // Scores of rows i * kRG + rg and keys j * kCG + cg.
    float s[kTM][kTN];
#pragma unroll
    for (int i = 0; i < kTM; ++i) {
#pragma unroll
      for (int j = 0; j < kTN; ++j) s[i][j] = 0.0f;
    }
#pragma unroll 2
    for (int d = 0; d < kDPad; d += 4) {
      float4 qv[kTM], kv[kTN];
#pragma unroll
      for (int i = 0; i < kTM; ++i) {
        qv[i] = *reinterpret_cast<const float4*>(q_s + (i * kRG + rg) * kQKStride + d);
      }
#pragma unroll
      for (int j = 0; j < kTN; ++j) {
        kv[j] = *reinterpret_cast<const float4*>(k_s + (j * kCG + cg) * kQKStride + d);
      }
#pragma unroll
      for (int i = 0; i < kTM; ++i) {
#pragma unroll
        for (int j = 0; j < kTN; ++j) {
          s[i][j] = fmaf(qv[i].x, kv[j].x, s[i][j]);
          s[i][j] = fmaf(qv[i].y, kv[j].y, s[i][j]);
          s[i][j] = fmaf(qv[i].z, kv[j].z, s[i][j]);
          s[i][j] = fmaf(qv[i].w, kv[j].w, s[i][j]);
        }
      }
    }
${MASK}
    // Online softmax: the row max over the kCG lanes of a row group, rescaling, P to p_s.
#pragma unroll
    for (int i = 0; i < kTM; ++i) {
      float tile_max = s[i][0];
#pragma unroll
      for (int j = 1; j < kTN; ++j) tile_max = fmaxf(tile_max, s[i][j]);
#pragma unroll
      for (int lane = kCG / 2; lane > 0; lane >>= 1) {
        tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, lane));
      }
      const float m_new = fmaxf(m[i], tile_max);
      const float alpha = exp2f(m[i] - m_new);
      m[i] = m_new;
      l[i] *= alpha;
#pragma unroll
      for (int col = 0; col < kChunks * kOW; ++col) o[i][col] *= alpha;
      float* p_row = p_s + (i * kRG + rg) * kPStride;
#pragma unroll
      for (int j = 0; j < kTN; ++j) {
        const float prob = exp2f(s[i][j] - m_new);
        l[i] += prob;
        p_row[j * kCG + cg] = prob;
      }
    }
    __syncthreads();
    // o += P V: output columns (u * kCG + cg) * kOW + e, four keys per step.
#pragma unroll 2
    for (int key = 0; key < kBK; key += 4) {
      float pr[kTM][4];
#pragma unroll
      for (int i = 0; i < kTM; ++i) {
        const float4 x = *reinterpret_cast<const float4*>(p_s + (i * kRG + rg) * kPStride + key);
        pr[i][0] = x.x;
        pr[i][1] = x.y;
        pr[i][2] = x.z;
        pr[i][3] = x.w;
      }
#pragma unroll
      for (int step = 0; step < 4; ++step) {
        const float* v_row = v_s + (key + step) * kVStride;
#pragma unroll
        for (int u = 0; u < kChunks; ++u) {
          const int col0 = (u * kCG + cg) * kOW;
          ${LOAD_VV}
#pragma unroll
          for (int i = 0; i < kTM; ++i) {
#pragma unroll
            for (int e = 0; e < kOW; ++e) {
              o[i][u * kOW + e] = fmaf(pr[i][step], vv[e], o[i][u * kOW + e]);
            }
          }
        }
      }
    }
  }
  // Normalize by the row sums (over the kCG lanes) and write each output element once.
#pragma unroll
  for (int i = 0; i < kTM; ++i) {
    float total = l[i];
#pragma unroll
    for (int lane = kCG / 2; lane > 0; lane >>= 1) {
      total += __shfl_xor_sync(0xffffffffu, total, lane);
    }
    const float inv_total = 1.0f / total;
    const int q_row = q0 + i * kRG + rg;
    if (q_row >= kSeqQ) continue;
    const long long out_row = batch * kSeqQ + q_row;
#pragma unroll
    for (int u = 0; u < kChunks; ++u) {
      const int col0 = (u * kCG + cg) * kOW;
      if (col0 >= kDV) continue;
${STORE}
    }
  }
}
)";

/// A cooperative copy of ${ROWS} global rows of ${LENGTH} elements (row r at ${SRC} + r *
/// ${LENGTH}) into shared rows ${DST} + r * ${STRIDE} of ${PADDED} floats, ${WIDTH} elements per
/// load; rows from ${LIMIT} on and columns from ${LENGTH} on are zero.
constexpr char kRowTileLoad[] =
    R"(    for (int idx = tid; idx < ${ROWS} * ${PER_ROW}; idx += kThreads) {
      const int row = idx / ${PER_ROW}, col = (idx % ${PER_ROW}) * ${WIDTH};
      float vals[${WIDTH}];
      if (row < ${LIMIT} && col < ${LENGTH}) {
        const ${T}* src = ${SRC} + (long long)row * ${LENGTH} + col;
        ${LOAD}
      } else {
#pragma unroll
        for (int e = 0; e < ${WIDTH}; ++e) vals[e] = 0.0f;
      }
      float* dst = ${DST} + row * ${STRIDE} + col;
      ${STORE}
    })";

/// The K tile of a [batch, head_dim, seq_k] K: loads along keys, stores transposed into k_s.
constexpr char kTransposedKeyLoad[] =
    R"(    for (int idx = tid; idx < kDPad * ${PER_DIM}; idx += kThreads) {
      const int dim = idx / ${PER_DIM}, key = (idx % ${PER_DIM}) * ${WIDTH};
      float vals[${WIDTH}];
      if (dim < kD && key < key_limit) {
        const ${T}* src = k_g + (long long)dim * kSeqK + k0 + key;
        ${LOAD}
      } else {
#pragma unroll
        for (int e = 0; e < ${WIDTH}; ++e) vals[e] = 0.0f;
      }
#pragma unroll
      for (int e = 0; e < ${WIDTH}; ++e) k_s[(key + e) * kQKStride + dim] = vals[e];
    })";

/// Keys past seq_k in the last tile get no weight.
constexpr char kMask[] = R"(#pragma unroll
    for (int j = 0; j < kTN; ++j) {
      if (j * kCG + cg >= key_limit) {
#pragma unroll
        for (int i = 0; i < kTM; ++i) s[i][j] = kNegInf;
      }
    })";

/// Mirrors OutputChunkWidth of cuda_attention_sketch.cc (both must agree): the widest of 4, 2, 1
/// output columns per chunk that pads value_dim least for `cg` lanes.
int64_t OutputChunkWidth(int64_t value_dim, int64_t cg) {
  int64_t best = 4;
  for (int64_t width : {2, 1}) {
    if (RoundUp(value_dim, width * cg) < RoundUp(value_dim, best * cg)) best = width;
  }
  return best;
}

/// Largest power of two <= `width` dividing `length`.
int64_t UsableWidth(int64_t width, int64_t length) {
  while (width > 1 && length % width != 0) width /= 2;
  return width;
}

bool IsPowerOfTwo(int64_t value) { return value > 0 && (value & (value - 1)) == 0; }

/// The kernel's shape, derived from the workload, the decisions (bq, bk, warps, vw) and the plan
/// (block_x lanes across key columns, block_y row groups).
struct Config {
  ir::DType dtype = ir::DType::kF32;  ///< of Q, K and V
  int64_t bq = 0, bk = 0, warps = 0, vw = 0, cg = 0, rg = 0;
  int64_t d_pad = 0, qk_stride = 0, ow = 0, dv_pad = 0, q_blocks = 0;
  int64_t vq = 1, vk = 1, vv = 1;  ///< load widths of Q, K and V rows
};

absl::Status CheckDecisions(const ir::Workload& w, const KnobValues& values, const CudaPlan& plan) {
  if (w.anchor != ir::AnchorKind::kAttention || w.inputs.size() < 3) {
    return absl::InvalidArgumentError("cuda_attention/v1 generates attention workloads only");
  }
  if (values.size() != 4) {
    return absl::InvalidArgumentError("cuda_attention/v1 expects decisions bq, bk, warps, vw");
  }
  const int64_t bq = values[0], bk = values[1], warps = values[2], vw = values[3];
  const bool sixteen_bit = w.inputs[0].dtype != ir::DType::kF32;
  if (!IsPowerOfTwo(bq) || bq < 16 || bq > 128 || !IsPowerOfTwo(bk) || bk < 16 || bk > 128 ||
      !IsPowerOfTwo(warps) || warps > 8 || !IsPowerOfTwo(vw) || vw > (sixteen_bit ? 8 : 4)) {
    return absl::InvalidArgumentError(absl::StrCat("cuda_attention/v1: decisions bq=", bq,
                                                   " bk=", bk, " warps=", warps, " vw=", vw,
                                                   " are outside the sketch's range"));
  }
  const int64_t cg = plan.block_x, rg = plan.block_y;
  if (!IsPowerOfTwo(cg) || cg > kWarpSize || cg * rg != warps * kWarpSize || bk % cg != 0 ||
      rg > bq || bq % rg != 0 || plan.block_z != 1) {
    return absl::InvalidArgumentError(absl::StrCat("cuda_attention/v1: plan block ", plan.block_x,
                                                   "x", plan.block_y, "x", plan.block_z,
                                                   " is no thread layout for these decisions"));
  }
  const ir::AttentionParams& p = w.attention;
  if (p.head_dim > kMaxHeadDim || p.value_dim > kMaxHeadDim) {
    return absl::InvalidArgumentError(absl::StrCat("cuda_attention/v1: head_dim ", p.head_dim,
                                                   " / value_dim ", p.value_dim, " exceed ",
                                                   kMaxHeadDim));
  }
  return absl::OkStatus();
}

absl::StatusOr<Config> MakeConfig(const ir::Workload& w, const KnobValues& values,
                                  const CudaPlan& plan) {
  GTCO_RETURN_IF_ERROR(CheckDecisions(w, values, plan));
  const ir::AttentionParams& p = w.attention;
  Config c;
  c.dtype = w.inputs[0].dtype;
  c.bq = values[0];
  c.bk = values[1];
  c.warps = values[2];
  c.vw = values[3];
  c.cg = plan.block_x;
  c.rg = plan.block_y;
  c.d_pad = RoundUp(p.head_dim, 4);
  c.qk_stride = c.d_pad % 8 == 0 ? c.d_pad + 4 : c.d_pad;  // odd float4s: conflict-free rows
  c.ow = OutputChunkWidth(p.value_dim, c.cg);
  c.dv_pad = RoundUp(p.value_dim, c.ow * c.cg);
  c.q_blocks = (p.seq_q + c.bq - 1) / c.bq;
  c.vq = UsableWidth(c.vw, p.head_dim);
  c.vk = UsableWidth(c.vw, p.k_transposed ? p.seq_k : p.head_dim);
  c.vv = UsableWidth(c.vw, p.value_dim);
  if (c.q_blocks * p.batch > kMaxGridX || plan.grid_x != c.q_blocks * p.batch) {
    return absl::InvalidArgumentError(absl::StrCat("cuda_attention/v1: grid ", plan.grid_x,
                                                   " does not match ", c.q_blocks, " x ", p.batch,
                                                   " query blocks"));
  }
  const int64_t shared =
      4 * (c.bq * c.qk_stride + c.bk * c.qk_stride + c.bk * c.dv_pad + c.bq * (c.bk + 4));
  if (shared > plan.dynamic_shared_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("cuda_attention/v1 needs ", shared,
                                                   " bytes of shared memory; the plan has ",
                                                   plan.dynamic_shared_bytes));
  }
  return c;
}

/// A statement loading `width` consecutive elements of `dtype` at pointer `src` (aligned to the
/// width) into float array `vals`.
std::string VectorLoad(ir::DType dtype, int64_t width) {
  if (dtype == ir::DType::kF32) {
    if (width == 1) return "vals[0] = *src;";
    if (width == 2) {
      return "const float2 x = *reinterpret_cast<const float2*>(src); vals[0] = x.x; "
             "vals[1] = x.y;";
    }
    return "const float4 x = *reinterpret_cast<const float4*>(src); vals[0] = x.x; "
           "vals[1] = x.y; vals[2] = x.z; vals[3] = x.w;";
  }
  const char* convert = dtype == ir::DType::kF16 ? "gtco_f16_to_f32" : "gtco_bf16_to_f32";
  if (width == 1) return absl::StrCat("vals[0] = ", convert, "(*src);");
  // Two 16-bit elements per 32-bit word, the first in the low half.
  const char* type = width == 8 ? "uint4" : width == 4 ? "uint2" : "unsigned int";
  std::string code =
      absl::StrCat("const ", type, " x = *reinterpret_cast<const ", type, "*>(src);");
  const char* words[] = {"x.x", "x.y", "x.z", "x.w"};
  for (int64_t word = 0; word < width / 2; ++word) {
    const std::string name = width == 2 ? "x" : words[word];
    absl::StrAppend(&code, " vals[", 2 * word, "] = ", convert, "((unsigned short)(", name,
                    " & 0xffffu)); vals[", 2 * word + 1, "] = ", convert, "((unsigned short)(",
                    name, " >> 16));");
  }
  return code;
}

/// A statement storing float array `vals` (times kQScale when `scaled`) to shared memory at
/// `dst`, aligned to min(width, 4) floats.
std::string SharedStore(int64_t width, bool scaled) {
  auto value = [&](int64_t index) {
    return absl::StrCat("vals[", index, "]", scaled ? " * kQScale" : "");
  };
  if (width == 1) return absl::StrCat("*dst = ", value(0), ";");
  if (width == 2) {
    return absl::StrCat("*reinterpret_cast<float2*>(dst) = make_float2(", value(0), ", ", value(1),
                        ");");
  }
  std::string code;
  for (int64_t quad = 0; quad < width / 4; ++quad) {
    absl::StrAppend(&code, quad == 0 ? "" : " ", "*reinterpret_cast<float4*>(dst + ", 4 * quad,
                    ") = make_float4(", value(4 * quad), ", ", value(4 * quad + 1), ", ",
                    value(4 * quad + 2), ", ", value(4 * quad + 3), ");");
  }
  return code;
}

std::string RowTileLoad(const Config& c, const std::string& dst, const std::string& stride,
                        const std::string& src, const std::string& rows, int64_t length,
                        int64_t padded, int64_t width, const std::string& limit, bool scaled) {
  return absl::StrReplaceAll(kRowTileLoad, {{"${ROWS}", rows},
                                            {"${PER_ROW}", absl::StrCat(padded / width)},
                                            {"${WIDTH}", absl::StrCat(width)},
                                            {"${LIMIT}", limit},
                                            {"${LENGTH}", absl::StrCat(length)},
                                            {"${SRC}", src},
                                            {"${DST}", dst},
                                            {"${STRIDE}", stride},
                                            {"${T}", StorageType(c.dtype)},
                                            {"${LOAD}", VectorLoad(c.dtype, width)},
                                            {"${STORE}", SharedStore(width, scaled)}});
}

/// The output store of element columns col0 .. col0 + kOW of row out_row (scaled by inv_total):
/// one vector store for plain f32 outputs, else per element through the epilogue.
absl::StatusOr<std::string> OutputStore(const ir::Workload& w, const Config& c) {
  if (w.epilogue.empty() && w.output.dtype == ir::DType::kF32 && c.ow > 1 &&
      w.attention.value_dim % c.ow == 0) {
    const char* type = c.ow == 4 ? "float4" : "float2";
    return absl::StrCat(
        "      *reinterpret_cast<", type, "*>(out + out_row * kDV + col0) = make_", type,
        "(o[i][u * kOW] * inv_total, o[i][u * kOW + 1] * inv_total",
        c.ow == 4 ? ", o[i][u * kOW + 2] * inv_total, o[i][u * kOW + 3] * inv_total" : "", ");");
  }
  GTCO_ASSIGN_OR_RETURN(std::string epilogue, EmitEpilogue(w, "acc", "out_row", "col"));
  return absl::StrCat("#pragma unroll\n      for (int e = 0; e < kOW; ++e) {\n",
                      "        const int col = col0 + e;\n", "        if (col >= kDV) break;\n",
                      "        const float acc = o[i][u * kOW + e] * inv_total;\n        ",
                      absl::StrReplaceAll(epilogue, {{"\n", "\n        "}}),
                      StoreFromFloat(w.output.dtype, "out", "out_row * kDV + col", "result"),
                      "\n      }");
}

std::string FloatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return absl::StrFormat("__int_as_float(0x%08xu)", bits);
}

}  // namespace

absl::StatusOr<std::string> GenerateAttentionKernel(const ir::Workload& w, const KnobValues& values,
                                                    const CudaPlan& plan,
                                                    const std::string& entry) {
  GTCO_ASSIGN_OR_RETURN(const Config c, MakeConfig(w, values, plan));
  const ir::AttentionParams& p = w.attention;
  const int64_t threads = c.warps * kWarpSize;
  // __launch_bounds__(threads, 1): with the thread count alone, ptxas (CUDA 13) aims at full
  // occupancy and caps registers low enough (32 at 128 threads) to spill.
  std::string signature = KernelSignature(w, entry, static_cast<int>(threads));
  const std::string bounds = absl::StrCat("__launch_bounds__(", threads, ")");
  if (const size_t at = signature.find(bounds); at != std::string::npos) {
    signature.replace(at, bounds.size(), absl::StrCat("__launch_bounds__(", threads, ", 1)"));
  }
  const std::string load_k =
      p.k_transposed
          ? absl::StrReplaceAll(kTransposedKeyLoad, {{"${PER_DIM}", absl::StrCat(c.bk / c.vk)},
                                                     {"${WIDTH}", absl::StrCat(c.vk)},
                                                     {"${T}", StorageType(c.dtype)},
                                                     {"${LOAD}", VectorLoad(c.dtype, c.vk)}})
          : RowTileLoad(c, "k_s", "kQKStride", "(k_g + (long long)k0 * kD)", "kBK", p.head_dim,
                        c.d_pad, c.vk, "key_limit", false);
  const char* load_vv = c.ow == 4   ? "const float4 x = *reinterpret_cast<const float4*>(v_row + "
                                      "col0); const float vv[4] = {x.x, x.y, x.z, x.w};"
                        : c.ow == 2 ? "const float2 x = *reinterpret_cast<const float2*>(v_row + "
                                      "col0); const float vv[2] = {x.x, x.y};"
                                    : "const float vv[1] = {v_row[col0]};";
  GTCO_ASSIGN_OR_RETURN(const std::string store, OutputStore(w, c));
  const float q_scale = static_cast<float>(static_cast<double>(p.scale) / std::log(2.0));
  return absl::StrCat(
      Prelude(),
      absl::StrReplaceAll(
          kKernel,
          {{"${KNOBS}", absl::StrCat("bq=", c.bq, " bk=", c.bk, " warps=", c.warps, " vw=", c.vw)},
           {"${DESCRIPTION}", w.Description()},
           {"${SIGNATURE}", signature},
           {"${BQ}", absl::StrCat(c.bq)},
           {"${BK}", absl::StrCat(c.bk)},
           {"${CG}", absl::StrCat(c.cg)},
           {"${RG}", absl::StrCat(c.rg)},
           {"${TM}", absl::StrCat(c.bq / c.rg)},
           {"${TN}", absl::StrCat(c.bk / c.cg)},
           {"${THREADS}", absl::StrCat(threads)},
           {"${QBLOCKS}", absl::StrCat(c.q_blocks)},
           {"${D}", absl::StrCat(p.head_dim)},
           {"${DPAD}", absl::StrCat(c.d_pad)},
           {"${DV}", absl::StrCat(p.value_dim)},
           {"${OW}", absl::StrCat(c.ow)},
           {"${CHUNKS}", absl::StrCat(c.dv_pad / (c.ow * c.cg))},
           {"${QKSTRIDE}", absl::StrCat(c.qk_stride)},
           {"${VSTRIDE}", absl::StrCat(c.dv_pad)},
           {"${SEQQ}", absl::StrCat(p.seq_q)},
           {"${SEQK}", absl::StrCat(p.seq_k)},
           {"${QSCALE}", FloatBits(q_scale)},
           {"${T}", StorageType(c.dtype)},
           {"${LOAD_Q}", RowTileLoad(c, "q_s", "kQKStride", "q_g", "kBQ", p.head_dim, c.d_pad, c.vq,
                                     "q_limit", true)},
           {"${LOAD_K}", load_k},
           {"${LOAD_V}", RowTileLoad(c, "v_s", "kVStride", "(v_g + (long long)k0 * kDV)", "kBK",
                                     p.value_dim, c.dv_pad, c.vv, "key_limit", false)},
           {"${MASK}", p.seq_k % c.bk == 0 ? "" : kMask},
           {"${LOAD_VV}", load_vv},
           {"${STORE}", store}}));
}

}  // namespace gtco::kernels
