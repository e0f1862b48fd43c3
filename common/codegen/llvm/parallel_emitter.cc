// Parallel loops: the body is outlined into `void(i64 index, ptr closure)` and handed to the
// runtime's gtco_parallel_for. The closure holds the buffer pointers, the loop min and every
// variable in scope; the outlined function re-derives them and calls a noalias body function
// (always inlined) so alias information survives the outlining.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/codegen/llvm/function_emitter.h"
#include "common/util/status.h"

namespace gtco::codegen::internal {

absl::Status FunctionEmitter::EmitParallelFor(const ir::StmtNode& loop) {
  GTCO_ASSIGN_OR_RETURN(llvm::Value * min, EmitUniformI64(loop.operands[0], "loop min"));
  GTCO_ASSIGN_OR_RETURN(llvm::Value * extent, EmitUniformI64(loop.operands[1], "loop extent"));
  if (auto* constant = llvm::dyn_cast<llvm::ConstantInt>(extent)) {
    if (constant->getSExtValue() <= 0) return absl::OkStatus();
  }
  std::vector<std::string> captured;
  std::vector<llvm::Type*> closure_types(param_pointers_.size(), builder_.getPtrTy());
  closure_types.push_back(I64Ty());  // loop min
  for (const auto& [name, value] : vars_) {
    GTCO_CHECK(value.uniform(), "non-uniform variable outside a vectorized loop");
    captured.push_back(name);
    closure_types.push_back(value.value->getType());
  }
  bool body_uses_tiles = false;
  GTCO_ASSIGN_OR_RETURN(
      llvm::Function * outlined,
      OutlineParallelBody(loop, extent, captured, closure_types, &body_uses_tiles));

  auto* closure_type = llvm::StructType::get(*state_->context, closure_types);
  llvm::AllocaInst* closure = alloca_builder_.CreateAlloca(closure_type, nullptr, "closure");
  std::vector<llvm::Value*> fields = param_pointers_;
  fields.push_back(min);
  for (const std::string& name : captured) fields.push_back(vars_.at(name).value);
  for (unsigned i = 0; i < fields.size(); ++i) {
    builder_.CreateStore(fields[i], builder_.CreateStructGEP(closure_type, closure, i));
  }
  llvm::FunctionCallee parallel_for = state_->module->getOrInsertFunction(
      "gtco_parallel_for",
      llvm::FunctionType::get(builder_.getVoidTy(),
                              {I64Ty(), builder_.getPtrTy(), builder_.getPtrTy()}, false));
  llvm::CallInst* call = builder_.CreateCall(parallel_for, {extent, outlined, closure});
  if (body_uses_tiles) tile_reload_points_.push_back(call);
  return absl::OkStatus();
}

absl::StatusOr<llvm::Function*> FunctionEmitter::OutlineParallelBody(
    const ir::StmtNode& loop, llvm::Value* extent, const std::vector<std::string>& captured,
    const std::vector<llvm::Type*>& types, bool* uses_tiles) {
  llvm::LLVMContext& context = *state_->context;
  const std::string base_name =
      absl::StrCat(state_->func_name, ".par", state_->next_outlined_index++);
  const size_t num_params = param_pointers_.size();

  // The body: (i64 index, ptr noalias buffers..., i64 min, captured...).
  std::vector<llvm::Type*> body_args = {I64Ty()};
  body_args.insert(body_args.end(), types.begin(), types.end());
  llvm::Function* body_function =
      llvm::Function::Create(llvm::FunctionType::get(builder_.getVoidTy(), body_args, false),
                             llvm::Function::InternalLinkage, base_name + ".body", state_->module);
  body_function->addFnAttr(llvm::Attribute::AlwaysInline);
  body_function->addFnAttr(llvm::Attribute::NoUnwind);
  AddBufferParamAttributes(body_function, 1, state_->params);

  FunctionEmitter body(state_, body_function);
  body.conditional_depth_ = conditional_depth_ + (llvm::isa<llvm::ConstantInt>(extent) ? 0 : 1);
  for (size_t i = 0; i < num_params; ++i) {
    body.BindParam(state_->params[i], body_function->getArg(1 + i));
  }
  for (size_t i = 0; i < captured.size(); ++i) {
    body.BindVar(captured[i], EmitValue::Uniform(body_function->getArg(2 + num_params + i)));
  }
  llvm::Value* index = body_function->getArg(0);
  index->setName("index");
  llvm::Value* var =
      body.builder().CreateNSWAdd(body_function->getArg(1 + num_params), index, loop.name);
  GTCO_RETURN_IF_ERROR(body.EmitScoped(loop.name, EmitValue::Uniform(var), loop.body[0]));
  body.Finish();
  *uses_tiles = body.uses_tiles_;

  // The outlined entry: unpack the closure and call the body.
  llvm::Function* outlined = llvm::Function::Create(
      llvm::FunctionType::get(builder_.getVoidTy(), {I64Ty(), builder_.getPtrTy()}, false),
      llvm::Function::InternalLinkage, base_name, state_->module);
  outlined->addFnAttr(llvm::Attribute::NoUnwind);
  llvm::IRBuilder<> unpack(llvm::BasicBlock::Create(context, "entry", outlined));
  auto* closure_type = llvm::StructType::get(context, types);
  std::vector<llvm::Value*> call_args = {outlined->getArg(0)};
  for (unsigned i = 0; i < types.size(); ++i) {
    call_args.push_back(
        unpack.CreateLoad(types[i], unpack.CreateStructGEP(closure_type, outlined->getArg(1), i)));
  }
  unpack.CreateCall(body_function, call_args);
  unpack.CreateRetVoid();
  return outlined;
}

}  // namespace gtco::codegen::internal
