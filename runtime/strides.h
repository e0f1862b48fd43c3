// Element strides of row-major tensors, as the data-movement steps read them (CPU and CUDA).
#pragma once

#include <cstdint>
#include <vector>

namespace gtco::runtime {

/// Row-major strides (in elements) of `shape`.
inline std::vector<int64_t> Strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int dim = static_cast<int>(shape.size()) - 2; dim >= 0; --dim) {
    strides[dim] = strides[dim + 1] * shape[dim + 1];
  }
  return strides;
}

/// Element strides (0 where broadcast) of a tensor of shape `shape` read at the indices of
/// `out_shape` (numpy broadcasting; checked by the manifest).
inline std::vector<int64_t> BroadcastStrides(const std::vector<int64_t>& shape,
                                             const std::vector<int64_t>& out_shape) {
  std::vector<int64_t> strides(out_shape.size(), 0);
  const std::vector<int64_t> own = Strides(shape);
  const size_t offset = out_shape.size() - shape.size();
  for (size_t dim = 0; dim < shape.size(); ++dim) {
    strides[offset + dim] = shape[dim] == 1 ? 0 : own[dim];
  }
  return strides;
}

/// True when a tensor of `shape` broadcasts to `out_shape` (numpy broadcasting).
inline bool BroadcastsTo(const std::vector<int64_t>& shape, const std::vector<int64_t>& out_shape) {
  if (shape.size() > out_shape.size()) return false;
  const size_t offset = out_shape.size() - shape.size();
  for (size_t dim = 0; dim < shape.size(); ++dim) {
    if (shape[dim] != 1 && shape[dim] != out_shape[offset + dim]) return false;
  }
  return true;
}

/// Calls visit(flat, offsets, count) for every run of `count` consecutive elements of
/// `out_shape` along its innermost dim, in row-major order: `flat` is the run's first element,
/// offsets[i] input i's element there under its broadcast strides (strides[i].back() is its step
/// along the run).
template <typename Visit>
void ForEachBroadcastRun(const std::vector<int64_t>& out_shape,
                         const std::vector<std::vector<int64_t>>& strides, Visit visit) {
  const int rank = static_cast<int>(out_shape.size());
  int64_t total = 1;
  for (int64_t dim : out_shape) total *= dim;
  std::vector<int64_t> offsets(strides.size(), 0);
  if (total == 0) return;
  if (rank == 0) {
    visit(0, offsets, 1);
    return;
  }
  const int64_t run = out_shape.back();
  std::vector<int64_t> index(rank, 0);
  for (int64_t flat = 0; flat < total; flat += run) {
    visit(flat, offsets, run);
    for (int dim = rank - 2; dim >= 0; --dim) {
      ++index[dim];
      for (size_t i = 0; i < strides.size(); ++i) offsets[i] += strides[i][dim];
      if (index[dim] < out_shape[dim]) break;
      for (size_t i = 0; i < strides.size(); ++i) offsets[i] -= strides[i][dim] * out_shape[dim];
      index[dim] = 0;
    }
  }
}

/// The input strides a transpose with permutation `perm` reads its output's indices at.
inline std::vector<int64_t> TransposeStrides(const std::vector<int64_t>& in_shape,
                                             const std::vector<int64_t>& perm) {
  const std::vector<int64_t> in_strides = Strides(in_shape);
  std::vector<int64_t> strides;
  for (int64_t axis : perm) strides.push_back(in_strides[axis]);
  return strides;
}

/// The input strides and base offset of a slice with params {start, step} per input dim.
inline std::vector<int64_t> SliceStrides(const std::vector<int64_t>& in_shape,
                                         const std::vector<int64_t>& params, int64_t* base) {
  const std::vector<int64_t> in_strides = Strides(in_shape);
  std::vector<int64_t> strides;
  *base = 0;
  for (size_t dim = 0; dim < in_shape.size(); ++dim) {
    *base += params[2 * dim] * in_strides[dim];
    strides.push_back(params[2 * dim + 1] * in_strides[dim]);
  }
  return strides;
}

/// True when a view of `out_shape` with element strides `strides` reads one contiguous run in
/// the output's own order (every dim of extent above 1 at its contiguous stride).
inline bool IsContiguousView(const std::vector<int64_t>& out_shape,
                             const std::vector<int64_t>& strides) {
  const std::vector<int64_t> contiguous = Strides(out_shape);
  for (size_t dim = 0; dim < out_shape.size(); ++dim) {
    if (out_shape[dim] > 1 && strides[dim] != contiguous[dim]) return false;
  }
  return true;
}

/// A gather along `axis` of a tensor of shape `shape` seen as [outer, extent, inner]:
/// out[o, i, :] = in[o, index[i], :], with `inner_bytes` bytes per (o, index) block.
struct GatherGeometry {
  int64_t outer = 1, extent = 1, inner_bytes = 1;
};
inline GatherGeometry GatherGeometryOf(const std::vector<int64_t>& shape, int64_t axis,
                                       int64_t elem_bytes) {
  GatherGeometry g;
  g.inner_bytes = elem_bytes;
  for (int64_t dim = 0; dim < axis; ++dim) g.outer *= shape[dim];
  for (size_t dim = axis + 1; dim < shape.size(); ++dim) g.inner_bytes *= shape[dim];
  g.extent = shape[axis];
  return g;
}

}  // namespace gtco::runtime
