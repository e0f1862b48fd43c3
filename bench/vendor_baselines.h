// Vendor baselines for the CPU benchmark: OpenBLAS sgemm and oneDNN matmul / softmax /
// layer normalization, each bound once to caller-owned buffers and returned as a callable.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/ir/workload.h"

namespace gtco::bench {

/// One bound execution of a vendor primitive; synchronous (returns when the output is written).
using VendorRun = std::function<void()>;

/// OpenBLAS's build configuration, e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY SkylakeX MAX_THREADS=64".
std::string OpenBlasVersion();
/// Threads OpenBLAS uses from now on.
void SetOpenBlasThreads(int threads);
/// cblas_sgemm (row-major, one call per batch) computing `w` (a kMatMul without epilogue) from
/// `inputs` (A, B) into `out`. UNIMPLEMENTED for other workloads.
absl::StatusOr<VendorRun> MakeOpenBlasRun(const ir::Workload& w, const std::vector<float*>& inputs,
                                          float* out);

/// oneDNN's version, e.g. "oneDNN 2.6.3 (cpu runtime OMP)".
std::string OneDnnVersion();
/// Threads oneDNN's OpenMP runtime uses for parallel regions started from this thread.
void SetOneDnnThreads(int threads);
/// The oneDNN primitive computing `w` without epilogue: dnnl::matmul (batched 3-D when batch > 1),
/// softmax_forward over the last axis, layer_normalization_forward with scale and shift.
/// Created once here; the returned run only executes it and waits on the stream.
/// UNIMPLEMENTED for other workloads; INTERNAL when oneDNN rejects the primitive.
absl::StatusOr<VendorRun> MakeOneDnnRun(const ir::Workload& w, const std::vector<float*>& inputs,
                                        float* out);

/// oneDNN's matmul on low-precision operands (bf16 x bf16 -> f32, u8|s8 x s8 -> s32; oneDNN
/// picks AMX, AVX512-BF16 or VNNI code itself): `w` a plain 2-D matmul without epilogue or zero
/// points, inputs and output typed as w says. With `prepacked_weights` the weights are given
/// oneDNN's own layout (format "any") and reordered into it once here, as a framework does at
/// load time; otherwise every run reads them row-major. UNIMPLEMENTED for other workloads.
absl::StatusOr<VendorRun> MakeOneDnnLowpMatMulRun(const ir::Workload& w,
                                                  const std::vector<void*>& inputs, void* out,
                                                  bool prepacked_weights);

}  // namespace gtco::bench
