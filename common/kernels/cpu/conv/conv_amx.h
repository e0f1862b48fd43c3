// Internal to the kernels: the AMX conv of inputs in the pair layout ("conv_amx_bf16/v2",
// conv_amx_sketch.cc), what the registry, the weight packing and tests need of it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/ir/workload.h"
#include "common/kernels/prepack.h"
#include "common/schedule/sketch.h"
#include "common/schedule/trace.h"

namespace gtco::kernels {

/// "conv_amx_bf16/v2": knobs mr, nr, order, tasks, pack_b, kc (see conv_amx_sketch.cc).
const schedule::Sketch& ConvAmxBf16Sketch();
/// "conv_amx_bf16/v1": the same without kc (one pass); replay only.
const schedule::Sketch& ConvAmxBf16SketchV1();

namespace internal {

inline constexpr char kAmxConvSketchName[] = "conv_amx_bf16/v2";
inline constexpr char kAmxConvSketchNameV1[] = "conv_amx_bf16/v1";

/// Empty when `w` is a conv the AMX conv computes (pair layout, bf16 X and W, f32 output, C a
/// multiple of 32, K of 16); otherwise why not.
std::string AmxConvMismatch(const ir::Workload& w);

/// For a conv_amx_bf16 trace: the weights W [K, C, R, S] (`weights`) as the kernel reads them,
/// [K, R, S, C] (shape [K, R*S*C]); nullopt for other traces. INVALID_ARGUMENT for a wrong size.
absl::StatusOr<std::optional<PrepackedOperand>> PrepackAmxConvWeights(
    const ir::Workload& w, const schedule::Trace& t, const std::vector<float>& weights);

}  // namespace internal
}  // namespace gtco::kernels
