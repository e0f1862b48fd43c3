// Expression emission: scalar code outside vectorized loops; inside them each value is kept
// uniform, as an affine i64 ramp, or as a vector, so loads and stores become contiguous
// vector accesses, splats or gathers according to the index's stride in the loop variable.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/codegen/llvm/function_emitter.h"
#include "common/util/status.h"
#include "llvm/IR/Constants.h"

namespace gtco::codegen::internal {
namespace {

using ir::ExprKind;
using ir::ScalarType;

/// The integer constant `v` holds (a scalar constant or a splat), or nullptr.
llvm::ConstantInt* AsConstantInt(llvm::Value* v) {
  if (auto* scalar = llvm::dyn_cast<llvm::ConstantInt>(v)) return scalar;
  if (auto* constant = llvm::dyn_cast<llvm::Constant>(v)) {
    if (v->getType()->isVectorTy()) {
      return llvm::dyn_cast_or_null<llvm::ConstantInt>(constant->getSplatValue());
    }
  }
  return nullptr;
}

/// log2 of `v` when it is a positive power-of-two constant, else -1.
int PowerOfTwoLog(llvm::Value* v) {
  llvm::ConstantInt* constant = AsConstantInt(v);
  if (constant == nullptr) return -1;
  const int64_t value = constant->getSExtValue();
  if (value <= 0 || (value & (value - 1)) != 0) return -1;
  int log = 0;
  while ((int64_t{1} << log) != value) ++log;
  return log;
}

bool IsSignedInteger(ScalarType type) {
  return type == ScalarType::kI64 || type == ScalarType::kI32 || type == ScalarType::kI8;
}

/// Typed call names handled by lowp_emitter.cc (everything else is an fp32 math call).
bool IsTypedCall(const std::string& name) {
  return name == "dot_u8s8x4" || name == "dot_u8s8x4_wide" || name == "dot_bf16x2" ||
         name == "pack_i8x4" ||
         name == "pack_bf16x2" || name == "bitxor";
}

}  // namespace

llvm::Type* ScalarLlvmType(llvm::LLVMContext& context, ScalarType type) {
  switch (type) {
    case ScalarType::kI64:
      return llvm::Type::getInt64Ty(context);
    case ScalarType::kF32:
      return llvm::Type::getFloatTy(context);
    case ScalarType::kBool:
      return llvm::Type::getInt1Ty(context);
    case ScalarType::kI32:
      return llvm::Type::getInt32Ty(context);
    case ScalarType::kI8:
    case ScalarType::kU8:
      return llvm::Type::getInt8Ty(context);
    case ScalarType::kBF16:
      return llvm::Type::getInt16Ty(context);
  }
  return llvm::Type::getFloatTy(context);
}

llvm::Type* FunctionEmitter::ValueType(ScalarType type, bool vector) {
  llvm::Type* scalar = ScalarLlvmType(*state_->context, type);
  return vector ? llvm::FixedVectorType::get(scalar, vector_->lanes) : scalar;
}

llvm::Value* FunctionEmitter::ToVector(const EmitValue& value) {
  GTCO_CHECK(vector_ != nullptr, "vector value requested outside a vectorized loop");
  const int lanes = vector_->lanes;
  switch (value.shape) {
    case EmitValue::Shape::kUniform:
      return builder_.CreateVectorSplat(lanes, value.value);
    case EmitValue::Shape::kRamp: {
      std::vector<llvm::Constant*> offsets;
      for (int lane = 0; lane < lanes; ++lane) offsets.push_back(I64(value.stride * lane));
      return builder_.CreateNSWAdd(builder_.CreateVectorSplat(lanes, value.value),
                                   llvm::ConstantVector::get(offsets));
    }
    case EmitValue::Shape::kVector:
      return value.value;
  }
  return nullptr;
}

absl::StatusOr<EmitValue> FunctionEmitter::EmitExpr(const ir::Expr& expr) {
  if (expr == nullptr) return absl::InvalidArgumentError("null expression");
  switch (expr->kind) {
    case ExprKind::kIntImm:
      if (expr->type == ScalarType::kBool) {
        return EmitValue::Uniform(builder_.getInt1(expr->int_value != 0));
      }
      if (expr->type != ScalarType::kI64) {
        return EmitValue::Uniform(llvm::ConstantInt::get(
            ScalarLlvmType(*state_->context, expr->type), expr->int_value, /*IsSigned=*/true));
      }
      return EmitValue::Uniform(I64(expr->int_value));
    case ExprKind::kFloatImm:
      return EmitValue::Uniform(F32(expr->float_value));
    case ExprKind::kVar: {
      auto it = vars_.find(expr->name);
      if (it == vars_.end()) {
        return absl::InvalidArgumentError(absl::StrCat("unbound variable '", expr->name, "'"));
      }
      return it->second;
    }
    case ExprKind::kSelect:
      return EmitSelect(*expr);
    case ExprKind::kLoad:
      return EmitLoad(*expr);
    case ExprKind::kCall:
      return EmitCall(*expr);
    case ExprKind::kCast:
      return EmitCast(*expr);
    default:
      return EmitBinary(*expr);
  }
}

absl::StatusOr<EmitValue> FunctionEmitter::EmitBinary(const ir::ExprNode& expr) {
  if (expr.operands.size() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("malformed binary expression kind ", static_cast<int>(expr.kind)));
  }
  GTCO_ASSIGN_OR_RETURN(EmitValue a, EmitExpr(expr.operands[0]));
  GTCO_ASSIGN_OR_RETURN(EmitValue b, EmitExpr(expr.operands[1]));
  const ScalarType operand_type = expr.operands[0]->type;
  if (a.uniform() && b.uniform()) {
    return EmitValue::Uniform(EmitArithmetic(expr.kind, operand_type, a.value, b.value));
  }
  // Affine i64 arithmetic keeps ramps symbolic: base at lane 0 plus a constant stride.
  const bool a_affine = a.shape != EmitValue::Shape::kVector;
  const bool b_affine = b.shape != EmitValue::Shape::kVector;
  if (operand_type == ScalarType::kI64 && a_affine && b_affine) {
    if (expr.kind == ExprKind::kAdd || expr.kind == ExprKind::kSub) {
      const bool add = expr.kind == ExprKind::kAdd;
      llvm::Value* base = EmitArithmetic(expr.kind, operand_type, a.value, b.value);
      const int64_t stride = add ? a.stride + b.stride : a.stride - b.stride;
      return stride == 0 ? EmitValue::Uniform(base) : EmitValue::Ramp(base, stride);
    }
    const bool compare = expr.kind == ExprKind::kLt || expr.kind == ExprKind::kLe;
    if (compare && a.uniform() != b.uniform()) {
      const bool inclusive = expr.kind == ExprKind::kLe;
      if (!a.uniform()) return EmitValue::Vector(EmitRampBelow(a, b.value, inclusive));
      // bound < ramp is -ramp < -bound.
      llvm::Value* zero = I64(0);
      return EmitValue::Vector(EmitRampBelow(
          EmitValue::Ramp(builder_.CreateNSWSub(zero, b.value), -b.stride),
          builder_.CreateNSWSub(zero, a.value), inclusive));
    }
    if (expr.kind == ExprKind::kMul) {
      const EmitValue& ramp = a.uniform() ? b : a;
      const EmitValue& scale = a.uniform() ? a : b;
      llvm::ConstantInt* factor = scale.uniform() ? AsConstantInt(scale.value) : nullptr;
      if (factor != nullptr) {
        llvm::Value* base = EmitArithmetic(expr.kind, operand_type, ramp.value, factor);
        const int64_t stride = ramp.stride * factor->getSExtValue();
        return stride == 0 ? EmitValue::Uniform(base) : EmitValue::Ramp(base, stride);
      }
    }
  }
  return EmitValue::Vector(EmitArithmetic(expr.kind, operand_type, ToVector(a), ToVector(b)));
}

