// Device templates and the grouped epilogue of the row-wise and element-wise CUDA generators.
#include "common/kernels/cuda/rows/rows_emit.h"

#include <cstring>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "common/codegen/cuda/cuda_source.h"
#include "common/kernels/family.h"
#include "common/util/status.h"

namespace gtco::kernels {
namespace {

constexpr char kVectorTemplates[] = R"(// ---- row and element-wise kernels ----
template <int N>
__device__ __forceinline__ void gtco_ldv(const float* __restrict__ p, float* d) {
  if constexpr (N % 4 == 0) {
#pragma unroll
    for (int k = 0; k < N; k += 4) {
      const float4 t = *reinterpret_cast<const float4*>(p + k);
      d[k] = t.x; d[k + 1] = t.y; d[k + 2] = t.z; d[k + 3] = t.w;
    }
  } else if constexpr (N % 2 == 0) {
#pragma unroll
    for (int k = 0; k < N; k += 2) {
      const float2 t = *reinterpret_cast<const float2*>(p + k);
      d[k] = t.x; d[k + 1] = t.y;
    }
  } else {
#pragma unroll
    for (int k = 0; k < N; ++k) d[k] = p[k];
  }
}
template <int N>
__device__ __forceinline__ void gtco_stv(float* __restrict__ p, const float* s) {
  if constexpr (N % 4 == 0) {
#pragma unroll
    for (int k = 0; k < N; k += 4) {
      float4 t;
      t.x = s[k]; t.y = s[k + 1]; t.z = s[k + 2]; t.w = s[k + 3];
      *reinterpret_cast<float4*>(p + k) = t;
    }
  } else if constexpr (N % 2 == 0) {
#pragma unroll
    for (int k = 0; k < N; k += 2) {
      float2 t;
      t.x = s[k]; t.y = s[k + 1];
      *reinterpret_cast<float2*>(p + k) = t;
    }
  } else {
#pragma unroll
    for (int k = 0; k < N; ++k) p[k] = s[k];
  }
}
template <bool kBf16>
__device__ __forceinline__ float gtco_half_to_f32(unsigned int bits) {
  if constexpr (kBf16) {
    return __uint_as_float(bits << 16);
  } else {
    return gtco_f16_to_f32((unsigned short)bits);
  }
}
template <bool kBf16>
__device__ __forceinline__ unsigned int gtco_f32_to_half(float value) {
  if constexpr (kBf16) {
    return gtco_f32_to_bf16(value);
  } else {
    return gtco_f32_to_f16(value);
  }
}
/// Two 16-bit elements of one 32-bit word (the first in the low half).
template <bool kBf16>
__device__ __forceinline__ void gtco_unpack2(unsigned int word, float* d) {
  d[0] = gtco_half_to_f32<kBf16>(word & 0xffffu);
  d[1] = gtco_half_to_f32<kBf16>(word >> 16);
}
template <bool kBf16>
__device__ __forceinline__ unsigned int gtco_pack2(const float* s) {
  return gtco_f32_to_half<kBf16>(s[0]) | (gtco_f32_to_half<kBf16>(s[1]) << 16);
}
template <int N, bool kBf16>
__device__ __forceinline__ void gtco_ldv16(const unsigned short* __restrict__ p, float* d) {
  if constexpr (N % 8 == 0) {
#pragma unroll
    for (int k = 0; k < N; k += 8) {
      const uint4 t = *reinterpret_cast<const uint4*>(p + k);
      gtco_unpack2<kBf16>(t.x, d + k); gtco_unpack2<kBf16>(t.y, d + k + 2);
      gtco_unpack2<kBf16>(t.z, d + k + 4); gtco_unpack2<kBf16>(t.w, d + k + 6);
    }
  } else if constexpr (N % 4 == 0) {
#pragma unroll
    for (int k = 0; k < N; k += 4) {
      const uint2 t = *reinterpret_cast<const uint2*>(p + k);
      gtco_unpack2<kBf16>(t.x, d + k); gtco_unpack2<kBf16>(t.y, d + k + 2);
    }
  } else if constexpr (N % 2 == 0) {
#pragma unroll
    for (int k = 0; k < N; k += 2) {
      gtco_unpack2<kBf16>(*reinterpret_cast<const unsigned int*>(p + k), d + k);
    }
  } else {
#pragma unroll
    for (int k = 0; k < N; ++k) d[k] = gtco_half_to_f32<kBf16>(p[k]);
  }
}
template <int N, bool kBf16>
__device__ __forceinline__ void gtco_stv16(unsigned short* __restrict__ p, const float* s) {
  if constexpr (N % 8 == 0) {
#pragma unroll
    for (int k = 0; k < N; k += 8) {
      uint4 t;
      t.x = gtco_pack2<kBf16>(s + k); t.y = gtco_pack2<kBf16>(s + k + 2);
      t.z = gtco_pack2<kBf16>(s + k + 4); t.w = gtco_pack2<kBf16>(s + k + 6);
      *reinterpret_cast<uint4*>(p + k) = t;
    }
  } else if constexpr (N % 4 == 0) {
#pragma unroll
    for (int k = 0; k < N; k += 4) {
      uint2 t;
      t.x = gtco_pack2<kBf16>(s + k); t.y = gtco_pack2<kBf16>(s + k + 2);
      *reinterpret_cast<uint2*>(p + k) = t;
    }
  } else if constexpr (N % 2 == 0) {
#pragma unroll
    for (int k = 0; k < N; k += 2) {
      *reinterpret_cast<unsigned int*>(p + k) = gtco_pack2<kBf16>(s + k);
    }
  } else {
#pragma unroll
    for (int k = 0; k < N; ++k) p[k] = (unsigned short)gtco_f32_to_half<kBf16>(s[k]);
  }
}
template <int kWidth>
__device__ __forceinline__ float gtco_group_sum(float value) {
#pragma unroll
  for (int offset = kWidth / 2; offset > 0; offset /= 2) {
    value += __shfl_xor_sync(0xffffffffu, value, offset);
  }
  return value;
}
template <int kWidth>
__device__ __forceinline__ float gtco_group_max(float value) {
#pragma unroll
  for (int offset = kWidth / 2; offset > 0; offset /= 2) {
    value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, offset));
  }
  return value;
}
/// Merges statistics (n_b, mean_b, m2_b) into (n, mean, m2) (Chan et al.).
__device__ __forceinline__ void gtco_welford_merge(float& n, float& mean, float& m2, float n_b,
                                                   float mean_b, float m2_b) {
  const float total = n + n_b;
  const float weight_b = total > 0.0f ? __fdividef(n_b, total) : 0.0f;
  const float delta = mean_b - mean;
  mean += delta * weight_b;
  m2 += m2_b + delta * delta * n * weight_b;
  n = total;
}
template <int kWidth>
__device__ __forceinline__ void gtco_group_welford(float& n, float& mean, float& m2) {
#pragma unroll
  for (int offset = kWidth / 2; offset > 0; offset /= 2) {
    const float n_b = __shfl_xor_sync(0xffffffffu, n, offset);
    const float mean_b = __shfl_xor_sync(0xffffffffu, mean, offset);
    const float m2_b = __shfl_xor_sync(0xffffffffu, m2, offset);
    gtco_welford_merge(n, mean, m2, n_b, mean_b, m2_b);
  }
  if constexpr (kWidth > 1) {
    // The merge is not symmetric in its operands: every lane takes its group's first lane's.
    const int first = (int)(threadIdx.x & 31u) & ~(kWidth - 1);
    n = __shfl_sync(0xffffffffu, n, first);
    mean = __shfl_sync(0xffffffffu, mean, first);
    m2 = __shfl_sync(0xffffffffu, m2, first);
  }
}
)";

