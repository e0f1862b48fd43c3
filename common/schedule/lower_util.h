// Shared lowering helpers for sketches: kernel parameters, loop builders that skip empty loops,
// strip-mined vector loops with scalar tails, and checks of knob values.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/ir/loop_ir.h"
#include "common/ir/workload.h"

namespace gtco::schedule {

/// Kernel buffer name of workload input `input_idx` ("in0", "in1", ...).
std::string InputName(int input_idx);
/// Kernel buffer name of the output.
inline constexpr const char* kOutputName = "out";

/// The kernel's params: the workload's inputs in order, then the output.
std::vector<ir::BufferParam> KernelParams(const ir::Workload& w);

/// A loop, or an empty block when `extent` is the constant 0.
ir::Stmt LoopOrSkip(const std::string& var, ir::Expr min, ir::Expr extent, ir::ForKind kind,
                    ir::Stmt body);

/// update(step) for step in [0, extent): a serial loop over groups of `unroll` steps (the group
/// unrolled; loop variables tag_kq and tag_kk), then the remaining steps one at a time (tag_kr).
/// The K loop of the register-tiled matmul micro-kernels.
ir::Stmt UnrolledSteps(const std::string& tag, const ir::Expr& extent, int64_t unroll,
                       const std::function<ir::Stmt(const ir::Expr& step)>& update);

/// Body of a strip-mined range: `index` is the element index; `slot` the accumulator slot
/// (in [0, unroll * lanes); 0 in a scalar tail).
using RangeBody = std::function<ir::Stmt(const ir::Expr& index, const ir::Expr& slot)>;

/// Emits body(index, slot) for index in [begin, begin + length): a serial loop over groups of
/// `unroll` vector bodies of `lanes` lanes (unrolled x vectorized), then the tail: vectorized
/// (whole vectors, then one short vector, slots 0..tail-1) when `length` is a constant, else a
/// scalar loop.
/// `tag` prefixes the loop variables (must be unique in the enclosing scope).
ir::Stmt EmitVectorRange(const std::string& tag, const ir::Expr& begin, const ir::Expr& length,
                         int64_t lanes, int64_t unroll, const RangeBody& body);

/// INVALID_ARGUMENT naming `knob` unless `value` is one of `allowed`.
absl::Status CheckOneOf(const char* knob, int64_t value, const std::vector<int64_t>& allowed);
/// INVALID_ARGUMENT naming `knob` unless lo <= value <= hi.
absl::Status CheckRange(const char* knob, int64_t value, int64_t lo, int64_t hi);

/// Vector widths in lanes the sketches use, capped by the hardware's widest fp32 vector.
std::vector<int64_t> VectorWidths(int max_lanes);

/// The vector knob's values of a vectorized sketch, VectorWidths(max_lanes), with its default
/// (the first value) the widest that one vector of `extent` elements fills, the narrowest where
/// none does. (Narrowest first made every untuned element-wise, row and pool kernel run in
/// 4-lane vectors on 16-lane hosts.)
std::vector<int64_t> VectorWidthsWidestFirst(int64_t extent, int max_lanes);

/// The pruning rule of the vectorized sketches: `unroll` vectors of `vw` lanes fit in `extent`
/// elements, or they are the narrowest choice (one vector of the smallest width for `max_lanes`),
/// which is always admitted so that short extents keep one schedule.
bool VectorGroupFits(int64_t vw, int64_t unroll, int64_t extent, int max_lanes);

/// Elements of `shape` (1 for a scalar).
int64_t NumElements(const std::vector<int64_t>& shape);

}  // namespace gtco::schedule
