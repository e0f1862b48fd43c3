// Quantization steps of the runtime.
#include "runtime/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "runtime/parallel.h"

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

/// Chunks ParallelChunks splits `count` elements into: at most one per thread, each of at least
/// 16K elements (the steps are memory-bound; smaller tensors are not worth a wake-up).
int64_t ChunkCount(int64_t count) {
  constexpr int64_t kMinChunk = 1 << 14;
  return std::max<int64_t>(1, std::min<int64_t>(ParallelThreads(), count / kMinChunk));
}

/// Runs fn(chunk, begin, end) for each of ChunkCount(count) contiguous chunks of [0, count), on
/// the runtime's threads.
template <typename F>
void ParallelChunks(int64_t count, const F& fn) {
  const int64_t chunks = ChunkCount(count);
  if (chunks == 1) {
    fn(int64_t{0}, int64_t{0}, count);
    return;
  }
  struct Context {
    const F* fn;
    int64_t count, chunks;
  } context{&fn, count, chunks};
  gtco_parallel_for(
      chunks,
      [](int64_t chunk, void* closure) {
        const auto* c = static_cast<const Context*>(closure);
        const int64_t per = (c->count + c->chunks - 1) / c->chunks;
        const int64_t begin = std::min(c->count, chunk * per);
        (*c->fn)(chunk, begin, std::min(c->count, begin + per));
      },
      &context);
}

/// The values of an 8-bit integer type (i8 or u8) as floats: [low, high].
std::pair<float, float> IntegerRange(ElemType type) {
  return type == ElemType::kI8 ? std::pair{-128.0f, 127.0f} : std::pair{0.0f, 255.0f};
}

/// Per quantization channel of an [outer, channels, inner] tensor: fn(first element, begin, end,
/// zero point, scale) over [begin, end) of its `inner` elements, split over the threads.
template <typename F>
void ForEachChannel(ElemType zero_type, int64_t outer, int64_t channels, int64_t inner,
                    const float* scales, const void* zero_points, const F& fn) {
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t c = 0; c < channels; ++c) {
      const float zero =
          zero_points == nullptr ? 0.0f : static_cast<float>(ValueAt(zero_points, zero_type, c));
      const int64_t base = (o * channels + c) * inner;
      ParallelChunks(inner, [&](int64_t, int64_t begin, int64_t end) {
        fn(base, begin, end, zero, scales[c]);
      });
    }
  }
}

// The loops below are compiled for AVX-512, AVX2 and baseline x86-64, picked once per process by
// the CPU it runs on (the runtime itself is built for any x86-64).
#define GTCO_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

/// The bf16 bits of the f32 with bits `bits`: rounded to nearest, ties to even; a NaN a quiet
/// NaN. All-ones masks, not branches, so that the loops calling it are vectorized.
inline uint32_t Bf16Bits(uint32_t bits) {
  const uint32_t nan = 0u - static_cast<uint32_t>((bits & 0x7fffffffu) > 0x7f800000u);
  return (((bits >> 16) | 0x40u) & nan) | (((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16) & ~nan);
}

/// y[i] = x[i] rounded to bf16 (Bf16Bits) over [begin, end).
GTCO_VECTOR_CLONES void CastToBf16Range(const float* __restrict x, int64_t begin, int64_t end,
                                        uint16_t* __restrict y) {
  for (int64_t i = begin; i < end; ++i) {
    uint32_t bits;
    std::memcpy(&bits, x + i, 4);
    y[i] = static_cast<uint16_t>(Bf16Bits(bits));
  }
}

/// y[i] = x[i] widened to f32 over [begin, end).
GTCO_VECTOR_CLONES void CastFromBf16Range(const uint16_t* __restrict x, int64_t begin, int64_t end,
                                          float* __restrict y) {
  for (int64_t i = begin; i < end; ++i) {
    const uint32_t bits = static_cast<uint32_t>(x[i]) << 16;
    std::memcpy(y + i, &bits, 4);
  }
}

/// hi (the value rounded to bf16) and lo (the rest rounded to bf16, +0 where hi is not finite)
/// of one value: the bf16x3 split.
inline void SplitValue(float value, uint32_t* high, uint32_t* low) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  *high = Bf16Bits(bits);
  const uint32_t high_bits = *high << 16;
  float high_value;
  std::memcpy(&high_value, &high_bits, 4);
  const uint32_t finite = 0u - static_cast<uint32_t>((*high & 0x7f80u) != 0x7f80u);
  const float rest = value - high_value;
  uint32_t rest_bits;
  std::memcpy(&rest_bits, &rest, 4);
  *low = Bf16Bits(rest_bits & finite);
}

