// Statement emission: loops (serial, unrolled, vectorized), stores, branches, allocations, lets.
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/codegen/llvm/function_emitter.h"
#include "common/util/status.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Metadata.h"

namespace gtco::codegen::internal {
namespace {

constexpr int64_t kMaxUnrollExtent = 4096;
constexpr int64_t kMaxVectorLanes = 512;
constexpr int64_t kMaxStackAllocBytes = int64_t{4} << 20;  // 4 MiB

std::optional<int64_t> ConstantValue(llvm::Value* value) {
  if (auto* constant = llvm::dyn_cast<llvm::ConstantInt>(value)) return constant->getSExtValue();
  return std::nullopt;
}

}  // namespace

void AddBufferParamAttributes(llvm::Function* function, unsigned first_arg,
                              const std::vector<ir::BufferParam>& params) {
  for (unsigned i = 0; i < params.size(); ++i) {
    function->addParamAttr(first_arg + i, llvm::Attribute::NoAlias);
    if (params[i].num_elements > 0) {
      function->addDereferenceableParamAttr(
          first_arg + i, params[i].num_elements * ir::ScalarTypeBytes(params[i].elem_type));
    }
  }
}

void AttachLoopMetadata(llvm::BranchInst* latch_branch) {
  llvm::LLVMContext& context = latch_branch->getContext();
  llvm::Metadata* vectorize_off[] = {
      llvm::MDString::get(context, "llvm.loop.vectorize.enable"),
      llvm::ConstantAsMetadata::get(llvm::ConstantInt::getFalse(context))};
  llvm::TempMDTuple placeholder = llvm::MDTuple::getTemporary(context, llvm::None);
  llvm::Metadata* operands[] = {placeholder.get(), llvm::MDNode::get(context, vectorize_off)};
  llvm::MDNode* loop_id = llvm::MDNode::getDistinct(context, operands);
  loop_id->replaceOperandWith(0, loop_id);
  latch_branch->setMetadata(llvm::LLVMContext::MD_loop, loop_id);
}

FunctionEmitter::FunctionEmitter(ModuleState* state, llvm::Function* function)
    : state_(state),
      function_(function),
      builder_(*state->context),
      alloca_builder_(*state->context) {
  llvm::BasicBlock* entry = llvm::BasicBlock::Create(*state->context, "entry", function);
  llvm::BasicBlock* body = llvm::BasicBlock::Create(*state->context, "body", function);
  alloca_builder_.SetInsertPoint(llvm::BranchInst::Create(body, entry));
  builder_.SetInsertPoint(body);
  llvm::FastMathFlags flags;
  flags.setAllowContract(true);
  builder_.setFastMathFlags(flags);
}

void FunctionEmitter::BindParam(const ir::BufferParam& param, llvm::Value* pointer) {
  pointer->setName(param.name);
  buffers_[param.name] = BufferBinding{pointer, param.num_elements, true, param.elem_type};
  param_pointers_.push_back(pointer);
}

void FunctionEmitter::Finish() {
  FinishTiles();
  builder_.CreateRetVoid();
}

absl::Status FunctionEmitter::EmitStmt(const ir::Stmt& stmt) {
  if (stmt == nullptr) return absl::InvalidArgumentError("null statement");
  switch (stmt->kind) {
    case ir::StmtKind::kFor:
      return EmitFor(*stmt);
    case ir::StmtKind::kStore:
      return EmitStore(*stmt);
    case ir::StmtKind::kBlock:
      for (const ir::Stmt& child : stmt->body) GTCO_RETURN_IF_ERROR(EmitStmt(child));
      return absl::OkStatus();
    case ir::StmtKind::kIfThenElse:
      return EmitIf(*stmt);
    case ir::StmtKind::kAllocate:
      return EmitAllocate(*stmt);
    case ir::StmtKind::kLetStmt:
      return EmitLet(*stmt);
    case ir::StmtKind::kTileMatMul:
      return EmitTileMatMul(*stmt);
  }
  return absl::InvalidArgumentError("unknown statement kind");
}

absl::Status FunctionEmitter::EmitScoped(const std::string& var, EmitValue value,
                                         const ir::Stmt& body) {
  auto previous = vars_.find(var);
  std::optional<EmitValue> saved;
  if (previous != vars_.end()) saved = previous->second;
  vars_[var] = value;
  absl::Status status = EmitStmt(body);
  if (saved.has_value()) {
    vars_[var] = *saved;
  } else {
    vars_.erase(var);
  }
  return status;
}

absl::StatusOr<llvm::Value*> FunctionEmitter::EmitUniformI64(const ir::Expr& expr,
                                                             const char* what) {
  GTCO_ASSIGN_OR_RETURN(EmitValue value, EmitExpr(expr));
  if (!value.uniform()) {
    return absl::InvalidArgumentError(absl::StrCat(what, " ", ir::ToString(expr),
                                                   " depends on the vectorized loop variable '",
                                                   vector_->var, "'"));
  }
  if (!value.value->getType()->isIntegerTy(64)) {
    return absl::InvalidArgumentError(absl::StrCat(what, " ", ir::ToString(expr), " is not i64"));
  }
  return value.value;
}

absl::Status FunctionEmitter::EmitFor(const ir::StmtNode& loop) {
  if (loop.operands.size() != 2 || loop.body.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat("malformed loop '", loop.name, "'"));
  }
  if (vector_ != nullptr &&
      (loop.for_kind == ir::ForKind::kParallel || loop.for_kind == ir::ForKind::kVectorized)) {
    return absl::InvalidArgumentError(absl::StrCat("a ", ir::ForKindName(loop.for_kind), " loop '",
                                                   loop.name, "' inside the vectorized loop '",
                                                   vector_->var, "' is not supported"));
  }
  switch (loop.for_kind) {
    case ir::ForKind::kSerial:
      return EmitSerialFor(loop);
    case ir::ForKind::kParallel:
      return EmitParallelFor(loop);
    case ir::ForKind::kVectorized:
      return EmitVectorizedFor(loop);
    case ir::ForKind::kUnrolled:
      return EmitUnrolledFor(loop);
  }
  return absl::InvalidArgumentError("unknown loop kind");
}