llvm::Value* FunctionEmitter::EmitRampBelow(const EmitValue& ramp, llvm::Value* bound,
                                            bool inclusive) {
  // Lane i holds base + i * stride. With stride > 0 it is below `limit` (bound, plus one when
  // inclusive) exactly for i < ceil((limit - base) / stride); with stride < 0 exactly for
  // i > floor((base - limit) / -stride). That count, clamped to [0, lanes], is compared with the
  // lane indices as small integers.
  const int64_t lanes = vector_->lanes, stride = ramp.stride;
  llvm::Value* limit = inclusive ? builder_.CreateNSWAdd(bound, I64(1)) : bound;
  const int64_t step = stride > 0 ? stride : -stride;
  // Floor division by the positive constant `step` of a possibly negative numerator.
  auto floor_div = [&](llvm::Value* numerator) -> llvm::Value* {
    if (step == 1) return numerator;
    llvm::Value* negative = builder_.CreateICmpSLT(numerator, I64(0));
    llvm::Value* adjusted =
        builder_.CreateSelect(negative, builder_.CreateNSWSub(numerator, I64(step - 1)),
                              numerator);
    return builder_.CreateSDiv(adjusted, I64(step));
  };
  llvm::Value* first_true;  // stride > 0: lanes [0, count) hold; stride < 0: [count, lanes)
  if (stride > 0) {
    // ceil(x / step) = -floor(-x / step).
    llvm::Value* numerator = builder_.CreateNSWSub(ramp.value, limit);  // -(limit - base)
    first_true = builder_.CreateNSWSub(I64(0), floor_div(numerator));
  } else {
    first_true = builder_.CreateNSWAdd(floor_div(builder_.CreateNSWSub(ramp.value, limit)),
                                       I64(1));
  }
  llvm::Value* clamped = builder_.CreateSelect(builder_.CreateICmpSLT(first_true, I64(0)),
                                               I64(0), first_true);
  clamped = builder_.CreateSelect(builder_.CreateICmpSGT(clamped, I64(lanes)), I64(lanes),
                                  clamped);
  llvm::IntegerType* narrow = lanes <= 127 ? builder_.getInt8Ty() : builder_.getInt32Ty();
  std::vector<llvm::Constant*> indices;
  for (int64_t lane = 0; lane < lanes; ++lane) {
    indices.push_back(llvm::ConstantInt::get(narrow, lane));
  }
  llvm::Value* iota = llvm::ConstantVector::get(indices);
  llvm::Value* count =
      builder_.CreateVectorSplat(lanes, builder_.CreateTrunc(clamped, narrow));
  return stride > 0 ? builder_.CreateICmpSLT(iota, count) : builder_.CreateICmpSGE(iota, count);
}

