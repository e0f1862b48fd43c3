// Plain C++ softmax and layer normalization; vectorized by the compiler (see plain_kernels.h).
#include "bench/plain_kernels.h"

#include <cmath>

namespace gtco::bench {

void PlainSoftmax(const float* x, int64_t rows, int64_t cols, float* out) {
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < rows; ++row) {
    const float* in_row = x + row * cols;
    float* out_row = out + row * cols;
    float row_max = in_row[0];
    for (int64_t col = 0; col < cols; ++col) row_max = std::fmax(row_max, in_row[col]);
    float sum = 0.0f;
    for (int64_t col = 0; col < cols; ++col) {
      out_row[col] = std::exp(in_row[col] - row_max);
      sum += out_row[col];
    }
    const float inverse = 1.0f / sum;
    for (int64_t col = 0; col < cols; ++col) out_row[col] *= inverse;
  }
}

void PlainLayerNorm(const float* x, const float* scale, const float* bias, int64_t rows,
                    int64_t cols, float epsilon, float* out) {
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < rows; ++row) {
    const float* in_row = x + row * cols;
    float* out_row = out + row * cols;
    float sum = 0.0f;
    for (int64_t col = 0; col < cols; ++col) sum += in_row[col];
    const float mean = sum / cols;
    float squares = 0.0f;
    for (int64_t col = 0; col < cols; ++col) {
      const float centered = in_row[col] - mean;
      squares += centered * centered;
    }
    const float inverse_std = 1.0f / std::sqrt(squares / cols + epsilon);
    for (int64_t col = 0; col < cols; ++col) {
      out_row[col] = (in_row[col] - mean) * inverse_std * scale[col] + bias[col];
    }
  }
}

}  // namespace gtco::bench
