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

/// One thread's share of a DynamicQuantizeLinear: its range's min and max, then its values
/// quantized.
struct QuantizeJob {
  const float* x = nullptr;
  int64_t count = 0, chunks = 1;
  uint8_t* y = nullptr;
  std::vector<float> lo, hi;  // per chunk
  float step = 0.0f, zero = 0.0f;

  std::pair<int64_t, int64_t> Range(int64_t chunk) const {
    const int64_t per = (count + chunks - 1) / chunks;
    return {std::min(count, chunk * per), std::min(count, (chunk + 1) * per)};
  }
};

/// Runs fn(begin, end) over [0, count) split across the runtime's threads, in chunks of at least
/// 16K elements (each step is memory-bound; smaller tensors are not worth a wake-up).
template <typename F>
void ParallelChunks(int64_t count, const F& fn) {
  constexpr int64_t kMinChunk = 1 << 14;
  const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(ParallelThreads(),
                                                                count / kMinChunk));
  if (chunks == 1) {
    fn(int64_t{0}, count);
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
        (*c->fn)(begin, std::min(c->count, begin + per));
      },
      &context);
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
      ParallelChunks(inner, [&](int64_t begin, int64_t end) {
        fn(base, begin, end, zero, scales[c]);
      });
    }
  }
}

// Both loops are compiled for AVX-512, AVX2 and baseline x86-64, picked once per process by the
// CPU it runs on (the runtime itself is built for any x86-64).
#define GTCO_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

GTCO_VECTOR_CLONES void ChunkMinMax(int64_t chunk, void* closure) {
  auto* job = static_cast<QuantizeJob*>(closure);
  const auto [begin, end] = job->Range(chunk);
  const float* __restrict x = job->x;
  // A 16-float vector (GCC's vector extension: zmm, ymm pairs or xmm quads by the clone).
  typedef float Lanes __attribute__((vector_size(kLanes * sizeof(float))));
  Lanes lo_lanes = {}, hi_lanes = {};  // 0 is in the range, as ONNX asks
  int64_t i = begin;
  for (; i + kLanes <= end; i += kLanes) {
    Lanes value;
    std::memcpy(&value, x + i, sizeof(value));
    lo_lanes = value < lo_lanes ? value : lo_lanes;
    hi_lanes = value > hi_lanes ? value : hi_lanes;
  }
  float lo = 0.0f, hi = 0.0f;
  for (; i < end; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  for (int64_t lane = 0; lane < kLanes; ++lane) {
    lo = std::min(lo, lo_lanes[lane]);
    hi = std::max(hi, hi_lanes[lane]);
  }
  job->lo[chunk] = lo;
  job->hi[chunk] = hi;
}

/// y[i] = round-half-even(clamp(x[i] / step, low - zero, high - zero)) + zero for `count` values,
/// stored as bytes (u8, or i8's two's complement when low is -128).
GTCO_VECTOR_CLONES void QuantizeRange(const float* __restrict x, int64_t count, float step,
                                      float zero, float low, float high,
                                      uint8_t* __restrict y) {
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: (v + kRound) - kRound rounds half to even
  const float below = low - zero, above = high - zero;
  for (int64_t i = 0; i < count; ++i) {
    float v = x[i] / step;
    v = v < below ? below : v;
    v = v > above ? above : v;
    y[i] = static_cast<uint8_t>(static_cast<int32_t>((v + kRound) - kRound + zero));
  }
}

/// out[i] = clamp(round-half-even(x[i] / step), low - zero, high - zero) * step: the integer
/// value less its zero point, times the step.
GTCO_VECTOR_CLONES void FakeQuantizeRange(const float* __restrict x, int64_t count, float step,
                                          float zero, float low, float high,
                                          float* __restrict out) {
  constexpr float kRound = 12582912.0f;
  const float below = low - zero, above = high - zero;
  for (int64_t i = 0; i < count; ++i) {
    float v = x[i] / step;
    v = v < below ? below : v;
    v = v > above ? above : v;
    out[i] = ((v + kRound) - kRound) * step;
  }
}

void ChunkQuantize(int64_t chunk, void* closure) {
  auto* job = static_cast<QuantizeJob*>(closure);
  const auto [begin, end] = job->Range(chunk);
  QuantizeRange(job->x + begin, end - begin, job->step, job->zero, 0.0f, 255.0f, job->y + begin);
}

}  // namespace

void DynamicQuantizeU8(const float* x, int64_t count, uint8_t* y, float* scale,
                       uint8_t* zero_point) {
  // Large tensors are split over the runtime's threads (memory-bound: each reads x twice).
  constexpr int64_t kPerChunk = 1 << 14;
  QuantizeJob job;
  job.x = x;
  job.count = count;
  job.chunks = std::max<int64_t>(1, std::min<int64_t>(ParallelThreads(), count / kPerChunk));
  job.y = y;
  job.lo.assign(job.chunks, 0.0f);
  job.hi.assign(job.chunks, 0.0f);
  gtco_parallel_for(job.chunks, &ChunkMinMax, &job);
  const float lo = *std::min_element(job.lo.begin(), job.lo.end());
  const float hi = *std::max_element(job.hi.begin(), job.hi.end());
  const float step = (hi - lo) / 255.0f;
  *scale = step;
  if (!(step > 0.0f)) {  // all zeros (NaN-free inputs): everything quantizes to 0
    *scale = 1.0f;       // as ONNX Runtime (the ONNX reference gives 1/255)
    *zero_point = 0;
    std::memset(y, 0, static_cast<size_t>(count));
    return;
  }
  job.step = step;
  job.zero = std::nearbyint(std::clamp(0.0f - lo / step, 0.0f, 255.0f));
  *zero_point = static_cast<uint8_t>(job.zero);
  gtco_parallel_for(job.chunks, &ChunkQuantize, &job);
}

void Quantize(const float* x, ElemType type, int64_t outer, int64_t channels, int64_t inner,
              const float* scales, const void* zero_points, void* y) {
  const bool is_signed = type == ElemType::kI8;
  const float low = is_signed ? -128.0f : 0.0f, high = is_signed ? 127.0f : 255.0f;
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
  const bool is_signed = type == ElemType::kI8;
  const float low = is_signed ? -128.0f : 0.0f, high = is_signed ? 127.0f : 255.0f;
  ForEachChannel(type, outer, channels, inner, scales, zero_points,
                 [&](int64_t base, int64_t begin, int64_t end, float zero, float step) {
                   FakeQuantizeRange(x + base + begin, end - begin, step, zero, low, high,
                                     out + base + begin);
                 });
}

void Dequantize(const void* x, ElemType type, int64_t outer, int64_t channels, int64_t inner,
                const float* scales, const void* zero_points, float* out) {
  ForEachChannel(type, outer, channels, inner, scales, zero_points,
                 [&](int64_t base, int64_t begin, int64_t end, float zero, float step) {
                   const int64_t at = base + begin, count = end - begin;
                   switch (type) {
                     case ElemType::kU8:
                       DequantizeRange(static_cast<const uint8_t*>(x) + at, count, zero, step,
                                       out + at);
                       break;
                     case ElemType::kI8:
                       DequantizeRange(static_cast<const int8_t*>(x) + at, count, zero, step,
                                       out + at);
                       break;
                     default:
                       DequantizeRange(static_cast<const int32_t*>(x) + at, count, zero, step,
                                       out + at);
                       break;
                   }
                 });
}

}  // namespace gtco::runtime
