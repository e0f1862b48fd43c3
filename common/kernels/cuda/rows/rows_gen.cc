// CUDA C generators of the row sketches (common/schedule/cuda_rows_sketch.h): softmax, layernorm
// and reduce_mean. One kernel shape for all three: each group of threads_per_row lanes owns one
// row per step of a block-uniform grid-stride loop over rows, reads it with vector loads of vw
// elements (thread t of the row takes groups t, t + tpr, ...), reduces with shuffles, then shared
// memory across the row's warps, then distributed shared memory across a cluster's blocks, and
// applies the fused epilogue at the store. Every thread reaches every shuffle and barrier: rows
// past the end only skip loads and stores.
#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/codegen/cuda/cuda_source.h"
#include "common/kernels/cuda/rows/cuda_rows_sketch.h"
#include "common/kernels/cuda/rows/cuda_rows_util.h"
#include "common/kernels/cuda/rows/rows_emit.h"
#include "common/kernels/family.h"
#include "common/util/status.h"

namespace gtco::kernels {
namespace {

constexpr char kLog2e[] = "1.44269504088896341f";
/// Fill of softmax's streaming loads: finite, so that exp2f((fill - max) * log2e) is 0 for any
/// real max and 1 (not NaN) when a thread saw no element; such counts vanish when the threads
/// merge (they are scaled by exp2f((-FLT_MAX - row max) * log2e) = 0).
constexpr char kMinusFltMax[] = "(-3.402823466e+38f)";
constexpr char kMinusInf[] = "__int_as_float(0xff800000)";
/// Most floats a generated kernel caches per thread (the sketch prunes earlier, at 128).
constexpr int64_t kMaxGeneratedCache = 256;

constexpr char kFrame[] = R"(${SIGNATURE} {
${SHARED}  const int lane = (int)threadIdx.x & ${TPR_MASK};
  const int row_in_block = (int)threadIdx.x / ${TPR};
${SLICE}  int iter = 0;
  for (long long row0 = (long long)(blockIdx.x / ${SPLIT}u) * ${RPB}; row0 < ${ROWS}LL;
       row0 += (long long)(gridDim.x / ${SPLIT}u) * ${RPB}, ++iter) {
    const long long row = row0 + row_in_block;
    const bool row_ok = row < ${ROWS}LL;
    const ${XT}* __restrict__ x = in0 + (row_ok ? row : 0LL) * ${COLS}LL;
    ${OUT_T}* __restrict__ y = out + (row_ok ? row : 0LL) * ${OUT_COLS}LL;
    const int gtco_buf = (iter & 1) * ${BUF_STRIDE};
    (void)gtco_buf;
${BODY}  }
${TAIL}}
)";

constexpr char kCachedLoad[] = R"(    float v[${CACHE}];
#pragma unroll
    for (int i = 0; i < ${IPT}; ++i) {
      const int g = g_begin + lane + i * ${TPR};
      if (row_ok && ((i + 1) * ${TPR} <= ${MIN_SLICE} || g < g_end)) {
        ${LOAD_X}
      } else {
#pragma unroll
        for (int j = 0; j < ${VW}; ++j) v[i * ${VW} + j] = ${FILL};
      }
    }
)";

constexpr char kCachedGroups[] = R"(#pragma unroll
    for (int i = 0; i < ${IPT}; ++i) {
      const int g = g_begin + lane + i * ${TPR};
      if (row_ok && ((i + 1) * ${TPR} <= ${MIN_SLICE} || g < g_end)) {
${GROUP}      }
    }
)";

/// Opens a streaming pass: loads the chunk of `unroll` groups at i0 into v (FILL elsewhere). The
/// unroll knob alone sets how many loads are in flight (the chunk loop is not unrolled further).
constexpr char kChunkLoad[] = R"(#pragma unroll 1
    for (int i0 = 0; i0 < ${IPT}; i0 += ${U}) {
      float v[${U} * ${VW}];
#pragma unroll
      for (int u = 0; u < ${U}; ++u) {
        const int g = g_begin + lane + (i0 + u) * ${TPR};
        if (row_ok && g < g_end) {
          ${LOAD_X_U}
        } else {
#pragma unroll
          for (int j = 0; j < ${VW}; ++j) v[u * ${VW} + j] = ${FILL};
        }
      }
)";

