// LLVM initialization and the O3 pipeline, shared by the JIT and the ahead-of-time compiler.
#include "common/codegen/llvm/optimize.h"

#include <mutex>

#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/TargetSelect.h"

namespace gtco::codegen {

void InitializeLlvmOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

void OptimizeModule(llvm::Module& module, llvm::TargetMachine& target_machine) {
  llvm::LoopAnalysisManager loop_analyses;
  llvm::FunctionAnalysisManager function_analyses;
  llvm::CGSCCAnalysisManager cgscc_analyses;
  llvm::ModuleAnalysisManager module_analyses;
  llvm::PassBuilder pass_builder(&target_machine);
  pass_builder.registerModuleAnalyses(module_analyses);
  pass_builder.registerCGSCCAnalyses(cgscc_analyses);
  pass_builder.registerFunctionAnalyses(function_analyses);
  pass_builder.registerLoopAnalyses(loop_analyses);
  pass_builder.crossRegisterProxies(loop_analyses, function_analyses, cgscc_analyses,
                                    module_analyses);
  llvm::ModulePassManager passes =
      pass_builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  passes.run(module, module_analyses);
}

}  // namespace gtco::codegen
