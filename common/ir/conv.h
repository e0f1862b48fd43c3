// Convolution workloads (AnchorKind::kConv, semantics in workload.h): canonical shapes, the
// params line of the canonical text, validation, cost and the reference evaluation. Workload's
// methods and reference.cc delegate here for convolutions; most code should use those.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/ir/workload.h"

namespace gtco::ir {

/// Output rows and columns of `p` (OH, OW; see workload.h); <= 0 when the kernel does not fit.
int64_t ConvOutH(const ConvParams& p);
int64_t ConvOutW(const ConvParams& p);

/// Pixels of zeros after the last plane of each image in the pair layout: a block of up to 48
/// output pixels of the padded grid that runs past the grid's last row still reads inside the
/// tensor for kernels up to kConvPairMaxKernelW wide (reads past any other plane land in the
/// next one and feed only the grid's dropped columns).
inline constexpr int64_t kConvPairTail = 80;
inline constexpr int64_t kConvPairMaxKernelW = 33;
inline constexpr int64_t kConvPairMaxStride = 4;
/// The pair layout of a strided conv holds its padded image as stride_h * stride_w phases: phase
/// (a, b) the padded pixels (stride_h * i + a, stride_w * j + b), i < ConvPairPhaseH, j <
/// ConvPairPhaseW (the phase's grid; one phase, the padded image, for unit strides). For tap
/// (r, s) output pixel (oh, ow) reads pixel (oh + r / stride_h, ow + s / stride_w) of phase
/// (r % stride_h, s % stride_w): every tap is a shift within one phase, as in a unit-stride conv.
int64_t ConvPairPhaseH(const ConvParams& p);  ///< ceil((H + pad_top + pad_bottom) / stride_h)
int64_t ConvPairPhaseW(const ConvParams& p);  ///< ceil((W + pad_left + pad_right) / stride_w)
/// Pixels (pairs) of one plane of the pair layout (x_pairs): the phases of the zero-padded image
/// one after the other, stride_h * stride_w * ConvPairPhaseH * ConvPairPhaseW pixels (for unit
/// strides the padded image, (H + pad_top + pad_bottom) x (W + pad_left + pad_right)).
int64_t ConvPairPlane(const ConvParams& p);
/// Zero planes after the C/2 pair planes of each image: at least kConvPairTail pixels.
int64_t ConvPairTailPlanes(const ConvParams& p);
/// Where element (n, c, h, w) of the image lives in the pair layout [N, C/2 +
/// ConvPairTailPlanes, ConvPairPlane, 2]: pair c / 2 of image n, the
/// phase and pixel of padded pixel (h + pad_top, w + pad_left) (for unit strides (h + pad_top) *
/// (W + pad_left + pad_right) + w + pad_left), value c % 2 of the pair. Every element that is no
/// image element is zero.
int64_t ConvPairIndex(const ConvParams& p, int64_t n, int64_t c, int64_t h, int64_t w);
/// The image [N, C, H, W] of an X in the pair layout (the padding dropped).
std::vector<float> ConvPairsToImage(const ConvParams& p, const std::vector<float>& x);
/// The pair layout of an image [N, C, H, W] (padding and tails zero).
std::vector<float> ConvImageToPairs(const ConvParams& p, const std::vector<float>& image);

/// Canonical shapes: X [N, C, H, W] (pair layout: [N, C/2 + ConvPairTailPlanes, ConvPairPlane,
/// 2]), W [K, C/groups,
/// R, S], out [N, K, OH, OW].
std::vector<int64_t> ConvXShape(const ConvParams& p);
std::vector<int64_t> ConvWShape(const ConvParams& p);
std::vector<int64_t> ConvOutShape(const ConvParams& p);

/// A workload computing `p` on f32 X and W without epilogue.
Workload MakeConvWorkload(const ConvParams& p);

/// The params line of the canonical text (no newline), e.g. "conv n=1 c=64 h=56 w=56 k=64 r=3
/// s=3 stride=1,1 pads=1,1,1,1 dilation=1,1 groups=1" (pads top,left,bottom,right), then
/// " layout=pairs" for an X in the pair layout.
std::string ConvParamsLine(const ConvParams& p);
/// Parses a ConvParamsLine() into `p`. INVALID_ARGUMENT on a malformed line or an unknown
/// field.
absl::Status ParseConvParamsLine(const std::string& line, ConvParams& p);

/// The Description() of a conv workload without its epilogue suffix, e.g.
/// "conv 1x64x56x56 k64 3x3 s1 p1" ("/g32" when grouped, " d2" when dilated, " pairs" for the
/// pair layout).
std::string ConvSummary(const Workload& w);

/// Anchor checks: positive sizes, groups dividing C and K, non-negative pads smaller than the
/// dilated kernel, an output of at least 1x1, the X, W and output shapes; with the pair layout
/// unit dilations, strides of at most kConvPairMaxStride, one group, an even C and S <=
/// kConvPairMaxKernelW. INVALID_ARGUMENT naming what is wrong.
absl::Status ValidateConvShapes(const Workload& w);

/// Anchor flops: 2 * N * K * OH * OW * (C / groups) * R * S.
int64_t ConvFlops(const ConvParams& p);

/// The implicit-GEMM view of `p`: per (image, group) a [K/groups, (C/groups)*R*S] weight matrix
/// times the [(C/groups)*R*S, OH*OW] patch matrix of the image; as a matmul: batch N*groups,
/// m K/groups, n OH*OW, k (C/groups)*R*S. Its output is the conv's [N, K, OH, OW] row-major.
MatMulParams ConvGemmView(const ConvParams& p);

/// True for a 1x1 conv with unit strides and no padding: its patch matrix is the image itself,
/// the stored [C/groups, H*W] channel planes of each (image, group).
bool ConvIsPointwise(const ConvParams& p);

/// Plain evaluation of `p` (sums in double) on X and W in their canonical layouts (not the pair
/// layout: ConvPairsToImage first), for the
/// output planes [plane_begin, plane_end) of the N*K planes (plane = n*K + k): writes
/// out[plane * OH*OW + oh*OW + ow] (the [N, K, OH, OW] output, row-major, before any epilogue).
/// GTCO_CHECKs the input sizes.
void ConvReference(const ConvParams& p, const std::vector<float>& x, const std::vector<float>& w,
                   int64_t plane_begin, int64_t plane_end, float* out);

}  // namespace gtco::ir
