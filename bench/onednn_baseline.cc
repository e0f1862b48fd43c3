// oneDNN baselines: matmul, softmax and layer normalization primitives bound to caller buffers.
#include <omp.h>

#include <memory>
#include <unordered_map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "bench/vendor_baselines.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace gtco::bench {
namespace {

using dnnl::memory;
using Dims = memory::dims;

/// A created primitive with its bound arguments; executing it is all a run does.
struct BoundPrimitive {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  dnnl::primitive primitive;
  std::unordered_map<int, memory> args;

  void Run() {
    primitive.execute(stream, args);
    stream.wait();
  }
};

memory::desc F32(const Dims& dims, const Dims& strides) {
  return memory::desc(dims, memory::data_type::f32, strides);
}

memory::desc RowMajor(const Dims& dims) {
  return memory::desc(dims, memory::data_type::f32,
                      dims.size() == 1 ? memory::format_tag::a : memory::format_tag::ab);
}

void BindMatMul(const ir::Workload& w, const std::vector<float*>& inputs, float* out,
                BoundPrimitive* bound) {
  const ir::MatMulParams& p = w.matmul;
  const int64_t batch_a = p.a_batched ? p.batch : 1, batch_b = p.b_batched ? p.batch : 1;
  // A is [.., M, K] (stored [.., K, M] when trans_a); B is [.., K, N] (stored [.., N, K]).
  memory::desc a_desc = F32({batch_a, p.m, p.k}, p.trans_a ? Dims{p.m * p.k, 1, p.m}
                                                           : Dims{p.m * p.k, p.k, 1});
  memory::desc b_desc = F32({batch_b, p.k, p.n}, p.trans_b ? Dims{p.k * p.n, 1, p.k}
                                                           : Dims{p.k * p.n, p.n, 1});
  memory::desc c_desc = F32({p.batch, p.m, p.n}, {p.m * p.n, p.n, 1});
  if (p.batch == 1) {  // plain 2-D GEMM, the form oneDNN's users call for one matrix
    a_desc = a_desc.reshape({p.m, p.k});
    b_desc = b_desc.reshape({p.k, p.n});
    c_desc = c_desc.reshape({p.m, p.n});
  }
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_desc, b_desc, c_desc), bound->engine);
  bound->primitive = dnnl::matmul(pd);
  bound->args = {{DNNL_ARG_SRC, memory(a_desc, bound->engine, inputs[0])},
                 {DNNL_ARG_WEIGHTS, memory(b_desc, bound->engine, inputs[1])},
                 {DNNL_ARG_DST, memory(c_desc, bound->engine, out)}};
}

void BindSoftmax(const ir::Workload& w, const std::vector<float*>& inputs, float* out,
                 BoundPrimitive* bound) {
  memory::desc data = RowMajor({w.row.rows, w.row.cols});
  dnnl::softmax_forward::primitive_desc pd(
      dnnl::softmax_forward::desc(dnnl::prop_kind::forward_inference, data, 1), bound->engine);
  bound->primitive = dnnl::softmax_forward(pd);
  bound->args = {{DNNL_ARG_SRC, memory(data, bound->engine, inputs[0])},
                 {DNNL_ARG_DST, memory(data, bound->engine, out)}};
}

void BindLayerNorm(const ir::Workload& w, const std::vector<float*>& inputs, float* out,
                   BoundPrimitive* bound) {
  memory::desc data = RowMajor({w.row.rows, w.row.cols});
  memory::desc channel = RowMajor({w.row.cols});
  dnnl::layer_normalization_forward::primitive_desc pd(
      dnnl::layer_normalization_forward::desc(
          dnnl::prop_kind::forward_inference, data, w.row.epsilon,
          dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift),
      bound->engine);
  bound->primitive = dnnl::layer_normalization_forward(pd);
  bound->args = {{DNNL_ARG_SRC, memory(data, bound->engine, inputs[0])},
                 {DNNL_ARG_SCALE, memory(channel, bound->engine, inputs[1])},
                 {DNNL_ARG_SHIFT, memory(channel, bound->engine, inputs[2])},
                 {DNNL_ARG_DST, memory(data, bound->engine, out)}};
}

}  // namespace

std::string OneDnnVersion() {
  const dnnl_version_t* version = dnnl_version();
  const char* isa = "other";
  switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_avx2:
      isa = "avx2";
      break;
    case dnnl_cpu_isa_avx2_vnni:
      isa = "avx2_vnni";
      break;
    case dnnl_cpu_isa_avx512_core:
      isa = "avx512_core";
      break;
    case dnnl_cpu_isa_avx512_core_vnni:
      isa = "avx512_core_vnni";
      break;
    case dnnl_cpu_isa_avx512_core_bf16:
      isa = "avx512_core_bf16";
      break;
    case dnnl_cpu_isa_avx512_core_amx:
      isa = "avx512_core_amx";
      break;
    default:
      break;
  }
  return absl::StrCat("oneDNN ", version->major, ".", version->minor, ".", version->patch,
                      " (cpu runtime ", version->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : "other",
                      ", effective ISA ", isa, ")");
}

