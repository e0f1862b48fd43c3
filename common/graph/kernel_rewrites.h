// Graph pass: ops common models bring that no kernel family runs as they are, rewritten into
// ops that the tuned kernels run (element-wise epilogues, row reductions, layer norms, 2-D
// convolutions), so that they are tuned and fused instead of running as fallback steps.
#pragma once

#include "absl/status/status.h"
#include "common/graph/graph.h"

namespace gtco::graph {

/// On f32 tensors with static shapes (anything else is left as it is, for MarkFallbacks):
///  - HardSigmoid(x) -> Min(Max(x * alpha + beta, 0), 1); HardSwish(x) -> x * HardSigmoid(x)
///    with alpha 1/6, beta 1/2 (element-wise ops the planner fuses as epilogues);
///  - ReduceMean / ReduceSum over any constant axes -> [Transpose moving them behind the kept
///    dims, unless they are a trailing block already (global pooling of NCHW over H and W)] ->
///    Reshape to [kept..., block] -> ReduceMean over the last axis (keepdims) [-> Mul by the
///    block's size] -> Reshape to the output's shape;
///  - InstanceNormalization(x [N, C, ...], scale, bias) with constant scale and bias ->
///    Reshape [N, C, S] -> LayerNormalization over S (unit scale, zero bias) -> Reshape ->
///    Mul(scale [C, 1, ...]) -> Add(bias [C, 1, ...]);
///  - a zero constant Pad of the spatial dims of a 4-D tensor read only by a Conv (explicit
///    pads) -> the Conv's pads grown by it;
///  - a 1-D Conv (3-D X and W, constant W) -> Reshape X [N, C, 1, L] -> the 2-D Conv of kernel
///    [1, k] -> Reshape [N, K, L'];
///  - Dropout in inference mode or of a constant ratio 0, whose mask nobody reads -> Identity;
///    so is a Pad of constant all-zero amounts;
///  - a 2-D Conv (constant W) whose edge rows or columns of taps read only padding for every
///    output position -> the Conv of the live taps (W sliced, pads shrunk by what the dropped
///    taps spanned): atrous convs dilated past the image become 1x1 convs.
absl::Status RewriteForKernels(Graph& graph);

}  // namespace gtco::graph