llvm::Value* FunctionEmitter::EmitArithmetic(ExprKind kind, ScalarType type, llvm::Value* a,
                                             llvm::Value* b) {
  if (type == ScalarType::kF32) {
    switch (kind) {
      case ExprKind::kAdd:
        return builder_.CreateFAdd(a, b);
      case ExprKind::kSub:
        return builder_.CreateFSub(a, b);
      case ExprKind::kMul:
        return builder_.CreateFMul(a, b);
      case ExprKind::kDiv:
        return builder_.CreateFDiv(a, b);
      case ExprKind::kMod:
        return builder_.CreateFRem(a, b);
      case ExprKind::kMin:
        return builder_.CreateSelect(builder_.CreateFCmpOLT(b, a), b, a);
      case ExprKind::kMax:
        return builder_.CreateSelect(builder_.CreateFCmpOLT(a, b), b, a);
      case ExprKind::kLt:
        return builder_.CreateFCmpOLT(a, b);
      case ExprKind::kLe:
        return builder_.CreateFCmpOLE(a, b);
      case ExprKind::kEq:
        return builder_.CreateFCmpOEQ(a, b);
      default:
        break;
    }
  } else if (type == ScalarType::kI64) {
    switch (kind) {
      case ExprKind::kAdd:
        return builder_.CreateNSWAdd(a, b);
      case ExprKind::kSub:
        return builder_.CreateNSWSub(a, b);
      case ExprKind::kMul:
        return builder_.CreateNSWMul(a, b);
      case ExprKind::kDiv: {
        // Floor division: exact with a shift for powers of two, sdiv for the non-negative
        // operands schedules produce otherwise.
        const int log = PowerOfTwoLog(b);
        if (log >= 0) return builder_.CreateAShr(a, llvm::ConstantInt::get(a->getType(), log));
        return builder_.CreateSDiv(a, b);
      }
      case ExprKind::kMod: {
        const int log = PowerOfTwoLog(b);
        if (log >= 0) {
          return builder_.CreateAnd(a,
                                    llvm::ConstantInt::get(a->getType(), (int64_t{1} << log) - 1));
        }
        return builder_.CreateSRem(a, b);
      }
      case ExprKind::kMin:
        return builder_.CreateSelect(builder_.CreateICmpSLT(a, b), a, b);
      case ExprKind::kMax:
        return builder_.CreateSelect(builder_.CreateICmpSLT(a, b), b, a);
      case ExprKind::kLt:
        return builder_.CreateICmpSLT(a, b);
      case ExprKind::kLe:
        return builder_.CreateICmpSLE(a, b);
      case ExprKind::kEq:
        return builder_.CreateICmpEQ(a, b);
      default:
        break;
    }
  } else if (type == ScalarType::kI32) {
    // Two's complement with wrap-around; Div/Mod truncate.
    switch (kind) {
      case ExprKind::kAdd:
        return builder_.CreateAdd(a, b);
      case ExprKind::kSub:
        return builder_.CreateSub(a, b);
      case ExprKind::kMul:
        return builder_.CreateMul(a, b);
      case ExprKind::kDiv:
        return builder_.CreateSDiv(a, b);
      case ExprKind::kMod:
        return builder_.CreateSRem(a, b);
      case ExprKind::kMin:
        return builder_.CreateSelect(builder_.CreateICmpSLT(a, b), a, b);
      case ExprKind::kMax:
        return builder_.CreateSelect(builder_.CreateICmpSLT(a, b), b, a);
      case ExprKind::kLt:
        return builder_.CreateICmpSLT(a, b);
      case ExprKind::kLe:
        return builder_.CreateICmpSLE(a, b);
      case ExprKind::kEq:
        return builder_.CreateICmpEQ(a, b);
      default:
        break;
    }
  } else if (kind == ExprKind::kAnd) {
    return builder_.CreateAnd(a, b);
  }
  GTCO_CHECK(false, "binary expression kind ", static_cast<int>(kind), " on type ",
             static_cast<int>(type), " passed MakeBinary's checks");
  return nullptr;
}