/// SplitF32ToBf16x3 of rows [begin, end): branch-free per value, so that each clone's loop over a
/// row is vectorized.

GTCO_VECTOR_CLONES void SplitBf16x3Rows(const float* __restrict x, int64_t begin, int64_t end,
                                        int64_t k, uint16_t* __restrict y) {
  for (int64_t row = begin; row < end; ++row) {
    const float* in = x + row * k;
    uint16_t* out = y + row * 3 * k;
    for (int64_t i = 0; i < k; ++i) {
      uint32_t high, low;
      SplitValue(in[i], &high, &low);
      out[i] = static_cast<uint16_t>(high);
      out[k + i] = static_cast<uint16_t>(low);
      out[2 * k + i] = static_cast<uint16_t>(high);
    }
  }
}

/// The min and max of x[0, count) and 0 (ONNX's range always holds 0).
GTCO_VECTOR_CLONES void MinMaxRange(const float* __restrict x, int64_t count, float* lo_out,
                                    float* hi_out) {
  // A 16-float vector (GCC's vector extension: zmm, ymm pairs or xmm quads by the clone).
  typedef float Lanes __attribute__((vector_size(kLanes * sizeof(float))));
  Lanes lo_lanes = {}, hi_lanes = {};
  int64_t i = 0;
  for (; i + kLanes <= count; i += kLanes) {
    Lanes value;
    std::memcpy(&value, x + i, sizeof(value));
    lo_lanes = value < lo_lanes ? value : lo_lanes;
    hi_lanes = value > hi_lanes ? value : hi_lanes;
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
  *lo_out = lo;
  *hi_out = hi;
}

/// x / step clamped to [below, above], rounded half to even by adding and subtracting 1.5 * 2^23
/// (exact for |v| <= 2^22 in the default rounding mode; IEEE arithmetic, no -ffast-math here,
/// keeps it as written): no libm call, so the loops below vectorize.
__attribute__((always_inline)) inline float RoundedSteps(float x, float step, float below,
                                                         float above) {
  constexpr float kRound = 12582912.0f;
  float v = x / step;
  v = v < below ? below : v;
  v = v > above ? above : v;
  return (v + kRound) - kRound;
}

/// y[i] = round-half-even(clamp(x[i] / step, low - zero, high - zero)) + zero for `count` values,
/// stored as bytes (u8, or i8's two's complement when low is -128).
GTCO_VECTOR_CLONES void QuantizeRange(const float* __restrict x, int64_t count, float step,
                                      float zero, float low, float high, uint8_t* __restrict y) {
  const float below = low - zero, above = high - zero;
  for (int64_t i = 0; i < count; ++i) {
    y[i] =
        static_cast<uint8_t>(static_cast<int32_t>(RoundedSteps(x[i], step, below, above) + zero));
  }
}

/// out[i] = clamp(round-half-even(x[i] / step), low - zero, high - zero) * step: the integer
/// value less its zero point, times the step.
GTCO_VECTOR_CLONES void FakeQuantizeRange(const float* __restrict x, int64_t count, float step,
                                          float zero, float low, float high,
                                          float* __restrict out) {
  const float below = low - zero, above = high - zero;
  for (int64_t i = 0; i < count; ++i) out[i] = RoundedSteps(x[i], step, below, above) * step;
}

}  // namespace