constexpr char kChunkGroups[] = R"(#pragma unroll
      for (int u = 0; u < ${U}; ++u) {
        const int g = g_begin + lane + (i0 + u) * ${TPR};
        if (row_ok && g < g_end) {
${GROUP}        }
      }
)";

/// Emits one row kernel of a decoded configuration.
class RowKernelBuilder {
 public:
  RowKernelBuilder(const ir::Workload& w, const CudaRowsConfig& c, GroupEpilogue epilogue)
      : w_(w), c_(c), epilogue_(std::move(epilogue)) {
    const CudaRowReductions reductions = RowReductions(c);
    floats_per_value_ = reductions.floats;
    warp_entries_ = c.CrossWarp() ? c.Threads() / 32 : 0;
    per_float_ = warp_entries_ + (c.blocks_per_row > 1 ? 1 : 0);
    const int64_t groups = c.vector_groups, slice = c.groups_per_block;
    vars_ = {{"TPR", absl::StrCat(c.threads_per_row)},
             {"TPR_MASK", absl::StrCat(c.threads_per_row - 1)},
             {"RPB", absl::StrCat(c.rows_per_block)},
             {"SPLIT", absl::StrCat(c.blocks_per_row)},
             {"ROWS", absl::StrCat(c.rows)},
             {"COLS", absl::StrCat(c.cols)},
             {"COLS_F", ExactFloat(static_cast<float>(c.cols))},
             {"OUT_COLS", c.anchor == ir::AnchorKind::kReduceMean ? "1" : absl::StrCat(c.cols)},
             {"XT", StorageType(w.inputs[0].dtype)},
             {"OUT_T", StorageType(w.output.dtype)},
             {"VW", absl::StrCat(c.vector_width)},
             {"IPT", absl::StrCat(c.groups_per_thread)},
             {"U", absl::StrCat(c.unroll)},
             {"CACHE", absl::StrCat(c.CachedFloats())},
             {"MIN_SLICE", absl::StrCat(groups - (c.blocks_per_row - 1) * slice)},
             {"BUF_STRIDE", absl::StrCat(reductions.count * floats_per_value_ * per_float_)},
             {"LOG2E", kLog2e},
             {"LOAD_X", LoadVector(w.inputs[0].dtype, absl::StrCat("x + g * ", c.vector_width),
                                   c.vector_width, absl::StrCat("v + i * ", c.vector_width))},
             {"LOAD_X_U", LoadVector(w.inputs[0].dtype, absl::StrCat("x + g * ", c.vector_width),
                                     c.vector_width, absl::StrCat("v + u * ", c.vector_width))}};
    if (c.blocks_per_row > 1) {
      vars_["SLICE"] = Fill(
          "  const int g_begin = (int)gtco_cluster_rank() * ${GPB};\n"
          "  const int g_end = g_begin + ${GPB} < ${NG} ? g_begin + ${GPB} : ${NG};\n",
          {{"GPB", absl::StrCat(slice)}, {"NG", absl::StrCat(groups)}});
      vars_["TAIL"] =
          "  gtco_cluster_sync();  // peers may still read this block's shared memory\n";
    } else {
      vars_["SLICE"] =
          absl::StrCat("  const int g_begin = 0;\n  const int g_end = ", groups, ";\n");
      vars_["TAIL"] = "";
    }
    vars_["SHARED"] = per_float_ > 0 ? "  extern __shared__ float gtco_smem[];\n" : "";
  }

  std::string F(const std::string& text) const { return Fill(text, vars_); }