absl::StatusOr<EmitValue> FunctionEmitter::EmitSelect(const ir::ExprNode& expr) {
  if (expr.operands.size() != 3) return absl::InvalidArgumentError("malformed select");
  GTCO_ASSIGN_OR_RETURN(EmitValue cond, EmitExpr(expr.operands[0]));
  GTCO_ASSIGN_OR_RETURN(EmitValue when_true, EmitExpr(expr.operands[1]));
  GTCO_ASSIGN_OR_RETURN(EmitValue when_false, EmitExpr(expr.operands[2]));
  if (cond.uniform() && when_true.uniform() && when_false.uniform()) {
    return EmitValue::Uniform(builder_.CreateSelect(cond.value, when_true.value, when_false.value));
  }
  llvm::Value* selector = cond.uniform() ? cond.value : ToVector(cond);
  return EmitValue::Vector(
      builder_.CreateSelect(selector, ToVector(when_true), ToVector(when_false)));
}

absl::StatusOr<EmitValue> FunctionEmitter::EmitCast(const ir::ExprNode& expr) {
  if (expr.operands.size() != 1) return absl::InvalidArgumentError("malformed cast");
  GTCO_ASSIGN_OR_RETURN(EmitValue operand, EmitExpr(expr.operands[0]));
  const ScalarType from = expr.operands[0]->type;
  const ScalarType to = expr.type;
  if (from == to) return operand;
  const bool uniform = operand.uniform();
  llvm::Value* value = uniform ? operand.value : ToVector(operand);
  llvm::Value* result = ConvertScalar(value, from, to);
  return uniform ? EmitValue::Uniform(result) : EmitValue::Vector(result);
}

