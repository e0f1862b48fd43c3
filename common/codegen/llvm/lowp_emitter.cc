// Typed calls of the loop IR: the low-precision dot products (AVX512-VNNI vpdpbusd and
// AVX512-BF16 vdpbf16ps for 4, 8 or 16 lanes; portable code elsewhere), operand packing and
// bit operations.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/codegen/llvm/function_emitter.h"
#include "common/util/status.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/IntrinsicsX86.h"

namespace gtco::codegen::internal {
namespace {

using ir::ScalarType;

/// The x86 intrinsic of a dot product over `lanes` 32-bit lanes; not_intrinsic for other widths.
llvm::Intrinsic::ID DotIntrinsic(bool bf16, int lanes) {
  switch (lanes) {
    case 4:
      return bf16 ? llvm::Intrinsic::x86_avx512bf16_dpbf16ps_128
                  : llvm::Intrinsic::x86_avx512_vpdpbusd_128;
    case 8:
      return bf16 ? llvm::Intrinsic::x86_avx512bf16_dpbf16ps_256
                  : llvm::Intrinsic::x86_avx512_vpdpbusd_256;
    case 16:
      return bf16 ? llvm::Intrinsic::x86_avx512bf16_dpbf16ps_512
                  : llvm::Intrinsic::x86_avx512_vpdpbusd_512;
    default:
      return llvm::Intrinsic::not_intrinsic;
  }
}

/// Lanes of `value`: its vector width, or 1 for a scalar.
int LanesOf(llvm::Value* value) {
  if (auto* vector = llvm::dyn_cast<llvm::FixedVectorType>(value->getType())) {
    return static_cast<int>(vector->getNumElements());
  }
  return 1;
}

/// Expected argument types of each typed call.
std::vector<ScalarType> TypedCallSignature(const std::string& name) {
  if (name == "dot_u8s8x4" || name == "dot_u8s8x4_wide") {
    return {ScalarType::kI32, ScalarType::kI32, ScalarType::kI32};
  }
  if (name == "dot_bf16x2") return {ScalarType::kF32, ScalarType::kI32, ScalarType::kI32};
  if (name == "pack_i8x4") {
    return {ScalarType::kI32, ScalarType::kI32, ScalarType::kI32, ScalarType::kI32};
  }
  if (name == "pack_bf16x2") return {ScalarType::kF32, ScalarType::kF32};
  return {ScalarType::kI32, ScalarType::kI32};  // bitxor
}

ScalarType TypedCallResult(const std::string& name) {
  return name == "dot_bf16x2" ? ScalarType::kF32 : ScalarType::kI32;
}

/// True when `expr` is Cast(f32, <bf16 value>): its bf16 bits can be used without rounding.
bool IsBF16Widening(const ir::Expr& expr) {
  return expr->kind == ir::ExprKind::kCast && expr->type == ScalarType::kF32 &&
         expr->operands[0]->type == ScalarType::kBF16;
}

}  // namespace

absl::StatusOr<EmitValue> FunctionEmitter::EmitTypedCall(const ir::ExprNode& expr) {
  const std::vector<ScalarType> signature = TypedCallSignature(expr.name);
  if (expr.operands.size() != signature.size() || expr.type != TypedCallResult(expr.name)) {
    return absl::InvalidArgumentError(absl::StrCat("malformed typed call '", expr.name, "'"));
  }
  for (size_t arg_idx = 0; arg_idx < signature.size(); ++arg_idx) {
    if (expr.operands[arg_idx]->type != signature[arg_idx]) {
      return absl::InvalidArgumentError(
          absl::StrCat("argument ", arg_idx, " of '", expr.name, "' is ",
                       ir::ScalarTypeName(expr.operands[arg_idx]->type), ", expected ",
                       ir::ScalarTypeName(signature[arg_idx])));
    }
  }
  // pack_bf16x2 of widened bf16 values takes their bits as they are (no rounding needed).
  const bool raw_bf16 = expr.name == "pack_bf16x2";
  std::vector<EmitValue> args;
  std::vector<bool> is_bits;
  bool all_uniform = true;
  for (const ir::Expr& operand : expr.operands) {
    const bool bits = raw_bf16 && IsBF16Widening(operand);
    GTCO_ASSIGN_OR_RETURN(EmitValue arg, EmitExpr(bits ? operand->operands[0] : operand));
    all_uniform = all_uniform && arg.uniform();
    args.push_back(arg);
    is_bits.push_back(bits);
  }
  std::vector<llvm::Value*> values;
  for (const EmitValue& arg : args) values.push_back(all_uniform ? arg.value : ToVector(arg));
  const int lanes = all_uniform ? 1 : vector_->lanes;
  llvm::Type* i32 = ValueType(ScalarType::kI32, !all_uniform);
  llvm::Value* result = nullptr;
  if (expr.name == "dot_u8s8x4") {
    result = EmitDotU8S8(values[0], values[1], values[2], lanes);
  } else if (expr.name == "dot_u8s8x4_wide") {  // never the VNNI instruction: AVX2 hosts
    result = EmitDotU8S8(values[0], values[1], values[2], lanes, /*portable=*/true);
  } else if (expr.name == "dot_bf16x2") {
    result = EmitDotBF16(values[0], values[1], values[2], lanes);
  } else if (expr.name == "bitxor") {
    result = builder_.CreateXor(values[0], values[1]);
  } else if (expr.name == "pack_i8x4") {
    result = llvm::ConstantInt::get(i32, 0);
    for (int byte = 0; byte < 4; ++byte) {
      llvm::Value* low = builder_.CreateAnd(values[byte], llvm::ConstantInt::get(i32, 0xFF));
      result = builder_.CreateOr(result, builder_.CreateShl(low, 8 * byte));
    }
  } else {  // pack_bf16x2
    llvm::Value* halves[2];
    for (int half = 0; half < 2; ++half) {
      llvm::Value* bits = is_bits[half] ? values[half] : EmitBF16Bits(values[half]);
      halves[half] = builder_.CreateZExt(bits, i32);
    }
    result = builder_.CreateOr(halves[0], builder_.CreateShl(halves[1], 16));
  }
  return all_uniform ? EmitValue::Uniform(result) : EmitValue::Vector(result);
}

llvm::Value* FunctionEmitter::EmitDotU8S8(llvm::Value* acc, llvm::Value* a, llvm::Value* b,
                                          int lanes, bool portable) {
  if (!portable && LanesOf(acc) == lanes && lanes > 1) {
    const llvm::Intrinsic::ID id = DotIntrinsic(/*bf16=*/false, lanes);
    if (id != llvm::Intrinsic::not_intrinsic) {
      return builder_.CreateIntrinsic(id, {}, {acc, a, b});
    }
  }
  // Portable: widen the bytes (a unsigned, b signed), multiply, add each lane's four products.
  auto* bytes_type = llvm::FixedVectorType::get(builder_.getInt8Ty(), 4 * lanes);
  auto* wide_type = llvm::FixedVectorType::get(builder_.getInt32Ty(), 4 * lanes);
  llvm::Value* products =
      builder_.CreateMul(builder_.CreateZExt(builder_.CreateBitCast(a, bytes_type), wide_type),
                         builder_.CreateSExt(builder_.CreateBitCast(b, bytes_type), wide_type));
  llvm::Value* sum = acc;
  for (int byte = 0; byte < 4; ++byte) {
    std::vector<int> picks;
    for (int lane = 0; lane < lanes; ++lane) picks.push_back(4 * lane + byte);
    llvm::Value* part = builder_.CreateShuffleVector(products, picks);
    if (lanes == 1) part = builder_.CreateExtractElement(part, uint64_t{0});
    sum = builder_.CreateAdd(sum, part);
  }
  return sum;
}

llvm::Value* FunctionEmitter::EmitDotBF16(llvm::Value* acc, llvm::Value* a, llvm::Value* b,
                                          int lanes) {
  if (LanesOf(acc) == lanes && lanes > 1) {
    const llvm::Intrinsic::ID id = DotIntrinsic(/*bf16=*/true, lanes);
    if (id != llvm::Intrinsic::not_intrinsic) {
      return builder_.CreateIntrinsic(id, {}, {acc, a, b});
    }
  }
  // Portable: bf16 halves to f32 (exact), products exact in f32, high pair first.
  auto* halves_type = llvm::FixedVectorType::get(builder_.getInt16Ty(), 2 * lanes);
  auto* wide_type = llvm::FixedVectorType::get(builder_.getInt32Ty(), 2 * lanes);
  auto* float_type = llvm::FixedVectorType::get(FloatTy(), 2 * lanes);
  auto widen = [&](llvm::Value* pairs) {
    llvm::Value* bits = builder_.CreateZExt(builder_.CreateBitCast(pairs, halves_type), wide_type);
    return builder_.CreateBitCast(builder_.CreateShl(bits, 16), float_type);
  };
  llvm::Value* products = builder_.CreateFMul(widen(a), widen(b));
  llvm::Value* sum = acc;
  for (int half : {1, 0}) {
    std::vector<int> picks;
    for (int lane = 0; lane < lanes; ++lane) picks.push_back(2 * lane + half);
    llvm::Value* part = builder_.CreateShuffleVector(products, picks);
    if (lanes == 1) part = builder_.CreateExtractElement(part, uint64_t{0});
    sum = builder_.CreateFAdd(sum, part);
  }
  return sum;
}

llvm::Value* FunctionEmitter::EmitBF16Bits(llvm::Value* f32_value) {
  // Round to nearest even on the bit pattern; NaNs become quiet NaNs with their sign.
  const bool vector = f32_value->getType()->isVectorTy();
  llvm::Type* i32 = ValueType(ScalarType::kI32, vector);
  llvm::Value* bits = builder_.CreateBitCast(f32_value, i32);
  llvm::Value* upper = builder_.CreateLShr(bits, 16);
  llvm::Value* rounding =
      builder_.CreateAdd(builder_.CreateAnd(upper, llvm::ConstantInt::get(i32, 1)),
                         llvm::ConstantInt::get(i32, 0x7FFF));
  llvm::Value* rounded = builder_.CreateLShr(builder_.CreateAdd(bits, rounding), 16);
  llvm::Value* quiet_nan = builder_.CreateOr(upper, llvm::ConstantInt::get(i32, 0x40));
  llvm::Value* is_nan = builder_.CreateFCmpUNO(f32_value, f32_value);
  return builder_.CreateTrunc(builder_.CreateSelect(is_nan, quiet_nan, rounded),
                              ValueType(ScalarType::kBF16, vector));
}

}  // namespace gtco::codegen::internal