  /// Leaves in float `var` its reduction (op "sum" or "max") over the row, in every thread.
  std::string Reduce(const char* op, const std::string& var, int slot) const {
    std::string code = absl::StrCat("    ", var, " = gtco_group_", op, "<",
                                    std::min(c_.threads_per_row, 32), ">(", var, ");\n");
    if (c_.CrossWarp()) {
      const std::string base = absl::StrCat("gtco_buf + ", Offset(slot, 0));
      absl::StrAppend(&code, "    if ((threadIdx.x & 31u) == 0u) gtco_smem[", base,
                      " + (int)(threadIdx.x >> 5)] = ", var, ";\n    __syncthreads();\n    ", var,
                      " = gtco_smem[", base, " + row_in_block * ", WarpsPerRow(),
                      " + ((int)threadIdx.x & ", WarpsPerRow() - 1, ")];\n    ", var,
                      " = gtco_group_", op, "<", WarpsPerRow(), ">(", var, ");\n");
    }
    if (c_.blocks_per_row > 1) {
      const std::string entry = absl::StrCat("gtco_smem[gtco_buf + ", ClusterOffset(slot, 0), "]");
      absl::StrAppend(&code, "    if (threadIdx.x == 0u) ", entry, " = ", var,
                      ";\n    gtco_cluster_sync();\n    ", var, " = gtco_cluster_load(&", entry,
                      ", threadIdx.x & ", c_.blocks_per_row - 1, "u);\n    ", var, " = gtco_group_",
                      op, "<", c_.blocks_per_row, ">(", var, ");\n");
    }
    return code;
  }

  /// Merges the Welford triple (n, mean, m2) over the row, identically in every thread.
  std::string ReduceWelford(int slot) const {
    const char* names[3] = {"n", "mean", "m2"};
    std::string code = absl::StrCat("    gtco_group_welford<", std::min(c_.threads_per_row, 32),
                                    ">(n, mean, m2);\n");
    if (c_.CrossWarp()) {
      absl::StrAppend(&code, "    if ((threadIdx.x & 31u) == 0u) {\n");
      for (int f = 0; f < 3; ++f) {
        absl::StrAppend(&code, "      gtco_smem[gtco_buf + ", Offset(slot, f),
                        " + (int)(threadIdx.x >> 5)] = ", names[f], ";\n");
      }
      absl::StrAppend(&code,
                      "    }\n    __syncthreads();\n    {\n      const int k = row_in_block * ",
                      WarpsPerRow(), " + ((int)threadIdx.x & ", WarpsPerRow() - 1, ");\n");
      for (int f = 0; f < 3; ++f) {
        absl::StrAppend(&code, "      ", names[f], " = gtco_smem[gtco_buf + ", Offset(slot, f),
                        " + k];\n");
      }
      absl::StrAppend(&code, "    }\n    gtco_group_welford<", WarpsPerRow(), ">(n, mean, m2);\n");
    }
    if (c_.blocks_per_row > 1) {
      absl::StrAppend(&code, "    if (threadIdx.x == 0u) {\n");
      for (int f = 0; f < 3; ++f) {
        absl::StrAppend(&code, "      gtco_smem[gtco_buf + ", ClusterOffset(slot, f),
                        "] = ", names[f], ";\n");
      }
      absl::StrAppend(&code, "    }\n    gtco_cluster_sync();\n    {\n",
                      "      const unsigned int peer = threadIdx.x & ", c_.blocks_per_row - 1,
                      "u;\n");
      for (int f = 0; f < 3; ++f) {
        absl::StrAppend(&code, "      ", names[f], " = gtco_cluster_load(&gtco_smem[gtco_buf + ",
                        ClusterOffset(slot, f), "], peer);\n");
      }
      absl::StrAppend(&code, "    }\n    gtco_group_welford<", c_.blocks_per_row,
                      ">(n, mean, m2);\n");
    }
    return code;
  }