constexpr char kClusterHelpers[] = R"(// ---- thread-block clusters (sm_90+) ----
__device__ __forceinline__ unsigned int gtco_cluster_rank() {
  unsigned int rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  return rank;
}
/// Barrier of every thread of every block of the cluster; orders shared-memory writes before it
/// with reads after it, also across blocks.
__device__ __forceinline__ void gtco_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;"
               ::: "memory");
}
/// The float at `pointer` (into this block's shared memory) in block `rank`'s shared memory.
__device__ __forceinline__ float gtco_cluster_load(const float* pointer, unsigned int rank) {
  unsigned int remote;
  float value;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
               : "=r"(remote) : "r"(gtco_smem_addr(pointer)), "r"(rank));
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(value) : "r"(remote) : "memory");
  return value;
}
)";

}  // namespace

std::string RowsPrelude(bool clusters) {
  return absl::StrCat(kVectorTemplates, clusters ? kClusterHelpers : "");
}

std::string LoadVector(ir::DType dtype, const std::string& pointer, int width,
                       const std::string& dest) {
  switch (dtype) {
    case ir::DType::kF32:
      return absl::StrCat("gtco_ldv<", width, ">(", pointer, ", ", dest, ");");
    case ir::DType::kBF16:
      return absl::StrCat("gtco_ldv16<", width, ", true>(", pointer, ", ", dest, ");");
    case ir::DType::kF16:
      return absl::StrCat("gtco_ldv16<", width, ", false>(", pointer, ", ", dest, ");");
    default:
      break;
  }
  GTCO_CHECK(false, "LoadVector of ", ir::DTypeName(dtype), " (generators check dtypes first)");
  return "";
}