void DynamicQuantizeU8(const float* x, int64_t count, uint8_t* y, float* scale,
                       uint8_t* zero_point) {
  // Two passes, each split over the runtime's threads: the range, then the values.
  std::vector<float> lo(ChunkCount(count), 0.0f), hi(lo.size(), 0.0f);
  ParallelChunks(count, [&](int64_t chunk, int64_t begin, int64_t end) {
    MinMaxRange(x + begin, end - begin, &lo[chunk], &hi[chunk]);
  });
  const float low = *std::min_element(lo.begin(), lo.end());
  const float step = (*std::max_element(hi.begin(), hi.end()) - low) / 255.0f;
  if (!(step > 0.0f)) {  // all zeros (NaN-free inputs): everything quantizes to 0
    *scale = 1.0f;       // as ONNX Runtime (the ONNX reference gives 1/255)
    *zero_point = 0;
    std::memset(y, 0, static_cast<size_t>(count));
    return;
  }
  *scale = step;
  const float zero = std::nearbyint(std::clamp(0.0f - low / step, 0.0f, 255.0f));
  *zero_point = static_cast<uint8_t>(zero);
  ParallelChunks(count, [&](int64_t, int64_t begin, int64_t end) {
    QuantizeRange(x + begin, end - begin, step, zero, 0.0f, 255.0f, y + begin);
  });
}

void Quantize(const float* x, ElemType type, int64_t outer, int64_t channels, int64_t inner,
              const float* scales, const void* zero_points, void* y) {
  // Plain locals, not a structured binding: lambdas cannot capture those in C++17 (clang).
  const std::pair<float, float> range = IntegerRange(type);
  const float low = range.first, high = range.second;
  ForEachChannel(type, outer, channels, inner, scales, zero_points,
                 [&](int64_t base, int64_t begin, int64_t end, float zero, float step) {
                   QuantizeRange(x + base + begin, end - begin, step, zero, low, high,
                                 static_cast<uint8_t*>(y) + base + begin);
                 });
}

namespace {

/// out[i] = (x[i] - zero) * step for `count` values of type T (inlined into each clone below:
/// multiversioned functions cannot be templates).
template <typename T>
__attribute__((always_inline)) inline void DequantizeBody(const T* __restrict x, int64_t count,
                                                          float zero, float step,
                                                          float* __restrict out) {
  for (int64_t i = 0; i < count; ++i) out[i] = (static_cast<float>(x[i]) - zero) * step;
}

GTCO_VECTOR_CLONES void DequantizeRange(const uint8_t* __restrict x, int64_t count, float zero,
                                        float step, float* __restrict out) {
  DequantizeBody(x, count, zero, step, out);
}

GTCO_VECTOR_CLONES void DequantizeRange(const int8_t* __restrict x, int64_t count, float zero,
                                        float step, float* __restrict out) {
  DequantizeBody(x, count, zero, step, out);
}

GTCO_VECTOR_CLONES void DequantizeRange(const int32_t* __restrict x, int64_t count, float zero,
                                        float step, float* __restrict out) {
  DequantizeBody(x, count, zero, step, out);
}

}  // namespace

void FakeQuantize(const float* x, ElemType type, int64_t outer, int64_t channels, int64_t inner,
                  const float* scales, const void* zero_points, float* out) {
  // Plain locals, not a structured binding: lambdas cannot capture those in C++17 (clang).
  const std::pair<float, float> range = IntegerRange(type);
  const float low = range.first, high = range.second;
  ForEachChannel(type, outer, channels, inner, scales, zero_points,
                 [&](int64_t base, int64_t begin, int64_t end, float zero, float step) {
                   FakeQuantizeRange(x + base + begin, end - begin, step, zero, low, high,
                                     out + base + begin);
                 });
}

void Dequantize(const void* x, ElemType type, int64_t outer, int64_t channels, int64_t inner,
                const float* scales, const void* zero_points, float* out) {
  ForEachChannel(
      type, outer, channels, inner, scales, zero_points,
      [&](int64_t base, int64_t begin, int64_t end, float zero, float step) {
        const int64_t at = base + begin, count = end - begin;
        switch (type) {
          case ElemType::kU8:
            DequantizeRange(static_cast<const uint8_t*>(x) + at, count, zero, step, out + at);
            break;
          case ElemType::kI8:
            DequantizeRange(static_cast<const int8_t*>(x) + at, count, zero, step, out + at);
            break;
          default:
            DequantizeRange(static_cast<const int32_t*>(x) + at, count, zero, step, out + at);
            break;
        }
      });
}

