// The CUDA C of the data-movement kernels (runtime/cuda_steps.h); the structs repeat the host
// layout field for field.
#include "runtime/cuda_steps.h"

namespace gtco::runtime {

const char* CudaStepKernelsSource() {
  return R"CUDA(
#define GTCO_MAX_RANK 8
typedef long long i64;
struct CopyParams {
  i64 shape[GTCO_MAX_RANK], src_stride[GTCO_MAX_RANK], dst_stride[GTCO_MAX_RANK];
  i64 src_base, dst_base, total;
  int rank, elem_bytes;
};
struct GatherParams { i64 outer, count, extent, inner_bytes; int index_bytes, pad; };
struct CastParams { i64 count; int from, to; };
struct BroadcastParams {
  i64 shape[GTCO_MAX_RANK], stride[3][GTCO_MAX_RANK], total;
  int rank, op, value_bytes, value_is_f32;
};

__device__ __forceinline__ void copy_bytes(char* dst, const char* src, int bytes) {
  switch (bytes) {
    case 1: *dst = *src; break;
    case 2: *(unsigned short*)dst = *(const unsigned short*)src; break;
    case 4: *(unsigned int*)dst = *(const unsigned int*)src; break;
    default: *(unsigned long long*)dst = *(const unsigned long long*)src; break;
  }
}

extern "C" __global__ void gtco_step_copy(const char* __restrict__ src, char* __restrict__ dst,
                                          CopyParams p) {
  for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < p.total;
       i += (i64)gridDim.x * blockDim.x) {
    i64 rest = i, from = p.src_base, to = p.dst_base;
    for (int d = p.rank - 1; d >= 0; --d) {
      const i64 index = rest % p.shape[d];
      rest /= p.shape[d];
      from += index * p.src_stride[d];
      to += index * p.dst_stride[d];
    }
    copy_bytes(dst + to * p.elem_bytes, src + from * p.elem_bytes, p.elem_bytes);
  }
}

extern "C" __global__ void gtco_step_gather(const char* __restrict__ data,
                                            const char* __restrict__ indices,
                                            char* __restrict__ out, int* __restrict__ error,
                                            GatherParams p) {
  const i64 total = p.outer * p.count * p.inner_bytes;
  for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < total;
       i += (i64)gridDim.x * blockDim.x) {
    const i64 byte = i % p.inner_bytes, row = i / p.inner_bytes;
    const i64 at = row % p.count, o = row / p.count;
    i64 index = p.index_bytes == 8 ? ((const i64*)indices)[at] : ((const int*)indices)[at];
    if (index < 0) index += p.extent;
    if (index < 0 || index >= p.extent) {
      atomicCAS(error, 0, (int)(at + 1));
      continue;
    }
    out[i] = data[(o * p.extent + index) * p.inner_bytes + byte];
  }
}

__device__ float half_to_float(unsigned short h) {
  const unsigned int sign = (h & 0x8000u) << 16, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  unsigned int bits;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {  // subnormal: normalize
      int shift = 0;
      unsigned int m = mantissa;
      while (!(m & 0x400)) { m <<= 1; ++shift; }
      bits = sign | ((127 - 15 - shift + 1) << 23) | ((m & 0x3ff) << 13);
    }
  } else if (exponent == 31) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  return __int_as_float((int)bits);
}

__device__ float load_as_float(const char* src, int type, i64 i) {
  switch (type) {
    case 0: return ((const float*)src)[i];
    case 1: return __int_as_float(((int)((const unsigned short*)src)[i]) << 16);
    case 2: return half_to_float(((const unsigned short*)src)[i]);
    case 3: return (float)((const signed char*)src)[i];
    case 4: return (float)((const unsigned char*)src)[i];
    case 5: return (float)((const int*)src)[i];
    case 6: return (float)((const i64*)src)[i];
    default: return ((const unsigned char*)src)[i] != 0 ? 1.0f : 0.0f;
  }
}

__device__ unsigned short float_to_bf16(float value) {
  unsigned int bits = (unsigned int)__float_as_int(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((bits >> 16) | 0x40);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return (unsigned short)(bits >> 16);
}

extern "C" __global__ void gtco_step_cast(const char* __restrict__ src, char* __restrict__ dst,
                                          CastParams p) {
  for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < p.count;
       i += (i64)gridDim.x * blockDim.x) {
    const float value = load_as_float(src, p.from, i);
    if (p.to == 1) {
      ((unsigned short*)dst)[i] = float_to_bf16(value);
    } else {
      ((float*)dst)[i] = value;
    }
  }
}

extern "C" __global__ void gtco_step_broadcast(const char* __restrict__ a,
                                               const char* __restrict__ b,
                                               const char* __restrict__ c, char* __restrict__ out,
                                               BroadcastParams p) {
  for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < p.total;
       i += (i64)gridDim.x * blockDim.x) {
    i64 rest = i, at[3] = {0, 0, 0};
    for (int d = p.rank - 1; d >= 0; --d) {
      const i64 index = rest % p.shape[d];
      rest /= p.shape[d];
      for (int k = 0; k < 3; ++k) at[k] += index * p.stride[k][d];
    }
    const int bytes = p.value_bytes;
    if (p.op == 0) {
      copy_bytes(out + i * bytes, a + at[0] * bytes, bytes);
    } else if (p.op == 1) {
      bool same;
      if (p.value_is_f32) {
        same = ((const float*)a)[at[0]] == ((const float*)b)[at[1]];
      } else {
        same = true;
        for (int k = 0; k < bytes; ++k) same = same && a[at[0] * bytes + k] == b[at[1] * bytes + k];
      }
      out[i] = same ? 1 : 0;
    } else {
      const char* pick = a[at[0]] != 0 ? b + at[1] * bytes : c + at[2] * bytes;
      copy_bytes(out + i * bytes, pick, bytes);
    }
  }
}
)CUDA";
}

}  // namespace gtco::runtime