std::string StoreVector(ir::DType dtype, const std::string& pointer, int width,
                        const std::string& src) {
  switch (dtype) {
    case ir::DType::kF32:
      return absl::StrCat("gtco_stv<", width, ">(", pointer, ", ", src, ");");
    case ir::DType::kBF16:
      return absl::StrCat("gtco_stv16<", width, ", true>(", pointer, ", ", src, ");");
    case ir::DType::kF16:
      return absl::StrCat("gtco_stv16<", width, ", false>(", pointer, ", ", src, ");");
    default:
      break;
  }
  GTCO_CHECK(false, "StoreVector of ", ir::DTypeName(dtype), " (generators check dtypes first)");
  return "";
}

std::string ExactFloat(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return absl::StrFormat("__uint_as_float(0x%08xu)", bits);
}

std::string Fill(const std::string& text, const std::map<std::string, std::string>& vars) {
  std::vector<std::pair<std::string, std::string>> replacements;
  for (const auto& [name, value] : vars)
    replacements.push_back({absl::StrCat("${", name, "}"), value});
  return absl::StrReplaceAll(text, replacements);
}

std::vector<int64_t> AlignToView(const std::vector<int64_t>& shape,
                                 const std::vector<int64_t>& out_view) {
  std::vector<int64_t> trimmed = shape;
  while (trimmed.size() > out_view.size()) {
    if (trimmed.front() != 1) return {};
    trimmed.erase(trimmed.begin());
  }
  std::vector<int64_t> aligned(out_view.size() - trimmed.size(), 1);
  aligned.insert(aligned.end(), trimmed.begin(), trimmed.end());
  for (size_t dim = 0; dim < aligned.size(); ++dim) {
    if (aligned[dim] != 1 && aligned[dim] != out_view[dim]) return {};
  }
  return aligned;
}

