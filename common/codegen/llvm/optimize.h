// Internal to codegen_llvm (LLVM types inside): what the JIT and the ahead-of-time compiler
// share.
#pragma once

#include "llvm/IR/Module.h"
#include "llvm/Target/TargetMachine.h"

namespace gtco::codegen {

/// Initializes LLVM's native target, asm printer and parser once per process.
void InitializeLlvmOnce();

/// Runs the O3 new-pass-manager pipeline tuned for `target_machine`.
void OptimizeModule(llvm::Module& module, llvm::TargetMachine& target_machine);

}  // namespace gtco::codegen
