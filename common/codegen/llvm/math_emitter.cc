// Math calls of the loop IR (exp, erf, tanh, sqrt, pow, sigmoid, fabs) on scalars and vectors.
// exp is an inline Cephes-style polynomial (about 1 ulp, vectorizes, no libm call); sqrt, fabs
// and pow use LLVM intrinsics; exp, erf and tanh are inline polynomials, so they vectorize. None
// of them produces a subnormal intermediate (exp flushes results below e^-87 to 0; erf, tanh and
// sigmoid clamp their arguments where the f32 result is already exact): on Intel cores each
// instruction on a subnormal is a microcode assist of ~100+ cycles.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/codegen/llvm/function_emitter.h"
#include "llvm/IR/Intrinsics.h"

namespace gtco::codegen::internal {
namespace {

/// min(x, cap) and max(x, floor) that pass NaN through (llvm.minnum / maxnum would not).
llvm::Value* AtMost(llvm::IRBuilder<>& builder, llvm::Value* x, llvm::Value* cap) {
  return builder.CreateSelect(builder.CreateFCmpOLT(cap, x), cap, x);
}
llvm::Value* AtLeast(llvm::IRBuilder<>& builder, llvm::Value* x, llvm::Value* floor) {
  return builder.CreateSelect(builder.CreateFCmpOLT(x, floor), floor, x);
}

int MathArity(const std::string& name) {
  if (name == "exp" || name == "erf" || name == "tanh" || name == "sqrt" || name == "sigmoid" ||
      name == "fabs") {
    return 1;
  }
  if (name == "pow") return 2;
  return -1;
}

}  // namespace

absl::StatusOr<llvm::Value*> FunctionEmitter::EmitMathCall(const std::string& name,
                                                           const std::vector<llvm::Value*>& args) {
  const int arity = MathArity(name);
  if (arity < 0) {
    return absl::InvalidArgumentError(absl::StrCat("unsupported call '", name, "'"));
  }
  if (static_cast<int>(args.size()) != arity) {
    return absl::InvalidArgumentError(
        absl::StrCat("call '", name, "' takes ", arity, " arguments, got ", args.size()));
  }
  llvm::Value* x = args[0];
  if (name == "exp") return EmitExp(x);
  if (name == "sqrt") return builder_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
  if (name == "fabs") return builder_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  if (name == "pow") return builder_.CreateBinaryIntrinsic(llvm::Intrinsic::pow, x, args[1]);
  if (name == "sigmoid") {
    // exp(-x) capped at e^80: for x below -80 the quotient would be subnormal (a microcode
    // assist per instruction on Intel cores); 1 / (1 + e^80) = 1.8e-35 is within that of the
    // true value.
    llvm::Value* one = llvm::ConstantFP::get(x->getType(), 1.0);
    llvm::Value* capped =
        AtMost(builder_, builder_.CreateFNeg(x), llvm::ConstantFP::get(x->getType(), 80.0));
    return builder_.CreateFDiv(one, builder_.CreateFAdd(one, EmitExp(capped)));
  }
  if (name == "erf") return EmitErf(x);
  return EmitTanh(x);
}

llvm::Value* FunctionEmitter::EmitPolynomial(llvm::Value* x,
                                             std::initializer_list<double> coefficients) {
  llvm::Value* result = nullptr;
  for (double coefficient : coefficients) {
    llvm::Value* term = llvm::ConstantFP::get(x->getType(), coefficient);
    result = result == nullptr ? term : builder_.CreateFAdd(builder_.CreateFMul(result, x), term);
  }
  return result;
}

llvm::Value* FunctionEmitter::EmitErf(llvm::Value* x) {
  auto constant = [&](double value) { return llvm::ConstantFP::get(x->getType(), value); };
  llvm::Value* magnitude = builder_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  // |x| < 1: x * P(x^2) (Cephes erff).
  llvm::Value* squared = builder_.CreateFMul(x, x);
  llvm::Value* small = builder_.CreateFMul(
      x, EmitPolynomial(squared, {7.853861353153693E-5, -8.010193625184903E-4,
                                  5.188327685732524E-3, -2.685381193529856E-2,
                                  1.128358514861418E-1, -3.761262582423300E-1,
                                  1.128379165726710E+0}));
  // |x| >= 1: 1 - t P(t) exp(-x^2), t = 1 / (1 + p|x|) (Abramowitz & Stegun 7.1.26), signed,
  // on |x| capped at 4: erf(4) rounds to 1 in f32 already, and past |x| = 9.3 exp(-x^2) would be
  // subnormal, each instruction touching it a microcode assist on Intel cores (a GEMM's GELU
  // epilogue on large values ran 5x slower).
  llvm::Value* capped = AtMost(builder_, magnitude, constant(4.0));
  llvm::Value* t = builder_.CreateFDiv(
      constant(1.0), builder_.CreateFAdd(constant(1.0),
                                         builder_.CreateFMul(constant(0.3275911), capped)));
  llvm::Value* tail = builder_.CreateFMul(
      builder_.CreateFMul(EmitPolynomial(t, {1.061405429, -1.453152027, 1.421413741, -0.284496736,
                                             0.254829592}),
                          t),
      EmitVectorExp(builder_.CreateFNeg(builder_.CreateFMul(capped, capped))));
  llvm::Value* large = builder_.CreateBinaryIntrinsic(
      llvm::Intrinsic::copysign, builder_.CreateFSub(constant(1.0), tail), x);
  llvm::Value* result =
      builder_.CreateSelect(builder_.CreateFCmpOLT(magnitude, constant(1.0)), small, large);
  return builder_.CreateSelect(builder_.CreateFCmpUNO(x, x), x, result);
}

llvm::Value* FunctionEmitter::EmitTanh(llvm::Value* x) {
  auto constant = [&](double value) { return llvm::ConstantFP::get(x->getType(), value); };
  llvm::Value* magnitude = builder_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  // |x| < 0.625: x + x^3 P(x^2) (Cephes tanhf); else 1 - 2 / (exp(2x) + 1).
  llvm::Value* squared = builder_.CreateFMul(x, x);
  llvm::Value* small = builder_.CreateFAdd(
      builder_.CreateFMul(
          builder_.CreateFMul(EmitPolynomial(squared, {-5.70498872745E-3, 2.06390887954E-2,
                                                       -5.37397155531E-2, 1.33314422036E-1,
                                                       -3.33332819422E-1}),
                              squared),
          x),
      x);
  // The large branch on x clamped to [-9, 9]: tanh(9) rounds to 1 in f32, and past it the
  // quotient 2 / (e^2x + 1) would be subnormal (a microcode assist on Intel cores).
  llvm::Value* clamped = AtLeast(builder_, AtMost(builder_, x, constant(9.0)), constant(-9.0));
  llvm::Value* large = builder_.CreateFSub(
      constant(1.0),
      builder_.CreateFDiv(
          constant(2.0),
          builder_.CreateFAdd(EmitVectorExp(builder_.CreateFMul(constant(2.0), clamped)),
                              constant(1.0))));
  llvm::Value* result =
      builder_.CreateSelect(builder_.CreateFCmpOLT(magnitude, constant(0.625)), small, large);
  return builder_.CreateSelect(builder_.CreateFCmpUNO(x, x), x, result);
}

llvm::Value* FunctionEmitter::EmitExp(llvm::Value* x) {
  // The same polynomial for scalars and vectors, so a vectorized body and its scalar tail
  // agree bit for bit.
  return EmitVectorExp(x);
}

llvm::Value* FunctionEmitter::EmitVectorExp(llvm::Value* x) {
  llvm::Type* float_type = x->getType();
  llvm::Type* int_type =
      float_type->isVectorTy()
          ? static_cast<llvm::Type*>(llvm::VectorType::get(
                builder_.getInt32Ty(), llvm::cast<llvm::VectorType>(float_type)->getElementCount()))
          : builder_.getInt32Ty();
  auto constant = [&](double value) { return llvm::ConstantFP::get(float_type, value); };
  auto int_constant = [&](int value) { return llvm::ConstantInt::get(int_type, value); };
  // Clamp to [-87, 89]: above, the result overflows to +inf; below -87 it is 0 (selected at the
  // end), not the subnormal e^x down to -103.9: every instruction producing or reading a
  // subnormal is a microcode assist on Intel cores (softmax over masked scores, GELU's
  // exp(-x^2)). The two half-exponent factors below keep 2^n representable over the range.
  llvm::Value* low = constant(-87.0);
  llvm::Value* high = constant(89.0);
  llvm::Value* clamped = AtMost(builder_, AtLeast(builder_, x, low), high);
  // n = round(x / ln2); r = x - n * ln2 in two steps (Cody-Waite).
  llvm::Value* n_float = builder_.CreateUnaryIntrinsic(
      llvm::Intrinsic::floor,
      builder_.CreateFAdd(builder_.CreateFMul(clamped, constant(1.44269504088896341)),
                          constant(0.5)));
  llvm::Value* r =
      builder_.CreateFSub(clamped, builder_.CreateFMul(n_float, constant(0.693359375)));
  r = builder_.CreateFSub(r, builder_.CreateFMul(n_float, constant(-2.12194440e-4)));
  // exp(r) on [-ln2/2, ln2/2].
  const double coefficients[] = {1.9875691500E-4, 1.3981999507E-3, 8.3334519073E-3,
                                 4.1665795894E-2, 1.6666665459E-1, 5.0000001201E-1};
  llvm::Value* poly = constant(coefficients[0]);
  for (int i = 1; i < 6; ++i) {
    poly = builder_.CreateFAdd(builder_.CreateFMul(poly, r), constant(coefficients[i]));
  }
  llvm::Value* r_squared = builder_.CreateFMul(r, r);
  poly = builder_.CreateFAdd(builder_.CreateFAdd(builder_.CreateFMul(poly, r_squared), r),
                             constant(1.0));
  // 2^n = 2^(n/2) * 2^(n - n/2), each built from its exponent bits.
  llvm::Value* n = builder_.CreateFPToSI(n_float, int_type);
  llvm::Value* n_half = builder_.CreateAShr(n, int_constant(1));
  llvm::Value* n_rest = builder_.CreateSub(n, n_half);
  auto pow2 = [&](llvm::Value* exponent) {
    llvm::Value* bits =
        builder_.CreateShl(builder_.CreateAdd(exponent, int_constant(127)), int_constant(23));
    return builder_.CreateBitCast(bits, float_type);
  };
  llvm::Value* result = builder_.CreateFMul(builder_.CreateFMul(poly, pow2(n_half)), pow2(n_rest));
  result = builder_.CreateSelect(builder_.CreateFCmpOLT(x, low), constant(0.0), result);
  // NaN in, NaN out (the clamp passes NaN through, but the integer conversion does not).
  return builder_.CreateSelect(builder_.CreateFCmpUNO(x, x), x, result);
}

}  // namespace gtco::codegen::internal