  std::string CachedLoad(const std::string& fill) const {
    return Fill(F(kCachedLoad), {{"FILL", fill}});
  }
  /// The cached slice's groups, each computing `value` (of i, j) into the output.
  std::string CachedStore(const std::string& value, const std::string& extra) const {
    return Fill(F(kCachedGroups), {{"GROUP", Group(value, extra)}});
  }
  /// Opens a streaming chunk loop (closed by the caller with "    }\n").
  std::string ChunkLoad(const std::string& fill) const {
    return Fill(F(kChunkLoad), {{"FILL", fill}});
  }
  /// The chunk's groups, each running `group_code` (as statements, with g and u in scope).
  std::string ChunkGroups(const std::string& group_code) const {
    return Fill(F(kChunkGroups), {{"GROUP", group_code}});
  }
  /// Statements computing the group at g from `value` (of j and i or u) and storing it.
  std::string Group(const std::string& value, const std::string& extra) const {
    const std::string vw = absl::StrCat(c_.vector_width);
    return absl::StrCat(
        extra, epilogue_.Declare(), epilogue_.Prefetch("0", "row", absl::StrCat("g * ", vw)),
        "float gtco_o[", vw, "];\n#pragma unroll\nfor (int j = 0; j < ", vw, "; ++j) ",
        epilogue_.Apply("0", "j", value, "gtco_o[j]"),
        StoreVector(w_.output.dtype, absl::StrCat("y + g * ", vw), c_.vector_width, "gtco_o"),
        "\n");
  }
  /// Layernorm's scale and bias vectors of group g.
  std::string ScaleBias() const {
    const std::string vw = absl::StrCat(c_.vector_width);
    return absl::StrCat(
        "float gtco_sc[", vw, "], gtco_bi[", vw, "];\n",
        LoadVector(w_.inputs[1].dtype, absl::StrCat("in1 + g * ", vw), c_.vector_width, "gtco_sc"),
        "\n",
        LoadVector(w_.inputs[2].dtype, absl::StrCat("in2 + g * ", vw), c_.vector_width, "gtco_bi"),
        "\n");
  }
  const GroupEpilogue& epilogue() const { return epilogue_; }

  std::string Build(const std::string& entry, const std::string& body) const {
    std::string signature = KernelSignature(w_, entry, c_.Threads());
    if (c_.blocks_per_row > 1) {
      const size_t at = signature.find("void ");
      signature.insert(at + 5, absl::StrCat("__cluster_dims__(", c_.blocks_per_row, ", 1, 1) "));
    }
    std::map<std::string, std::string> frame = vars_;
    frame["SIGNATURE"] = signature;
    frame["BODY"] = body;
    return absl::StrCat(Prelude(), RowsPrelude(c_.blocks_per_row > 1), Fill(kFrame, frame));
  }

 private:
  int WarpsPerRow() const { return c_.threads_per_row / 32; }
  /// Offset of float `f` of reduction `slot` within one parity buffer.
  int64_t Offset(int slot, int f) const {
    return (int64_t{slot} * floats_per_value_ + f) * per_float_;
  }
  int64_t ClusterOffset(int slot, int f) const { return Offset(slot, f) + warp_entries_; }

  const ir::Workload& w_;
  CudaRowsConfig c_;
  GroupEpilogue epilogue_;
  std::map<std::string, std::string> vars_;
  int floats_per_value_ = 1;
  int64_t warp_entries_ = 0, per_float_ = 0;
};