void CastF32ToBf16(const float* x, int64_t count, uint16_t* y) {
  ParallelChunks(count,
                 [&](int64_t, int64_t begin, int64_t end) { CastToBf16Range(x, begin, end, y); });
}

void CastBf16ToF32(const uint16_t* x, int64_t count, float* y) {
  ParallelChunks(count,
                 [&](int64_t, int64_t begin, int64_t end) { CastFromBf16Range(x, begin, end, y); });
}

/// One image row of two channels (a, b) as pair words: hi (a | b << 16) into `high_a` and
/// `high_b`, lo into `low`.
GTCO_VECTOR_CLONES void SplitPairRow(const float* __restrict a, const float* __restrict b,
                                     int64_t width, uint32_t* __restrict high_a,
                                     uint32_t* __restrict low, uint32_t* __restrict high_b) {
  for (int64_t i = 0; i < width; ++i) {
    uint32_t high0, low0, high1, low1;
    SplitValue(a[i], &high0, &low0);
    SplitValue(b[i], &high1, &low1);
    const uint32_t high = high0 | (high1 << 16);
    high_a[i] = high;
    high_b[i] = high;
    low[i] = low0 | (low1 << 16);
  }
}

/// One image row of two channels (a, b) as pair words rounded to bf16 (a | b << 16) into `out`.
GTCO_VECTOR_CLONES void CastPairRow(const float* __restrict a, const float* __restrict b,
                                    int64_t width, uint32_t* __restrict out) {
  for (int64_t i = 0; i < width; ++i) {
    uint32_t bits_a, bits_b;
    std::memcpy(&bits_a, a + i, 4);
    std::memcpy(&bits_b, b + i, 4);
    out[i] = Bf16Bits(bits_a) | (Bf16Bits(bits_b) << 16);
  }
}

/// The stride phases of one plane of pair words (`staged`: h x w words) into `out`: phase (p, q)
/// of the padded image holds padded pixels (sh * i + p, sw * j + q), i < phase_h, j < phase_w;
/// pixels outside the image zero. Writes sh * sw * phase_h * phase_w words, each once, with no
/// call per row (ResNet's phase rows hold 4 to 29 pixels).
GTCO_VECTOR_CLONES void WritePairPhases(const uint32_t* __restrict staged, int64_t h, int64_t w,
                                        int64_t top, int64_t left, int64_t sh, int64_t sw,
                                        int64_t phase_h, int64_t phase_w,
                                        uint32_t* __restrict out) {
  int64_t at = 0;  // the phase row's first pixel in the plane
  for (int64_t p = 0; p < sh; ++p) {
    for (int64_t q = 0; q < sw; ++q) {
      for (int64_t i = 0; i < phase_h; ++i, at += phase_w) {
        const int64_t row = sh * i + p - top;
        if (row < 0 || row >= h) {
          for (int64_t j = 0; j < phase_w; ++j) out[at + j] = 0;
          continue;
        }
        const int64_t first = row * w + q - left;  // staged index of the row's pixel j = 0
        for (int64_t j = 0; j < phase_w; ++j) {
          const int64_t column = sw * j + q - left;
          const bool inside = column >= 0 && column < w;
          out[at + j] = inside ? staged[first + sw * j] : 0;
        }
      }
    }
  }
}

