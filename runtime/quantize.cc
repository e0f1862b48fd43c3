// Quantization steps of the runtime.
#include "runtime/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace gtco::runtime {
namespace {

/// Lanes of the min/max reduction, independent so that the compiler keeps them in vectors.
constexpr int64_t kLanes = 16;

int32_t ValueAt(const void* data, ElemType type, int64_t index) {
  switch (type) {
    case ElemType::kU8:
      return static_cast<const uint8_t*>(data)[index];
    case ElemType::kI8:
      return static_cast<const int8_t*>(data)[index];
    default: {
      int32_t value;
      std::memcpy(&value, static_cast<const char*>(data) + 4 * index, 4);
      return value;
    }
  }
}

}  // namespace

void DynamicQuantizeU8(const float* x, int64_t count, uint8_t* y, float* scale,
                       uint8_t* zero_point) {
  float lo_lanes[kLanes] = {}, hi_lanes[kLanes] = {};  // 0 is in the range, as ONNX asks
  int64_t i = 0;
  for (; i + kLanes <= count; i += kLanes) {
    for (int64_t lane = 0; lane < kLanes; ++lane) {
      const float value = x[i + lane];
      lo_lanes[lane] = value < lo_lanes[lane] ? value : lo_lanes[lane];
      hi_lanes[lane] = value > hi_lanes[lane] ? value : hi_lanes[lane];
    }
  }
  float lo = 0.0f, hi = 0.0f;
  for (; i < count; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  for (int64_t lane = 0; lane < kLanes; ++lane) {
    lo = std::min(lo, lo_lanes[lane]);
    hi = std::max(hi, hi_lanes[lane]);
  }
  const float step = (hi - lo) / 255.0f;
  *scale = step;
  if (!(step > 0.0f)) {  // all zeros (NaN-free inputs): everything quantizes to 0
    *zero_point = 0;
    std::memset(y, 0, static_cast<size_t>(count));
    return;
  }
  const float zero = std::nearbyint(std::clamp(0.0f - lo / step, 0.0f, 255.0f));
  *zero_point = static_cast<uint8_t>(zero);
  for (int64_t j = 0; j < count; ++j) {
    const float q = std::nearbyint(x[j] / step) + zero;
    y[j] = static_cast<uint8_t>(std::clamp(q, 0.0f, 255.0f));
  }
}

void Dequantize(const void* x, ElemType type, int64_t outer, int64_t channels, int64_t inner,
                const float* scales, const void* zero_points, float* out) {
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t c = 0; c < channels; ++c) {
      const int32_t zero = zero_points == nullptr ? 0 : ValueAt(zero_points, type, c);
      const float step = scales[c];
      const int64_t base = (o * channels + c) * inner;
      for (int64_t i = 0; i < inner; ++i) {
        out[base + i] = static_cast<float>(ValueAt(x, type, base + i) - zero) * step;
      }
    }
  }
}

}  // namespace gtco::runtime
