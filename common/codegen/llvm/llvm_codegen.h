// CPU code generator: lowers a loop-IR kernel (ir::LoweredFunc) to LLVM IR (text or bitcode).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "common/ir/loop_ir.h"

namespace gtco::codegen {

/// Textual LLVM IR module for `func`. The module exports `void <func.name>(void** args)` where
/// args[i] points to the data of func.params[i] (at least num_elements elements of its
/// elem_type; bf16 as 16-bit patterns; buffers never alias). Typed calls "dot_u8s8x4" and
/// "dot_bf16x2" in 4-, 8- or 16-lane vectorized loops become the x86 AVX512-VNNI / AVX512-BF16
/// intrinsics (the JIT refuses them on hosts without those features), portable code otherwise;
/// "dot_u8s8x4_wide" is always the portable form (widened products, exact: AVX2 hosts).
/// Target-independent IR (no triple, data layout or target-cpu attributes); the JIT applies the
/// host's CPU and features. Vectorized loops become explicit <L x float> code, unrolled loops are
/// replicated, parallel loops call `gtco_parallel_for` (runtime.h). INVALID_ARGUMENT for IR the
/// generator cannot lower (unbound variables, unknown buffers or calls, a parallel or vectorized
/// loop inside a vectorized loop, non-constant unroll/vector extents, constant indices out of
/// bounds); INTERNAL if the generated module fails LLVM's verifier (a code generator bug).
absl::StatusOr<std::string> EmitLlvmIr(const ir::LoweredFunc& func);

/// The same module as EmitLlvmIr, as LLVM bitcode: what the server sends CPU workers
/// (language "llvm-bc"), several times cheaper to write and to read than the text. Local values
/// are unnamed (only the functions keep their names). CpuJit accepts either form.
absl::StatusOr<std::string> EmitLlvmBitcode(const ir::LoweredFunc& func);

}  // namespace gtco::codegen
