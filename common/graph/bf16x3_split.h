// Graph pass: the activation split of `--precision bf16x3` (common/onnx/mixed_precision.h) taken
// from five ONNX nodes into one runtime step.
#pragma once

#include "absl/status/status.h"
#include "common/graph/graph.h"

namespace gtco::graph {

/// The domain of nodes only GTCO's own passes make; the ONNX importer refuses it in a model.
inline constexpr char kGtcoInternalDomain[] = "ai.gtco.internal";
/// Op type (domain kGtcoInternalDomain) of the fused split: input X f32 [..., K], output bf16
/// [..., 3K] = [hi | lo | hi] along the last axis, hi = X rounded to bf16 (nearest, ties to
/// even), lo = (X - hi) rounded to bf16, or 0 where hi is not finite (inf, NaN).
inline constexpr char kBf16x3SplitOp[] = "Bf16x3Split";
/// Op type (domain kGtcoInternalDomain) of `--precision bf16`'s Cast of a conv input in the pair
/// layout: input X f32 [N, C, H, W], output bf16 in the layout of the Convs that read it
/// (kPairPadsAttr, kPairStridesAttr as for the split), each value rounded to bf16 as Cast rounds.
inline constexpr char kBf16PairsOp[] = "Bf16Pairs";

/// The split's attribute when it writes the pair layout (ir::ConvParams::x_pairs) for Convs:
/// their pads [top, left, bottom, right]. Its output tensor then has the layout's shape [N,
/// 3C/2 + ConvPairTailPlanes, ConvPairPlane, 2] (ir::ConvXShape).
inline constexpr char kPairPadsAttr[] = "gtco_pair_pads";
/// With kPairPadsAttr, when the Convs are strided: their strides [h, w] (the layout's planes then
/// hold the padded image's stride phases, ir/conv.h).
inline constexpr char kPairStridesAttr[] = "gtco_pair_strides";
/// The attribute of each Conv reading a split in the pair layout: the image it convolves [N, 3C,
/// H, W] (its input tensor holds the layout's shape).
inline constexpr char kPairImageAttr[] = "gtco_pair_image";

/// Each Concat(hi, lo, hi) along the last axis with hi = Cast(X, bf16), lo = Cast(Sub(X,
/// Cast(hi, f32)), bf16), X f32 with a static shape, the intermediates read by the pattern only
/// and no graph outputs, becomes one kBf16x3SplitOp node of X writing the Concat's output: one
/// pass over X instead of three casts, an element-wise kernel and a copy. It computes what the
/// nodes compute save where hi is not finite (the literal graph's lo is then NaN, the split's 0:
/// an inf stays an inf in the product). The same along the channels (axis 1) of a 4-D X read
/// only by bias-free bf16 Convs with unit dilations, one group and the same pads and strides
/// (--precision bf16x3's convs): the split writes their pair layout (kPairPadsAttr,
/// kPairStridesAttr) and they read it (kPairImageAttr); such a split of other readers stays
/// unfused (and the bf16 Conv is then refused by CheckSupportedOps). Likewise each Cast of a 4-D
/// f32 X to bf16 read only by such Convs (--precision bf16's convs) becomes one kBf16PairsOp node
/// writing their pair layout. Run after shape inference, constant folding and
/// FoldIntegerMatMulOutputs.
absl::Status FuseBf16x3Splits(Graph& graph);

}  // namespace gtco::graph