std::string SoftmaxBody(const RowKernelBuilder& b, const CudaRowsConfig& c) {
  if (c.strategy == CudaRowStrategy::kCached) {
    return absl::StrCat(
        b.CachedLoad(kMinusInf),
        b.F("    float m = v[0];\n#pragma unroll\n"
            "    for (int k = 1; k < ${CACHE}; ++k) m = fmaxf(m, v[k]);\n"),
        b.Reduce("max", "m", 0),
        b.F("    float s = 0.0f;\n#pragma unroll\n    for (int k = 0; k < ${CACHE}; ++k) {\n"
            "      v[k] = exp2f((v[k] - m) * ${LOG2E});\n      s += v[k];\n    }\n"),
        b.Reduce("sum", "s", 1), "    const float inv = 1.0f / s;\n",
        b.CachedStore(b.F("v[i * ${VW} + j] * inv"), ""));
  }
  // Online: per thread a running max m and a sum s rescaled whenever m grows.
  return absl::StrCat(
      "    float m = ", kMinusFltMax, ";\n    float s = 0.0f;\n", b.ChunkLoad(kMinusFltMax),
      b.F("      float chunk_max = v[0];\n#pragma unroll\n"
          "      for (int k = 1; k < ${U} * ${VW}; ++k) chunk_max = fmaxf(chunk_max, v[k]);\n"
          "      const float new_m = fmaxf(m, chunk_max);\n"
          "      s *= exp2f((m - new_m) * ${LOG2E});\n#pragma unroll\n"
          "      for (int k = 0; k < ${U} * ${VW}; ++k) s += exp2f((v[k] - new_m) * ${LOG2E});\n"
          "      m = new_m;\n    }\n    float row_max = m;\n"),
      b.Reduce("max", "row_max", 0), b.F("    s *= exp2f((m - row_max) * ${LOG2E});\n"),
      b.Reduce("sum", "s", 1), "    const float inv = 1.0f / s;\n", b.ChunkLoad("0.0f"),
      b.ChunkGroups(b.Group(b.F("exp2f((v[u * ${VW} + j] - row_max) * ${LOG2E}) * inv"), "")),
      "    }\n");
}

std::string LayerNormBody(const RowKernelBuilder& b, const CudaRowsConfig& c, float epsilon) {
  const std::string eps = ExactFloat(epsilon);
  if (c.strategy == CudaRowStrategy::kCached) {
    return absl::StrCat(
        b.CachedLoad("0.0f"),
        b.F("    float s = 0.0f;\n#pragma unroll\n    for (int k = 0; k < ${CACHE}; ++k) s += "
            "v[k];\n"),
        b.Reduce("sum", "s", 0),
        b.F("    const float mean = s / ${COLS_F};\n    float q = 0.0f;\n"),
        Fill(b.F(kCachedGroups),
             {{"GROUP", b.F("#pragma unroll\nfor (int j = 0; j < ${VW}; ++j) {\n"
                            "  const float d = v[i * ${VW} + j] - mean;\n  q += d * d;\n}\n")}}),
        b.Reduce("sum", "q", 1), b.F("    const float rstd = rsqrtf(q / ${COLS_F} + "), eps, ");\n",
        b.CachedStore(b.F("(v[i * ${VW} + j] - mean) * rstd * gtco_sc[j] + gtco_bi[j]"),
                      b.ScaleBias()));
  }
  // Welford per thread, one merge per vector group, then across the row.
  return absl::StrCat(
      "    float n = 0.0f, mean = 0.0f, m2 = 0.0f;\n", b.ChunkLoad("0.0f"),
      b.ChunkGroups(b.F("float group_sum = 0.0f;\n#pragma unroll\n"
                        "for (int j = 0; j < ${VW}; ++j) group_sum += v[u * ${VW} + j];\n"
                        "const float group_mean = group_sum / ${VW}.0f;\n"
                        "float group_m2 = 0.0f;\n#pragma unroll\n"
                        "for (int j = 0; j < ${VW}; ++j) {\n"
                        "  const float d = v[u * ${VW} + j] - group_mean;\n"
                        "  group_m2 += d * d;\n}\n"
                        "gtco_welford_merge(n, mean, m2, ${VW}.0f, group_mean, group_m2);\n")),
      "    }\n", b.ReduceWelford(0), b.F("    const float rstd = rsqrtf(m2 / ${COLS_F} + "), eps,
      ");\n", b.ChunkLoad("0.0f"),
      b.ChunkGroups(b.Group(b.F("(v[u * ${VW} + j] - mean) * rstd * gtco_sc[j] + gtco_bi[j]"),
                            b.ScaleBias())),
      "    }\n");
}