absl::Status FunctionEmitter::EmitSerialFor(const ir::StmtNode& loop) {
  GTCO_ASSIGN_OR_RETURN(llvm::Value * min, EmitUniformI64(loop.operands[0], "loop min"));
  GTCO_ASSIGN_OR_RETURN(llvm::Value * extent, EmitUniformI64(loop.operands[1], "loop extent"));
  const std::optional<int64_t> constant_extent = ConstantValue(extent);
  if (constant_extent.has_value() && *constant_extent <= 0) return absl::OkStatus();
  if (constant_extent == 1) return EmitScoped(loop.name, EmitValue::Uniform(min), loop.body[0]);

  llvm::LLVMContext& context = *state_->context;
  llvm::BasicBlock* preheader = builder_.GetInsertBlock();
  llvm::BasicBlock* body = llvm::BasicBlock::Create(context, loop.name + ".loop", function_);
  llvm::BasicBlock* exit = llvm::BasicBlock::Create(context, loop.name + ".exit", function_);
  if (constant_extent.has_value()) {
    builder_.CreateBr(body);
  } else {
    builder_.CreateCondBr(builder_.CreateICmpSGT(extent, I64(0)), body, exit);
  }
  builder_.SetInsertPoint(body);
  llvm::PHINode* counter = builder_.CreatePHI(I64Ty(), 2, loop.name + ".i");
  counter->addIncoming(I64(0), preheader);
  llvm::Value* var = builder_.CreateNSWAdd(min, counter, loop.name);
  const int conditional = constant_extent.has_value() ? 0 : 1;
  conditional_depth_ += conditional;
  absl::Status status = EmitScoped(loop.name, EmitValue::Uniform(var), loop.body[0]);
  conditional_depth_ -= conditional;
  GTCO_RETURN_IF_ERROR(status);
  llvm::Value* next = builder_.CreateAdd(counter, I64(1), loop.name + ".next", true, true);
  llvm::BranchInst* latch = builder_.CreateCondBr(builder_.CreateICmpSLT(next, extent), body, exit);
  AttachLoopMetadata(latch);
  counter->addIncoming(next, builder_.GetInsertBlock());
  builder_.SetInsertPoint(exit);
  return absl::OkStatus();
}

absl::Status FunctionEmitter::EmitUnrolledFor(const ir::StmtNode& loop) {
  GTCO_ASSIGN_OR_RETURN(llvm::Value * min, EmitUniformI64(loop.operands[0], "loop min"));
  GTCO_ASSIGN_OR_RETURN(llvm::Value * extent, EmitUniformI64(loop.operands[1], "loop extent"));
  const std::optional<int64_t> count = ConstantValue(extent);
  if (!count.has_value() || *count > kMaxUnrollExtent) {
    return absl::InvalidArgumentError(
        absl::StrCat("unrolled loop '", loop.name, "' needs a constant extent of at most ",
                     kMaxUnrollExtent, ", got ", ir::ToString(loop.operands[1])));
  }
  for (int64_t iteration = 0; iteration < *count; ++iteration) {
    llvm::Value* var = builder_.CreateNSWAdd(min, I64(iteration));
    GTCO_RETURN_IF_ERROR(EmitScoped(loop.name, EmitValue::Uniform(var), loop.body[0]));
  }
  return absl::OkStatus();
}

