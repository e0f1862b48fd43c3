// Straightforward softmax and layer normalization in plain C++ (compiled with -O3 -march=native
// -ffast-math, rows split over OpenMP threads): the "what a careful engineer writes by hand"
// baseline for the row-wise workloads.
#pragma once

#include <cstdint>

namespace gtco::bench {

/// out[r, c] = exp(x[r, c] - max_r) / sum_c exp(x[r, c] - max_r), row-major [rows, cols].
void PlainSoftmax(const float* x, int64_t rows, int64_t cols, float* out);

/// out[r, c] = (x[r, c] - mean_r) / sqrt(var_r + epsilon) * scale[c] + bias[c] (biased variance).
void PlainLayerNorm(const float* x, const float* scale, const float* bias, int64_t rows,
                    int64_t cols, float epsilon, float* out);

}  // namespace gtco::bench
