// Building blocks of the row-wise and element-wise CUDA generators (rows_gen.cc,
// elementwise_gen.cc): device templates for vector loads and stores of f32/f16/bf16 and for
// shuffle, Welford and cluster reductions; and the epilogue applied to groups of consecutive
// output elements with its extra inputs prefetched by vector loads.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/ir/workload.h"
#include "common/kernels/family.h"

namespace gtco::kernels {

/// Device templates of the row and element-wise kernels, emitted after Prelude():
///  gtco_ldv<N>(const float* p, float* d), gtco_ldv16<N, kBf16>(const unsigned short* p,
///  float* d): load N consecutive elements (p aligned to N elements) with loads of at most 16
///  bytes; gtco_stv<N>, gtco_stv16<N, kBf16>: the stores; gtco_group_sum<W>, gtco_group_max<W>:
///  butterfly reductions over aligned groups of W lanes (W a power of two <= 32, every lane of the
///  warp participating), each lane getting the group's result; gtco_welford_merge and
///  gtco_group_welford<W> for (count, mean, M2) triples. With `clusters`, also gtco_cluster_rank,
///  gtco_cluster_sync and gtco_cluster_load (distributed shared memory, sm_90+).
std::string RowsPrelude(bool clusters);

/// A statement loading `width` consecutive elements of `dtype` (f32, f16 or bf16) at `pointer` (an
/// expression of the parameter's pointer type, aligned to `width` elements) into the float array
/// expression `dest`.
std::string LoadVector(ir::DType dtype, const std::string& pointer, int width,
                       const std::string& dest);
/// A statement storing the float array expression `src` as `width` elements at `pointer`.
std::string StoreVector(ir::DType dtype, const std::string& pointer, int width,
                        const std::string& src);

/// A CUDA float literal holding exactly `value` (finite).
std::string ExactFloat(float value);

/// Replaces every "${NAME}" of `vars` (keys without the braces) in `text`.
std::string Fill(const std::string& text, const std::map<std::string, std::string>& vars);

/// The epilogue of a workload applied to groups of `width` consecutive elements of one row of an
/// output view ([.., last]: the output's shape or a collapsed view of it in the same element
/// order). Each extra input is prefetched once per group: a vector load where it varies along
/// `last`, one scalar load where it broadcasts along it. The epilogue itself is EmitEpilogue's
/// code reading each input through a pointer to its prefetched value.
class GroupEpilogue {
 public:
  /// `input_views[k]` is input k's shape aligned to `out_view` (same rank; each dim out_view[d]
  /// or 1); `index_type` the C integer type of row/col expressions ("int" or "long long");
  /// `groups` the number of groups prefetched at a time. INVALID_ARGUMENT when the epilogue is
  /// malformed, an input does not broadcast, or an input is not f32/f16/bf16.
  static absl::StatusOr<GroupEpilogue> Create(const ir::Workload& w,
                                              const std::vector<int64_t>& out_view,
                                              const std::vector<std::vector<int64_t>>& input_views,
                                              int width, int groups, const std::string& index_type);

  /// Declarations of the prefetch buffers (none without extra inputs).
  std::string Declare() const;
  /// Statements prefetching buffer `group` for view elements (row, col) .. (row, col + width -
  /// 1); `col` is a multiple of `width`.
  std::string Prefetch(const std::string& group, const std::string& row,
                       const std::string& col) const;
  /// A block computing element `j` of buffer `group` from float expression `acc` and assigning
  /// the result to the float lvalue `dest`.
  std::string Apply(const std::string& group, const std::string& j, const std::string& acc,
                    const std::string& dest) const;

 private:
  struct Input {
    int index = 0;
    ir::DType dtype = ir::DType::kF32;
    std::vector<int64_t> view;
    bool spans = false;  ///< varies along the view's last dim (vector loads)
  };
  GroupEpilogue() = default;
  std::string RowOffset(const Input& input, const std::string& row) const;

  std::vector<Input> inputs_;
  std::vector<int64_t> out_view_;
  int width_ = 1, groups_ = 1;
  std::string index_type_;
  std::string code_;  ///< leaves `result`, reading gtco_acc and in<k>[0]
};

/// Input k's shape aligned to `out_view` (leading size-1 dims trimmed or prepended); empty when
/// it does not broadcast to it.
std::vector<int64_t> AlignToView(const std::vector<int64_t>& shape,
                                 const std::vector<int64_t>& out_view);

}  // namespace gtco::kernels
