// EmitLlvmIr: builds the module (noalias kernel + `void name(void** args)` entry), verifies it
// and prints it as text or writes it as bitcode.
#include "common/codegen/llvm/llvm_codegen.h"

#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/codegen/llvm/function_emitter.h"
#include "common/util/status.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"

namespace gtco::codegen {
namespace {

using internal::ModuleState;

absl::Status ValidateSignature(const ir::LoweredFunc& func) {
  if (func.name.empty()) return absl::InvalidArgumentError("kernel has no name");
  if (func.body == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("kernel '", func.name, "' has no body"));
  }
  std::set<std::string> names;
  for (const ir::BufferParam& param : func.params) {
    if (param.name.empty() || !names.insert(param.name).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "kernel '", func.name, "' has an empty or repeated parameter '", param.name, "'"));
    }
  }
  return absl::OkStatus();
}

/// `void name.kernel(ptr noalias p0, ...)`, internal and always inlined into the entry.
absl::StatusOr<llvm::Function*> EmitKernel(ModuleState* state, const ir::Stmt& body) {
  llvm::LLVMContext& context = *state->context;
  std::vector<llvm::Type*> arg_types(state->params.size(), llvm::PointerType::get(context, 0));
  llvm::Function* kernel = llvm::Function::Create(
      llvm::FunctionType::get(llvm::Type::getVoidTy(context), arg_types, false),
      llvm::Function::InternalLinkage, state->func_name + ".kernel", state->module);
  kernel->addFnAttr(llvm::Attribute::AlwaysInline);
  kernel->addFnAttr(llvm::Attribute::NoUnwind);
  internal::AddBufferParamAttributes(kernel, 0, state->params);
  internal::FunctionEmitter emitter(state, kernel);
  for (size_t i = 0; i < state->params.size(); ++i) {
    emitter.BindParam(state->params[i], kernel->getArg(i));
  }
  GTCO_RETURN_IF_ERROR(emitter.EmitStmt(body));
  emitter.Finish();
  return kernel;
}

/// The exported `void name(void** args)`: loads each buffer pointer and calls the kernel.
void EmitEntry(ModuleState* state, llvm::Function* kernel) {
  llvm::LLVMContext& context = *state->context;
  llvm::Type* pointer_type = llvm::PointerType::get(context, 0);
  llvm::Function* entry = llvm::Function::Create(
      llvm::FunctionType::get(llvm::Type::getVoidTy(context), {pointer_type}, false),
      llvm::Function::ExternalLinkage, state->func_name, state->module);
  entry->addFnAttr(llvm::Attribute::NoUnwind);
  llvm::Value* args = entry->getArg(0);
  args->setName("args");
  llvm::IRBuilder<> builder(llvm::BasicBlock::Create(context, "entry", entry));
  std::vector<llvm::Value*> pointers;
  for (size_t i = 0; i < state->params.size(); ++i) {
    llvm::Value* slot = builder.CreateConstInBoundsGEP1_64(pointer_type, args, i);
    pointers.push_back(builder.CreateAlignedLoad(pointer_type, slot, llvm::Align(8),
                                                 state->params[i].name + ".ptr"));
  }
  builder.CreateCall(kernel, pointers);
  builder.CreateRetVoid();
}

}  // namespace

/// Builds and verifies the module of `func`, then hands it to `write` (text or bitcode). With
/// `discard_value_names` the module's local values stay unnamed (functions keep their names):
/// bitcode for workers needs no names, and naming every value is a good part of building it.
template <typename Write>
absl::StatusOr<std::string> EmitModule(const ir::LoweredFunc& func, bool discard_value_names,
                                       Write write) {
  GTCO_RETURN_IF_ERROR(ValidateSignature(func));
  llvm::LLVMContext context;
  context.setDiscardValueNames(discard_value_names);
  llvm::Module module(func.name, context);
  ModuleState state;
  state.context = &context;
  state.module = &module;
  state.func_name = func.name;
  state.params = func.params;
  GTCO_ASSIGN_OR_RETURN(llvm::Function * kernel, EmitKernel(&state, func.body));
  EmitEntry(&state, kernel);

  std::string verifier_message;
  llvm::raw_string_ostream verifier_stream(verifier_message);
  if (llvm::verifyModule(module, &verifier_stream)) {
    verifier_stream.flush();
    return absl::InternalError(absl::StrCat("generated LLVM IR for '", func.name,
                                            "' does not verify: ", verifier_message));
  }
  std::string bytes;
  llvm::raw_string_ostream stream(bytes);
  write(module, stream);
  stream.flush();
  return bytes;
}

absl::StatusOr<std::string> EmitLlvmIr(const ir::LoweredFunc& func) {
  return EmitModule(func, /*discard_value_names=*/false,
                    [](const llvm::Module& module, llvm::raw_string_ostream& stream) {
                      module.print(stream, nullptr);
                    });
}

absl::StatusOr<std::string> EmitLlvmBitcode(const ir::LoweredFunc& func) {
  return EmitModule(func, /*discard_value_names=*/true,
                    [](const llvm::Module& module, llvm::raw_string_ostream& stream) {
                      llvm::WriteBitcodeToFile(module, stream);
                    });
}

}  // namespace gtco::codegen