void SetOneDnnThreads(int threads) { omp_set_num_threads(threads); }

absl::StatusOr<VendorRun> MakeOneDnnRun(const ir::Workload& w, const std::vector<float*>& inputs,
                                        float* out) {
  if (!w.epilogue.empty()) return absl::UnimplementedError("oneDNN baseline: no epilogues");
  auto bound = std::make_shared<BoundPrimitive>();
  try {  // the one place oneDNN's exceptions become statuses
    if (w.anchor == ir::AnchorKind::kMatMul && inputs.size() == 2) {
      BindMatMul(w, inputs, out, bound.get());
    } else if (w.anchor == ir::AnchorKind::kSoftmax && inputs.size() == 1) {
      BindSoftmax(w, inputs, out, bound.get());
    } else if (w.anchor == ir::AnchorKind::kLayerNorm && inputs.size() == 3) {
      BindLayerNorm(w, inputs, out, bound.get());
    } else {
      return absl::UnimplementedError(
          absl::StrCat("oneDNN baseline: no primitive for ", w.Description()));
    }
  } catch (const dnnl::error& error) {
    return absl::InternalError(absl::StrCat("oneDNN rejected ", w.Description(), ": ",
                                            error.what(), " (status ", error.status, ")"));
  }
  return VendorRun([bound] { bound->Run(); });
}

absl::StatusOr<VendorRun> MakeOneDnnLowpMatMulRun(const ir::Workload& w,
                                                  const std::vector<void*>& inputs, void* out,
                                                  bool prepacked_weights) {
  const ir::MatMulParams& p = w.matmul;
  auto dnnl_type = [](ir::DType dtype) -> absl::StatusOr<memory::data_type> {
    switch (dtype) {
      case ir::DType::kBF16:
        return memory::data_type::bf16;
      case ir::DType::kU8:
        return memory::data_type::u8;
      case ir::DType::kI8:
        return memory::data_type::s8;
      case ir::DType::kI32:
        return memory::data_type::s32;
      case ir::DType::kF32:
        return memory::data_type::f32;
      default:
        return absl::UnimplementedError(
            absl::StrCat("oneDNN baseline: no data type for ", ir::DTypeName(dtype)));
    }
  };
  if (w.anchor != ir::AnchorKind::kMatMul || inputs.size() != 2 || !w.epilogue.empty() ||
      p.batch != 1 || p.trans_a || p.trans_b || p.a_zero_point != 0 || p.b_zero_point != 0) {
    return absl::UnimplementedError(absl::StrCat(
        "oneDNN low-precision baseline: plain 2-D matmuls without zero points only, not ",
        w.Description()));
  }
  absl::StatusOr<memory::data_type> a_type = dnnl_type(w.inputs[0].dtype);
  absl::StatusOr<memory::data_type> b_type = dnnl_type(w.inputs[1].dtype);
  absl::StatusOr<memory::data_type> c_type = dnnl_type(w.output.dtype);
  for (const auto* type : {&a_type, &b_type, &c_type}) {
    if (!type->ok()) return type->status();
  }
  auto bound = std::make_shared<BoundPrimitive>();
  try {  // the one place oneDNN's exceptions become statuses
    const memory::desc a_desc({p.m, p.k}, *a_type, memory::format_tag::ab);
    const memory::desc b_plain({p.k, p.n}, *b_type, memory::format_tag::ab);
    const memory::desc c_desc({p.m, p.n}, *c_type, memory::format_tag::ab);
    const memory::desc b_desc =
        prepacked_weights ? memory::desc({p.k, p.n}, *b_type, memory::format_tag::any) : b_plain;
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_desc, b_desc, c_desc), bound->engine);
    bound->primitive = dnnl::matmul(pd);
    memory user_b(b_plain, bound->engine, inputs[1]);
    memory weights = user_b;
    if (prepacked_weights && pd.weights_desc() != b_plain) {
      weights = memory(pd.weights_desc(), bound->engine);  // owned by the bound arguments
      dnnl::reorder(user_b, weights).execute(bound->stream, user_b, weights);
      bound->stream.wait();
    }
    bound->args = {{DNNL_ARG_SRC, memory(a_desc, bound->engine, inputs[0])},
                   {DNNL_ARG_WEIGHTS, weights},
                   {DNNL_ARG_DST, memory(c_desc, bound->engine, out)}};
  } catch (const dnnl::error& error) {
    return absl::InternalError(absl::StrCat("oneDNN rejected ", w.Description(), ": ", error.what(),
                                            " (status ", error.status, ")"));
  }
  return VendorRun([bound] { bound->Run(); });
}

}  // namespace gtco::bench