void ConvertF32ToBf16Pairs(const float* x, int64_t n, int64_t c, int64_t h, int64_t w,
                           const int64_t* pads, const int64_t* strides, bool split,
                           int64_t planes_per_image, int64_t plane, uint16_t* y) {
  // The bottom pad (pads[2]) is part of the zeros after the last image row.
  const int64_t top = pads[0], left = pads[1], right = pads[3];
  const int64_t sh = strides[0], sw = strides[1];
  const int64_t padded_w = w + left + right, pairs = c / 2, image = h * w;
  if (n <= 0 || pairs <= 0 || image <= 0) return;
  const int64_t phase_h = (h + top + pads[2] + sh - 1) / sh, phase_w = (padded_w + sw - 1) / sw;
  const bool phased = sh != 1 || sw != 1;
  const int parts = split ? 3 : 1;  // the split's [hi, lo, hi]
  uint32_t* words = reinterpret_cast<uint32_t*>(y);
  // Chunks of elements, each taken as the source pairs that start in it (as SplitF32ToBf16x3's
  // rows): a pair (image i, channels 2q and 2q + 1) writes plane q (with the split also planes
  // pairs + q (lo) and 2 * pairs + q (hi)) of image i, the last pair also the image's zero planes
  // after those.
  const int64_t per_pair = 2 * image;
  ParallelChunks(n * pairs * per_pair, [&](int64_t, int64_t begin, int64_t end) {
    for (int64_t source = (begin + per_pair - 1) / per_pair;
         source < (end + per_pair - 1) / per_pair; ++source) {
      const int64_t i = source / pairs, q = source % pairs;
      const float* a = x + (i * c + 2 * q) * image;
      const float* b = a + image;
      uint32_t* planes[3];
      for (int part = 0; part < parts; ++part) {
        planes[part] = words + (i * planes_per_image + part * pairs + q) * plane;
      }
      if (q == pairs - 1) {  // the image's zero planes after its last pair
        std::memset(words + (i * planes_per_image + parts * pairs) * plane, 0,
                    4 * (planes_per_image - parts * pairs) * plane);
      }
      auto zero = [&](int64_t from, int64_t count) {
        for (int part = 0; part < parts; ++part) std::memset(planes[part] + from, 0, 4 * count);
      };
      // The pair's words per part (the split's hi, lo, hi; the cast's one) into out[part].
      auto convert = [&](uint32_t* const dest[3]) {
        if (split) {
          SplitPairRow(a, b, image, dest[0], dest[1], dest[2]);
        } else {
          CastPairRow(a, b, image, dest[0]);
        }
      };
      uint32_t* out[3] = {};
      if (!phased && left == 0 && right == 0) {  // the image's rows are contiguous in the plane
        zero(0, top * padded_w);
        for (int part = 0; part < parts; ++part) out[part] = planes[part] + top * w;
        convert(out);
        zero((top + h) * w, plane - (top + h) * w);
        continue;
      }
      // Convert the whole image at once (one long vectorized loop; rows of 7-56 pixels would run
      // mostly in the loop's scalar remainder), then place its rows between the pads (or its
      // pixels in their stride phases).
      thread_local std::vector<uint32_t> staged;
      staged.resize(static_cast<size_t>(parts * image));
      for (int part = 0; part < parts; ++part) out[part] = staged.data() + part * image;
      convert(out);
      if (phased) {
        const int64_t written = sh * sw * phase_h * phase_w;
        // hi, then lo; the split's second hi a copy of the first.
        for (int part = 0; part < std::min(parts, 2); ++part) {
          WritePairPhases(out[part], h, w, top, left, sh, sw, phase_h, phase_w, planes[part]);
        }
        if (split) std::memcpy(planes[2], planes[0], 4 * written);
        zero(written, plane - written);
        continue;
      }
      zero(0, top * padded_w + left);
      for (int64_t row = 0; row < h; ++row) {
        const int64_t at = (top + row) * padded_w + left;
        for (int part = 0; part < parts; ++part) {
          std::memcpy(planes[part] + at, out[part] + row * w, 4 * w);
        }
        if (row + 1 < h) zero(at + w, right + left);
      }
      const int64_t written = (top + h - 1) * padded_w + left + w;
      zero(written, plane - written);
    }
  });
}

void SplitF32ToBf16x3(const float* x, int64_t rows, int64_t k, uint16_t* y) {
  if (rows <= 0 || k <= 0) return;
  // ParallelChunks' element chunks, each taken as the rows that start in it (ceil(begin / k) up
  // to ceil(end / k): the chunks' rows partition [0, rows)).
  ParallelChunks(rows * k, [&](int64_t, int64_t begin, int64_t end) {
    SplitBf16x3Rows(x, (begin + k - 1) / k, (end + k - 1) / k, k, y);
  });
}

}  // namespace gtco::runtime