std::string ReduceMeanBody(const RowKernelBuilder& b, const ir::Workload& w) {
  const GroupEpilogue& epilogue = b.epilogue();
  return absl::StrCat(
      "    float s = 0.0f;\n", b.ChunkLoad("0.0f"),
      b.F("#pragma unroll\n      for (int k = 0; k < ${U} * ${VW}; ++k) s += v[k];\n    }\n"),
      b.Reduce("sum", "s", 0), "    if (row_ok && lane == 0 && g_begin == 0) {\n",
      epilogue.Declare(), epilogue.Prefetch("0", "row", "0"), "float gtco_o[1];\n",
      epilogue.Apply("0", "0", b.F("s / ${COLS_F}"), "gtco_o[0]"),
      StoreVector(w.output.dtype, "y", 1, "gtco_o"), "\n    }\n");
}

absl::StatusOr<std::string> GenerateRowKernel(const ir::Workload& w, const KnobValues& values,
                                              const std::string& entry) {
  GTCO_ASSIGN_OR_RETURN(const CudaRowsConfig c, DecodeCudaRows(w, values));
  const std::string non_float = NonFloatStorage(w);
  if (!non_float.empty()) return absl::InvalidArgumentError(non_float);
  if (c.cols % c.vector_width != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("vector width ", c.vector_width, " does not divide rows of ", c.cols));
  }
  if (c.strategy == CudaRowStrategy::kCached && c.CachedFloats() > kMaxGeneratedCache) {
    return absl::InvalidArgumentError(absl::StrCat("a cached row slice of ", c.CachedFloats(),
                                                   " floats per thread is too large"));
  }
  std::vector<int64_t> out_view = w.output.shape;
  if (out_view.empty()) out_view.push_back(1);
  std::vector<std::vector<int64_t>> input_views;
  for (const ir::TensorDesc& input : w.inputs) {
    input_views.push_back(AlignToView(input.shape, out_view));
  }
  const bool reduce_mean = c.anchor == ir::AnchorKind::kReduceMean;
  GTCO_ASSIGN_OR_RETURN(GroupEpilogue epilogue,
                        GroupEpilogue::Create(w, out_view, input_views,
                                              reduce_mean ? 1 : c.vector_width, 1, "long long"));
  const RowKernelBuilder builder(w, c, std::move(epilogue));
  std::string body;
  switch (c.anchor) {
    case ir::AnchorKind::kSoftmax:
      body = SoftmaxBody(builder, c);
      break;
    case ir::AnchorKind::kLayerNorm:
      body = LayerNormBody(builder, c, w.row.epsilon);
      break;
    default:
      body = ReduceMeanBody(builder, w);
      break;
  }
  return builder.Build(entry, body);
}

absl::Status ExpectAnchor(const ir::Workload& w, ir::AnchorKind anchor) {
  if (w.anchor == anchor) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("expected a ", ir::AnchorKindName(anchor), " workload, got ", w.Description()));
}

}  // namespace

absl::StatusOr<std::string> GenerateCudaSoftmax(const ir::Workload& w, const KnobValues& values,
                                                const CudaPlan&, const std::string& entry) {
  GTCO_RETURN_IF_ERROR(ExpectAnchor(w, ir::AnchorKind::kSoftmax));
  return GenerateRowKernel(w, values, entry);
}

absl::StatusOr<std::string> GenerateCudaLayerNorm(const ir::Workload& w, const KnobValues& values,
                                                  const CudaPlan&, const std::string& entry) {
  GTCO_RETURN_IF_ERROR(ExpectAnchor(w, ir::AnchorKind::kLayerNorm));
  return GenerateRowKernel(w, values, entry);
}

absl::StatusOr<std::string> GenerateCudaReduceMean(const ir::Workload& w, const KnobValues& values,
                                                   const CudaPlan&, const std::string& entry) {
  GTCO_RETURN_IF_ERROR(ExpectAnchor(w, ir::AnchorKind::kReduceMean));
  return GenerateRowKernel(w, values, entry);
}

}  // namespace gtco::kernels