llvm::Value* FunctionEmitter::ConvertScalar(llvm::Value* value, ScalarType from, ScalarType to) {
  if (from == to) return value;
  const bool vector = value->getType()->isVectorTy();
  llvm::Type* target = ValueType(to, vector);
  if (from == ScalarType::kBF16) {  // exact: the bits are the top half of an f32
    llvm::Value* wide =
        builder_.CreateShl(builder_.CreateZExt(value, ValueType(ScalarType::kI32, vector)), 16);
    llvm::Value* as_float = builder_.CreateBitCast(wide, ValueType(ScalarType::kF32, vector));
    return ConvertScalar(as_float, ScalarType::kF32, to);
  }
  if (to == ScalarType::kBF16) {
    return EmitBF16Bits(ConvertScalar(value, from, ScalarType::kF32));
  }
  if (to == ScalarType::kBool) {
    llvm::Value* zero = llvm::Constant::getNullValue(value->getType());
    return from == ScalarType::kF32 ? builder_.CreateFCmpUNE(value, zero)
                                    : builder_.CreateICmpNE(value, zero);
  }
  if (from == ScalarType::kBool) {
    return to == ScalarType::kF32 ? builder_.CreateUIToFP(value, target)
                                  : builder_.CreateZExt(value, target);
  }
  if (from == ScalarType::kF32) {
    // Truncation toward zero; narrow targets go through i32 (then wrap).
    if (to == ScalarType::kI64 || to == ScalarType::kI32)
      return builder_.CreateFPToSI(value, target);
    return builder_.CreateTrunc(builder_.CreateFPToSI(value, ValueType(ScalarType::kI32, vector)),
                                target);
  }
  if (to == ScalarType::kF32) {
    return IsSignedInteger(from) ? builder_.CreateSIToFP(value, target)
                                 : builder_.CreateUIToFP(value, target);
  }
  // Integer to integer: extend by the source's signedness, or truncate (wrap).
  return IsSignedInteger(from) ? builder_.CreateSExtOrTrunc(value, target)
                               : builder_.CreateZExtOrTrunc(value, target);
}

llvm::Value* FunctionEmitter::AnyLaneMask(llvm::Value* mask) {
  return builder_.CreateVectorSplat(1, builder_.CreateOrReduce(mask));
}

llvm::Value* FunctionEmitter::ElementAddress(llvm::Type* elem_type, llvm::Value* pointer,
                                             llvm::Value* index, llvm::Value* mask) {
  return mask == nullptr ? builder_.CreateInBoundsGEP(elem_type, pointer, index)
                         : builder_.CreateGEP(elem_type, pointer, index);
}

absl::StatusOr<BufferBinding> FunctionEmitter::LookupBuffer(const std::string& name) {
  auto it = buffers_.find(name);
  if (it == buffers_.end()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown buffer '", name,
        "' (neither a parameter nor an enclosing allocation; parallel loop bodies cannot use "
        "allocations made outside the loop)"));
  }
  return it->second;
}

absl::Status FunctionEmitter::CheckConstantIndex(const std::string& buffer,
                                                 const BufferBinding& binding,
                                                 const EmitValue& index,
                                                 int64_t elements_per_access) {
  if (binding.num_elements <= 0 || index.shape == EmitValue::Shape::kVector ||
      conditional_depth_ > 0) {
    return absl::OkStatus();
  }
  llvm::ConstantInt* base = AsConstantInt(index.value);
  if (base == nullptr) return absl::OkStatus();
  const int64_t first = base->getSExtValue();
  const int64_t last = (index.uniform() ? first : first + index.stride * (vector_->lanes - 1)) +
                       elements_per_access - 1;
  for (int64_t element : {first, last}) {
    if (element < 0 || element >= binding.num_elements) {
      return absl::InvalidArgumentError(absl::StrCat("index ", element,
                                                     " out of bounds of buffer '", buffer,
                                                     "' with ", binding.num_elements, " elements"));
    }
  }
  return absl::OkStatus();
}