absl::Status FunctionEmitter::EmitVectorizedFor(const ir::StmtNode& loop) {
  GTCO_ASSIGN_OR_RETURN(llvm::Value * min, EmitUniformI64(loop.operands[0], "loop min"));
  GTCO_ASSIGN_OR_RETURN(llvm::Value * extent, EmitUniformI64(loop.operands[1], "loop extent"));
  const std::optional<int64_t> lanes = ConstantValue(extent);
  if (!lanes.has_value() || *lanes > kMaxVectorLanes) {
    return absl::InvalidArgumentError(
        absl::StrCat("vectorized loop '", loop.name, "' needs a constant extent of at most ",
                     kMaxVectorLanes, ", got ", ir::ToString(loop.operands[1])));
  }
  if (*lanes <= 0) return absl::OkStatus();
  if (*lanes == 1) return EmitScoped(loop.name, EmitValue::Uniform(min), loop.body[0]);
  VectorContext context{loop.name, static_cast<int>(*lanes), nullptr};
  vector_ = &context;
  absl::Status status = EmitScoped(loop.name, EmitValue::Ramp(min, 1), loop.body[0]);
  vector_ = nullptr;
  return status;
}

absl::Status FunctionEmitter::EmitStore(const ir::StmtNode& store) {
  if (store.operands.size() != 2) return absl::InvalidArgumentError("malformed store");
  GTCO_ASSIGN_OR_RETURN(BufferBinding buffer, LookupBuffer(store.name));
  GTCO_ASSIGN_OR_RETURN(EmitValue index, EmitExpr(store.operands[0]));
  GTCO_ASSIGN_OR_RETURN(EmitValue value, EmitExpr(store.operands[1]));
  GTCO_RETURN_IF_ERROR(CheckConstantIndex(store.name, buffer, index));
  if (store.operands[1]->type != buffer.elem_type) {
    return absl::InvalidArgumentError(absl::StrCat(
        "store of ", ir::ScalarTypeName(store.operands[1]->type), " value into buffer '",
        store.name, "' of ", ir::ScalarTypeName(buffer.elem_type), " elements"));
  }
  llvm::Type* elem_type = ScalarLlvmType(*state_->context, buffer.elem_type);
  const llvm::Align align(ir::ScalarTypeBytes(buffer.elem_type));
  llvm::Value* mask = vector_ != nullptr ? vector_->mask : nullptr;
  if (index.uniform() && mask == nullptr) {
    // Every lane writes the same element: the last lane's value is the one that stays.
    llvm::Value* scalar = value.uniform()
                              ? value.value
                              : builder_.CreateExtractElement(ToVector(value), vector_->lanes - 1);
    builder_.CreateAlignedStore(
        scalar, builder_.CreateInBoundsGEP(elem_type, buffer.pointer, index.value), align);
    return absl::OkStatus();
  }
  if (index.uniform() && value.uniform()) {
    // Same element, same value in every active lane: one store iff some lane is active.
    builder_.CreateMaskedStore(builder_.CreateVectorSplat(1, value.value),
                               ElementAddress(elem_type, buffer.pointer, index.value, mask),
                               align, AnyLaneMask(mask));
    return absl::OkStatus();
  }
  llvm::Value* vector_value = ToVector(value);
  if (index.shape == EmitValue::Shape::kRamp && index.stride == 1) {
    llvm::Value* address = ElementAddress(elem_type, buffer.pointer, index.value, mask);
    if (mask == nullptr) {
      builder_.CreateAlignedStore(vector_value, address, align);
    } else {
      builder_.CreateMaskedStore(vector_value, address, align, mask);
    }
    return absl::OkStatus();
  }
  // Scatter; overlapping lanes are written in lane order, so the last lane wins.
  llvm::Value* addresses = ElementAddress(elem_type, buffer.pointer, ToVector(index), mask);
  if (mask == nullptr) {
    mask = llvm::Constant::getAllOnesValue(
        llvm::FixedVectorType::get(builder_.getInt1Ty(), vector_->lanes));
  }
  builder_.CreateMaskedScatter(vector_value, addresses, align, mask);
  return absl::OkStatus();
}

