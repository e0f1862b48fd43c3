// The runtime's quantization steps (ONNX DynamicQuantizeLinear, QuantizeLinear, DequantizeLinear
// and a QuantizeLinear -> DequantizeLinear pair as one fake quantization) and its f32 -> bf16 cast,
// computed as ONNX Runtime's CPU kernels compute them (division by the scale, round half to even),
// so that a quantized model's integer inputs are the ones its quantizer expected. Large tensors are
// split over the runtime's threads.
#pragma once

#include <cstdint>

#include "runtime/artifact.h"

namespace gtco::runtime {

/// ONNX DynamicQuantizeLinear to u8 over `count` values: lo = min(0, min x), hi = max(0, max x),
/// scale = (hi - lo) / 255, zero point = round(clamp(-lo / scale, 0, 255)) and y = clamp(
/// round(x / scale) + zero point, 0, 255), rounding half to even. An all-zero x gives scale 1
/// (as ONNX Runtime; the ONNX reference gives 1/255), zero point 0 and y 0.
void DynamicQuantizeU8(const float* x, int64_t count, uint8_t* y, float* scale,
                       uint8_t* zero_point);

/// ONNX QuantizeLinear to u8 or i8 (`type`): y[i] = saturate(round-half-even(x[i] / scale[c]) +
/// zero_point[c]), c as in Dequantize; `zero_points` (y's type) may be null (zero).
void Quantize(const float* x, ElemType type, int64_t outer, int64_t channels, int64_t inner,
              const float* scales, const void* zero_points, void* y);

/// QuantizeLinear then DequantizeLinear with the same parameters, in f32 without the integer
/// tensor: out[i] = (saturate(round-half-even(x[i] / scale[c]) + zero_point[c]) - zero_point[c]) *
/// scale[c], saturating to i8 when `type` is kI8, else u8.
void FakeQuantize(const float* x, ElemType type, int64_t outer, int64_t channels, int64_t inner,
                  const float* scales, const void* zero_points, float* out);

/// ONNX Cast from f32 to bf16 over `count` values: each rounded to the nearest bf16, ties to
/// even (as ONNX Runtime), a NaN kept a quiet NaN.
void CastF32ToBf16(const float* x, int64_t count, uint16_t* y);

/// ONNX Cast from bf16 to f32 over `count` values (exact: the bf16 bits become the f32's high
/// half).
void CastBf16ToF32(const uint16_t* x, int64_t count, float* y);

/// The bf16x3 split (graph::kBf16x3SplitOp) of x [rows, k] into y [rows, 3k]: per row [hi | lo |
/// hi], hi = x rounded to bf16 as CastF32ToBf16 rounds, lo = (x - hi) rounded the same way, or 0
/// where hi is not finite.
void SplitF32ToBf16x3(const float* x, int64_t rows, int64_t k, uint16_t* y);

/// Image x [n, c, h, w] in bf16 along its channels (with `split`, the bf16x3 split [hi, lo, hi]:
/// 3c channels; else x rounded to bf16 as CastF32ToBf16 rounds: c channels) into the pair layout
/// y [n, planes_per_image >= those channels / 2, plane, 2] (ir/conv.h): pair q of image i holds
/// channels 2q and 2q + 1 interleaved, each plane the image padded by pads = {top, left, bottom,
/// right} zero pixels, as strides = {h, w} phases (ir::ConvPairIndex: for unit strides the
/// padded image itself), zeros after it up to `plane` pixels; the planes after the channels'
/// of each image zero. c even. Parallel over the pairs.
void ConvertF32ToBf16Pairs(const float* x, int64_t n, int64_t c, int64_t h, int64_t w,
                           const int64_t* pads, const int64_t* strides, bool split,
                           int64_t planes_per_image, int64_t plane, uint16_t* y);

/// ONNX DequantizeLinear: out[i] = (x[i] - zero_point[c]) * scale[c] in f32, where c is 0 for a
/// per-tensor scale (`channels` 1) or the index along the quantized axis, x being [outer,
/// channels, inner]. `x` holds u8, i8 or i32 values (`type`); `zero_points` (x's type) may be
/// null (zero).
void Dequantize(const void* x, ElemType type, int64_t outer, int64_t channels, int64_t inner,
                const float* scales, const void* zero_points, float* out);

}  // namespace gtco::runtime