/// The largest ramp stride loaded as one contiguous span and a shuffle (beyond it a gather
/// reads fewer bytes than the span holds).
constexpr int64_t kMaxSpanStride = 4;

/// The largest local buffer read element by element for a strided vector load: register tiles
/// (at most 32 vectors of 16 floats).
constexpr int64_t kMaxRegisterBufferElements = 512;

absl::StatusOr<EmitValue> FunctionEmitter::EmitLoad(const ir::ExprNode& expr) {
  if (expr.operands.size() != 1) return absl::InvalidArgumentError("malformed load");
  GTCO_ASSIGN_OR_RETURN(BufferBinding buffer, LookupBuffer(expr.name));
  // A load reads its buffer's element type, or an i32 word made of 1- or 2-byte elements.
  const int elem_bytes = ir::ScalarTypeBytes(buffer.elem_type);
  const bool wide = expr.type != buffer.elem_type;
  if (wide && !(expr.type == ScalarType::kI32 && elem_bytes < 4)) {
    return absl::InvalidArgumentError(
        absl::StrCat("load of ", ir::ScalarTypeName(expr.type), " from buffer '", expr.name,
                     "' of ", ir::ScalarTypeName(buffer.elem_type), " elements"));
  }
  const int64_t per_access = wide ? 4 / elem_bytes : 1;
  GTCO_ASSIGN_OR_RETURN(EmitValue index, EmitExpr(expr.operands[0]));
  GTCO_RETURN_IF_ERROR(CheckConstantIndex(expr.name, buffer, index, per_access));
  llvm::Type* elem_type = ScalarLlvmType(*state_->context, buffer.elem_type);
  llvm::Type* scalar_type = ScalarLlvmType(*state_->context, expr.type);
  const llvm::Align align(elem_bytes);
  llvm::Value* mask = vector_ != nullptr ? vector_->mask : nullptr;
  if (index.uniform()) {
    llvm::Value* address = ElementAddress(elem_type, buffer.pointer, index.value, mask);
    if (mask == nullptr) {
      return EmitValue::Uniform(builder_.CreateAlignedLoad(scalar_type, address, align));
    }
    // Under a lane mask the element is read iff some lane is active; the value stays uniform.
    auto* single = llvm::FixedVectorType::get(scalar_type, 1);
    llvm::Value* loaded = builder_.CreateMaskedLoad(single, address, align, AnyLaneMask(mask),
                                                    llvm::Constant::getNullValue(single));
    return EmitValue::Uniform(builder_.CreateExtractElement(loaded, uint64_t{0}));
  }
  auto* vector_type = llvm::FixedVectorType::get(scalar_type, vector_->lanes);
  if (index.shape == EmitValue::Shape::kRamp && index.stride == per_access) {
    llvm::Value* address = ElementAddress(elem_type, buffer.pointer, index.value, mask);
    if (mask == nullptr) {
      return EmitValue::Vector(builder_.CreateAlignedLoad(vector_type, address, align));
    }
    return EmitValue::Vector(builder_.CreateMaskedLoad(vector_type, address, align, mask,
                                                       llvm::Constant::getNullValue(vector_type)));
  }
  if (index.shape == EmitValue::Shape::kRamp && !wide && index.stride >= 2 &&
      index.stride <= kMaxSpanStride) {
    // A short constant stride (pooling and strided windows read every 2nd to 4th element): one
    // contiguous load of the span from the first lane's element to the last one's, then a
    // shuffle picking every stride-th element. A gather costs a load per lane (on AMD Zen 4 a
    // 16-lane gather takes ~5x the time of the two loads and the permute). The load is masked
    // to the span (it is stride * lanes wide, rounded to whole registers) so nothing past the
    // last lane's element is read; under a lane mask, to the active lanes' elements only.
    const int64_t lanes = vector_->lanes, stride = index.stride;
    const int64_t span = stride * (lanes - 1) + 1;
    auto* wide_type = llvm::FixedVectorType::get(scalar_type, stride * lanes);
    std::vector<llvm::Constant*> in_span;
    std::vector<int> spread;
    for (int64_t element = 0; element < stride * lanes; ++element) {
      in_span.push_back(
          builder_.getInt1(element < span && (mask == nullptr || element % stride == 0)));
      spread.push_back(static_cast<int>(element / stride));
    }
    llvm::Value* wide_mask = llvm::ConstantVector::get(in_span);
    if (mask != nullptr) {
      wide_mask = builder_.CreateAnd(builder_.CreateShuffleVector(mask, spread), wide_mask);
    }
    // Always masked: the first lane's element may lie outside the buffer when masked off.
    llvm::Value* address = builder_.CreateGEP(elem_type, buffer.pointer, index.value);
    llvm::Value* loaded = builder_.CreateMaskedLoad(
        wide_type, address, align, wide_mask,
        mask == nullptr ? llvm::PoisonValue::get(wide_type)
                        : llvm::Constant::getNullValue(wide_type));
    std::vector<int> picks;
    for (int64_t lane = 0; lane < lanes; ++lane) picks.push_back(static_cast<int>(lane * stride));
    return EmitValue::Vector(builder_.CreateShuffleVector(loaded, picks));
  }
  if (!buffer.is_param && buffer.num_elements > 0 &&
      buffer.num_elements <= kMaxRegisterBufferElements && mask == nullptr && !wide &&
      index.shape == EmitValue::Shape::kRamp && vector_->lanes <= 16) {
    // A strided read of a small local buffer (a micro-kernel's accumulators, which LLVM keeps
    // in registers): element by element, which become register moves. A gather would put the
    // buffer in memory (the channel conv's write-back, pixels in the lanes: 4x4 stem tiles
    // 617 µs instead of 1023 with the tile's column vectors scattered).
    llvm::Value* result = llvm::PoisonValue::get(vector_type);
    for (int64_t lane = 0; lane < vector_->lanes; ++lane) {
      llvm::Value* at = builder_.CreateAdd(index.value, builder_.getInt64(lane * index.stride));
      llvm::Value* element = builder_.CreateAlignedLoad(
          scalar_type, builder_.CreateGEP(elem_type, buffer.pointer, at), align);
      result = builder_.CreateInsertElement(result, element, uint64_t(lane));
    }
    return EmitValue::Vector(result);
  }
  llvm::Value* addresses = ElementAddress(elem_type, buffer.pointer, ToVector(index), mask);
  if (mask == nullptr)
    mask = llvm::Constant::getAllOnesValue(
        llvm::FixedVectorType::get(builder_.getInt1Ty(), vector_->lanes));
  return EmitValue::Vector(builder_.CreateMaskedGather(vector_type, addresses, align, mask,
                                                       llvm::Constant::getNullValue(vector_type)));
}

absl::StatusOr<EmitValue> FunctionEmitter::EmitCall(const ir::ExprNode& expr) {
  if (IsTypedCall(expr.name)) return EmitTypedCall(expr);
  for (const ir::Expr& operand : expr.operands) {
    if (operand->type != ScalarType::kF32) {
      return absl::InvalidArgumentError(
          absl::StrCat("math call '", expr.name, "' needs f32 arguments"));
    }
  }
  std::vector<EmitValue> args;
  bool all_uniform = true;
  for (const ir::Expr& operand : expr.operands) {
    GTCO_ASSIGN_OR_RETURN(EmitValue arg, EmitExpr(operand));
    all_uniform = all_uniform && arg.uniform();
    args.push_back(arg);
  }
  std::vector<llvm::Value*> values;
  for (const EmitValue& arg : args) values.push_back(all_uniform ? arg.value : ToVector(arg));
  GTCO_ASSIGN_OR_RETURN(llvm::Value * result, EmitMathCall(expr.name, values));
  return all_uniform ? EmitValue::Uniform(result) : EmitValue::Vector(result);
}

}  // namespace gtco::codegen::internal
