// CPU code generator: lowers a loop-IR kernel (ir::LoweredFunc) to textual LLVM IR.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "common/ir/loop_ir.h"

namespace gtco::codegen {

/// Textual LLVM IR module for `func`. The module exports `void <func.name>(void** args)` where
/// args[i] points to the fp32 data of func.params[i] (at least num_elements floats; buffers
/// never alias). Target-independent IR (no triple, data layout or target-cpu attributes); the
/// JIT applies the host's CPU and features. Vectorized loops become explicit <L x float> code,
/// unrolled loops are replicated, parallel loops call `gtco_parallel_for` (runtime.h).
/// INVALID_ARGUMENT for IR the generator cannot lower (unbound variables, unknown buffers or
/// calls, a parallel or vectorized loop inside a vectorized loop, non-constant unroll/vector
/// extents, constant indices out of bounds); INTERNAL if the generated module fails LLVM's
/// verifier (a code generator bug).
absl::StatusOr<std::string> EmitLlvmIr(const ir::LoweredFunc& func);

}  // namespace gtco::codegen