absl::StatusOr<GroupEpilogue> GroupEpilogue::Create(
    const ir::Workload& w, const std::vector<int64_t>& out_view,
    const std::vector<std::vector<int64_t>>& input_views, int width, int groups,
    const std::string& index_type) {
  // Checks the epilogue against the real shapes first.
  GTCO_RETURN_IF_ERROR(EmitEpilogue(w, "0.0f", "0", "0").status());
  GroupEpilogue epilogue;
  epilogue.out_view_ = out_view;
  epilogue.width_ = width;
  epilogue.groups_ = groups;
  epilogue.index_type_ = index_type;
  std::set<int> used;
  for (const ir::EwInstr& instr : w.epilogue) {
    for (const ir::Operand& arg : instr.args) {
      if (arg.kind == ir::Operand::Kind::kInput) used.insert(arg.index);
    }
  }
  // The epilogue proper reads each prefetched input as a broadcast f32 scalar in<k>[0], through
  // a pointer that Apply() declares in the element's scope.
  ir::Workload prefetched = w;
  for (int input_idx : used) {
    Input input;
    input.index = input_idx;
    input.dtype = w.inputs[input_idx].dtype;
    if (input.dtype != ir::DType::kF32 && input.dtype != ir::DType::kF16 &&
        input.dtype != ir::DType::kBF16) {
      return absl::InvalidArgumentError(absl::StrCat("epilogue input ", input_idx, " is ",
                                                     ir::DTypeName(input.dtype),
                                                     "; CUDA row kernels read f32, f16, bf16"));
    }
    if (static_cast<size_t>(input_idx) >= input_views.size() ||
        input_views[input_idx].size() != out_view.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("epilogue input ", input_idx, " does not broadcast to the output view"));
    }
    input.view = input_views[input_idx];
    input.spans = input.view.back() != 1;
    epilogue.inputs_.push_back(input);
    prefetched.inputs[input_idx] = ir::TensorDesc{ir::DType::kF32, {1}};
  }
  GTCO_ASSIGN_OR_RETURN(epilogue.code_, EmitEpilogue(prefetched, "gtco_acc", "0", "0"));
  return epilogue;
}

std::string GroupEpilogue::Declare() const {
  std::string code;
  for (const Input& input : inputs_) {
    absl::StrAppend(&code, "float gtco_pre", input.index, "[", groups_, "][",
                    input.spans ? width_ : 1, "];\n");
  }
  return code;
}

std::string GroupEpilogue::RowOffset(const Input& input, const std::string& row) const {
  const size_t rank = out_view_.size();
  std::string offset;
  int64_t out_stride = 1;  // in rows of the view
  int64_t in_stride = input.view[rank - 1];
  for (size_t dim = rank - 1; dim-- > 0;) {
    if (input.view[dim] != 1) {
      std::string term = absl::StrCat("(", index_type_, ")(", row, ")");
      if (out_stride != 1) term = absl::StrCat("(", term, " / ", out_stride, ")");
      if (dim > 0) term = absl::StrCat("(", term, " % ", out_view_[dim], ")");
      absl::StrAppend(&offset, offset.empty() ? "" : " + ", term, " * ", in_stride);
    }
    out_stride *= out_view_[dim];
    in_stride *= input.view[dim];
  }
  return offset.empty() ? "0" : offset;
}

std::string GroupEpilogue::Prefetch(const std::string& group, const std::string& row,
                                    const std::string& col) const {
  std::string code;
  for (const Input& input : inputs_) {
    const std::string pointer = absl::StrCat("in", input.index);
    const std::string buffer = absl::StrCat("gtco_pre", input.index, "[", group, "]");
    const std::string offset = RowOffset(input, row);
    if (input.spans) {
      absl::StrAppend(
          &code,
          LoadVector(input.dtype, absl::StrCat(pointer, " + (", offset, " + ", col, ")"), width_,
                     buffer),
          "\n");
    } else {
      absl::StrAppend(&code, buffer, "[0] = ", LoadAsFloat(input.dtype, pointer, offset), ";\n");
    }
  }
  return code;
}

std::string GroupEpilogue::Apply(const std::string& group, const std::string& j,
                                 const std::string& acc, const std::string& dest) const {
  std::string code = "{\n";
  for (const Input& input : inputs_) {
    absl::StrAppend(&code, "const float* in", input.index, " = &gtco_pre", input.index, "[", group,
                    "][", input.spans ? j : "0", "];\n");
  }
  absl::StrAppend(&code, "const float gtco_acc = ", acc, ";\n(void)gtco_acc;\n", code_, dest,
                  " = result;\n}\n");
  return code;
}

}  // namespace gtco::kernels
