// CpuJit: compiles textual LLVM IR for the host CPU with ORC LLJIT at -O3 and returns entries.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gtco::codegen {

/// Signature of every generated kernel entry: args[i] points to the data of parameter i.
using KernelEntry = void (*)(void** args);

/// A JIT for the host CPU. Compile and Reset are serialized by an internal mutex (thread-safe);
/// returned entries stay valid until the next Reset or the JIT's destruction.
class CpuJit {
 public:
  /// A JIT for the host CPU (llvm::sys::getHostCPUName + getHostCPUFeatures, capped by
  /// GTCO_CPU_ISA: see target::CpuIsaCap; INVALID_ARGUMENT for a bad value), optimizing at -O3.
  /// The generated code can call gtco_parallel_for (runtime.h) and libm (expf, erff, tanhf, ...).
  static absl::StatusOr<std::unique_ptr<CpuJit>> Create();

  ~CpuJit();
  CpuJit(const CpuJit&) = delete;
  CpuJit& operator=(const CpuJit&) = delete;

  /// Parses `llvm_ir_text`, verifies, optimizes (O3 new pass manager) and compiles it; returns the
  /// address of `entry_name`. Each call may reuse function names of earlier calls (every module
  /// gets a fresh JITDylib). INVALID_ARGUMENT for bad IR (with the parser's message) or a missing
  /// entry or unresolved symbol; FAILED_PRECONDITION when the IR calls an x86 intrinsic whose
  /// CPU feature the host lacks (e.g. avx512bf16, avx512vnni).
  absl::StatusOr<KernelEntry> Compile(const std::string& llvm_ir_text,
                                      const std::string& entry_name);

  /// Drops all compiled modules (memory reclaim between many candidates); invalidates every
  /// entry returned so far.
  absl::Status Reset();

  /// The host CPU name the code is compiled for, e.g. "sapphirerapids".
  const std::string& host_cpu() const;
  /// The enabled host features, sorted, e.g. {"avx2", "avx512f", "fma", ...} (no '+').
  const std::vector<std::string>& host_features() const;

  /// Optimized assembly of `llvm_ir_text` for the host (a debugging aid for tests and tools).
  absl::StatusOr<std::string> EmitAssembly(const std::string& llvm_ir_text);

 private:
  struct State;
  explicit CpuJit(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace gtco::codegen
