// CUDA C generator of the element-wise sketch "cuda_elementwise/v1": the output in its collapsed
// view [.., last], vector groups of vw consecutive elements, each thread prefetching the inputs
// of its `ept` groups (one block-stride apart, so that a warp's accesses are contiguous) before
// computing and storing them, in a grid-stride loop.
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/codegen/cuda/cuda_source.h"
#include "common/kernels/cuda/rows/cuda_rows_sketch.h"
#include "common/kernels/cuda/rows/cuda_rows_util.h"
#include "common/kernels/cuda/rows/rows_emit.h"
#include "common/kernels/family.h"
#include "common/util/status.h"

namespace gtco::kernels {
namespace {

constexpr char kKernel[] = R"(${SIGNATURE} {
${DECLARE}  for (${IDX} base = (${IDX})blockIdx.x * ${STEP} + (${IDX})threadIdx.x; base < ${GROUPS};
       base += (${IDX})gridDim.x * ${STEP}) {
#pragma unroll
    for (int u = 0; u < ${EPT}; ++u) {
      const ${IDX} g = base + u * ${BLOCK};
      if (g < ${GROUPS}) {
        const ${IDX} e = g * ${VW};
${ROW_COL}${PREFETCH}      }
    }
#pragma unroll
    for (int u = 0; u < ${EPT}; ++u) {
      const ${IDX} g = base + u * ${BLOCK};
      if (g < ${GROUPS}) {
        float gtco_o[${VW}];
#pragma unroll
        for (int j = 0; j < ${VW}; ++j) ${APPLY}${STORE}
      }
    }
  }
}
)";

}  // namespace

absl::StatusOr<std::string> GenerateCudaElementwise(const ir::Workload& w, const KnobValues& values,
                                                    const CudaPlan&, const std::string& entry) {
  GTCO_ASSIGN_OR_RETURN(const CudaElementwiseConfig c, DecodeCudaElementwise(w, values));
  const std::string non_float = NonFloatStorage(w);
  if (!non_float.empty()) return absl::InvalidArgumentError(non_float);
  if (c.last % c.vector_width != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "vector width ", c.vector_width, " does not divide the innermost extent ", c.last));
  }
  const CollapsedShapes view = CollapseBroadcastDims(w);
  // 32-bit indices while base + gridDim.x * step stays below 2^31.
  const bool narrow =
      2 * c.groups + c.GroupsPerBlockStep() < (int64_t{1} << 31) && c.elements < (int64_t{1} << 31);
  const std::string index_type = narrow ? "int" : "long long";
  const std::string suffix = narrow ? "" : "LL";
  GTCO_ASSIGN_OR_RETURN(GroupEpilogue epilogue,
                        GroupEpilogue::Create(w, view.out, view.inputs, c.vector_width,
                                              c.groups_per_thread, index_type));
  std::string row_col;
  if (c.last == c.elements) {
    row_col = absl::StrCat("        const ", index_type, " row = 0, col = e;\n");
  } else {
    row_col =
        absl::StrCat("        const ", index_type, " row = e / ", c.last, suffix, ";\n",
                     "        const ", index_type, " col = e - row * ", c.last, suffix, ";\n");
  }
  const std::string vw = absl::StrCat(c.vector_width);
  const std::string kernel =
      Fill(kKernel, {{"SIGNATURE", KernelSignature(w, entry, c.block)},
                     {"DECLARE", epilogue.Declare()},
                     {"IDX", index_type},
                     {"STEP", absl::StrCat(c.GroupsPerBlockStep(), suffix)},
                     {"GROUPS", absl::StrCat(c.groups, suffix)},
                     {"EPT", absl::StrCat(c.groups_per_thread)},
                     {"BLOCK", absl::StrCat(c.block, suffix)},
                     {"VW", vw},
                     {"ROW_COL", row_col},
                     {"PREFETCH", epilogue.Prefetch("u", "row", "col")},
                     {"APPLY", epilogue.Apply("u", "j", "0.0f", "gtco_o[j]")},
                     {"STORE", StoreVector(w.output.dtype, absl::StrCat("out + g * ", vw),
                                           c.vector_width, "gtco_o")}});
  return absl::StrCat(Prelude(), RowsPrelude(false), kernel);
}

}  // namespace gtco::kernels