absl::Status FunctionEmitter::EmitIf(const ir::StmtNode& branch) {
  if (branch.operands.size() != 1 || branch.body.empty() || branch.body.size() > 2) {
    return absl::InvalidArgumentError("malformed if-then-else");
  }
  const ir::Stmt& then_case = branch.body[0];
  const ir::Stmt* else_case = branch.body.size() > 1 ? &branch.body[1] : nullptr;
  GTCO_ASSIGN_OR_RETURN(EmitValue cond, EmitExpr(branch.operands[0]));
  if (!cond.uniform()) {
    // A lane-dependent condition: both sides run under complementary lane masks.
    llvm::Value* outer_mask = vector_->mask;
    llvm::Value* lanes_true = ToVector(cond);
    auto combine = [&](llvm::Value* lanes) {
      return outer_mask == nullptr ? lanes : builder_.CreateAnd(outer_mask, lanes);
    };
    ++conditional_depth_;
    vector_->mask = combine(lanes_true);
    absl::Status status = EmitStmt(then_case);
    if (status.ok() && else_case != nullptr) {
      vector_->mask = combine(builder_.CreateNot(lanes_true));
      status = EmitStmt(*else_case);
    }
    vector_->mask = outer_mask;
    --conditional_depth_;
    return status;
  }
  if (auto* constant = llvm::dyn_cast<llvm::ConstantInt>(cond.value)) {
    if (!constant->isZero()) return EmitStmt(then_case);
    return else_case != nullptr ? EmitStmt(*else_case) : absl::OkStatus();
  }
  llvm::LLVMContext& context = *state_->context;
  llvm::BasicBlock* then_block = llvm::BasicBlock::Create(context, "then", function_);
  llvm::BasicBlock* merge_block = llvm::BasicBlock::Create(context, "endif", function_);
  llvm::BasicBlock* else_block =
      else_case != nullptr ? llvm::BasicBlock::Create(context, "else", function_) : merge_block;
  builder_.CreateCondBr(cond.value, then_block, else_block);
  ++conditional_depth_;
  builder_.SetInsertPoint(then_block);
  absl::Status status = EmitStmt(then_case);
  builder_.CreateBr(merge_block);
  if (status.ok() && else_case != nullptr) {
    builder_.SetInsertPoint(else_block);
    status = EmitStmt(*else_case);
    builder_.CreateBr(merge_block);
  }
  --conditional_depth_;
  builder_.SetInsertPoint(merge_block);
  return status;
}

absl::Status FunctionEmitter::EmitAllocate(const ir::StmtNode& allocate) {
  if (allocate.body.size() != 1) return absl::InvalidArgumentError("malformed allocate");
  if (vector_ != nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("allocation '", allocate.name,
                                                   "' inside the vectorized loop '", vector_->var,
                                                   "' is not supported"));
  }
  const int64_t elem_bytes = ir::ScalarTypeBytes(allocate.alloc_type);
  if (allocate.alloc_size <= 0 || allocate.alloc_size > kMaxStackAllocBytes / elem_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("allocation '", allocate.name, "' of ", allocate.alloc_size, " elements of ",
                     ir::ScalarTypeName(allocate.alloc_type), ": must be in [1, ",
                     kMaxStackAllocBytes / elem_bytes, "] (", kMaxStackAllocBytes, " bytes)"));
  }
  llvm::AllocaInst* array = alloca_builder_.CreateAlloca(
      llvm::ArrayType::get(ScalarLlvmType(*state_->context, allocate.alloc_type),
                           allocate.alloc_size),
      nullptr, allocate.name);
  array->setAlignment(llvm::Align(64));
  auto previous = buffers_.find(allocate.name);
  std::optional<BufferBinding> saved;
  if (previous != buffers_.end()) saved = previous->second;
  buffers_[allocate.name] = BufferBinding{array, allocate.alloc_size, false, allocate.alloc_type};
  absl::Status status = EmitStmt(allocate.body[0]);
  if (saved.has_value()) {
    buffers_[allocate.name] = *saved;
  } else {
    buffers_.erase(allocate.name);
  }
  return status;
}

absl::Status FunctionEmitter::EmitLet(const ir::StmtNode& let) {
  if (let.operands.size() != 1 || let.body.size() != 1) {
    return absl::InvalidArgumentError("malformed let");
  }
  GTCO_ASSIGN_OR_RETURN(EmitValue value, EmitExpr(let.operands[0]));
  return EmitScoped(let.name, value, let.body[0]);
}

}  // namespace gtco::codegen::internal
