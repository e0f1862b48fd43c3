// Pooling workloads (AnchorKind::kPool, semantics in workload.h): shapes, the params line of the
// canonical text, validation, cost and the reference evaluation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/ir/workload.h"

namespace gtco::ir {

/// Output rows and columns (ONNX: floor, or ceil with ceil_mode where the last window still
/// starts inside the image or its begin padding); <= 0 when the window does not fit.
int64_t PoolOutH(const PoolParams& p);
int64_t PoolOutW(const PoolParams& p);
/// [N, C, H, W] and [N, C, OH, OW].
std::vector<int64_t> PoolXShape(const PoolParams& p);
std::vector<int64_t> PoolOutShape(const PoolParams& p);

/// A workload computing `p` on an f32 X without epilogue.
Workload MakePoolWorkload(const PoolParams& p);

/// "pool op=max n=1 c=64 h=112 w=112 r=3 s=3 stride=2,2 pads=1,1,1,1 dilation=1,1 ceil=0
/// include_pad=0".
std::string PoolParamsLine(const PoolParams& p);
/// INVALID_ARGUMENT on a malformed line or an unknown field.
absl::Status ParsePoolParamsLine(const std::string& line, PoolParams& p);
/// "maxpool 1x64x112x112 3x3 s2 p1" ("avgpool ..."; " ceil", " include_pad" when set).
std::string PoolSummary(const Workload& w);
/// Positive sizes, pads smaller than the dilated window, an output of at least 1x1, the X and
/// output shapes. INVALID_ARGUMENT naming what is wrong.
absl::Status ValidatePoolShapes(const Workload& w);
/// One operation per tap: N * C * OH * OW * R * S.
int64_t PoolFlops(const PoolParams& p);

/// Plain evaluation (sums in double) of planes [plane_begin, plane_end) of the N*C planes into
/// `out` ([N, C, OH, OW] row-major). A window with no tap inside the image gives -inf (max) or
/// NaN (mean, no taps to divide by). GTCO_CHECKs the input size.
void PoolReference(const PoolParams& p, const std::vector<float>& x, int64_t plane_begin,
                   int64_t plane_end, float* out);

}  // namespace gtco::ir
