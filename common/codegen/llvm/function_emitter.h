// Internal to codegen/llvm: emits the statements and expressions of one LLVM function.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/ir/loop_ir.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"

namespace gtco::codegen::internal {

/// What every function of one generated module shares.
struct ModuleState {
  llvm::LLVMContext* context = nullptr;
  llvm::Module* module = nullptr;
  std::string func_name;                ///< the exported entry's name
  std::vector<ir::BufferParam> params;  ///< the kernel's global buffers, in argument order
  int next_outlined_index = 0;          ///< numbering of outlined parallel bodies
};

/// An IR value during emission. Outside vectorized loops everything is kUniform. Inside one
/// with L lanes, a value is kUniform (same for all lanes, a scalar llvm value), kRamp (i64 only:
/// lane k holds `value + stride * k`, `value` scalar) or kVector (an <L x T> llvm value).
struct EmitValue {
  enum class Shape { kUniform, kRamp, kVector };
  Shape shape = Shape::kUniform;
  llvm::Value* value = nullptr;
  int64_t stride = 0;

  static EmitValue Uniform(llvm::Value* v) { return {Shape::kUniform, v, 0}; }
  static EmitValue Ramp(llvm::Value* base, int64_t stride) { return {Shape::kRamp, base, stride}; }
  static EmitValue Vector(llvm::Value* v) { return {Shape::kVector, v, 0}; }
  bool uniform() const { return shape == Shape::kUniform; }
};

/// A buffer visible to the function: a kernel parameter or a stack allocation.
struct BufferBinding {
  llvm::Value* pointer = nullptr;
  int64_t num_elements = 0;  ///< 0 when unknown
  bool is_param = false;
  ir::ScalarType elem_type = ir::ScalarType::kF32;
};

/// The LLVM type of one scalar of `type` (bf16 as i16 bits, bool as i1).
llvm::Type* ScalarLlvmType(llvm::LLVMContext& context, ir::ScalarType type);

/// Emits IR for one llvm::Function whose entry block holds the hoisted allocas.
class FunctionEmitter {
 public:
  /// `function` must be empty; the emitter creates its entry block and positions at its body.
  FunctionEmitter(ModuleState* state, llvm::Function* function);

  /// Binds kernel parameter `param` (in argument order) to `pointer`.
  void BindParam(const ir::BufferParam& param, llvm::Value* pointer);
  void BindVar(const std::string& name, EmitValue value) { vars_[name] = value; }

  /// Emits `stmt` at the current insertion point.
  absl::Status EmitStmt(const ir::Stmt& stmt);
  /// Terminates the function with `ret void`.
  void Finish();

  llvm::IRBuilder<>& builder() { return builder_; }

 private:
  struct VectorContext {
    std::string var;
    int lanes = 0;
    llvm::Value* mask = nullptr;  ///< <L x i1> of the active lanes; nullptr = all active
  };

  // Statements (stmt_emitter.cc).
  absl::Status EmitFor(const ir::StmtNode& loop);
  absl::Status EmitSerialFor(const ir::StmtNode& loop);
  absl::Status EmitUnrolledFor(const ir::StmtNode& loop);
  absl::Status EmitVectorizedFor(const ir::StmtNode& loop);
  absl::Status EmitStore(const ir::StmtNode& store);
  absl::Status EmitIf(const ir::StmtNode& branch);
  absl::Status EmitAllocate(const ir::StmtNode& allocate);
  absl::Status EmitLet(const ir::StmtNode& let);
  /// A TileMatMul as AMX code (amx_emitter.cc).
  absl::Status EmitTileMatMul(const ir::StmtNode& stmt);
  /// Before the return of a function with tile statements: the tile configuration at its entry
  /// and after each recorded parallel loop, the tile release at its end.
  void FinishTiles();
  /// Emits the body of `loop` with its variable bound to `value`, restoring the old binding.
  absl::Status EmitScoped(const std::string& var, EmitValue value, const ir::Stmt& body);
  absl::StatusOr<llvm::Value*> EmitUniformI64(const ir::Expr& expr, const char* what);

  // Parallel loops (parallel_emitter.cc).
  absl::Status EmitParallelFor(const ir::StmtNode& loop);
  /// Sets *uses_tiles when the body has tile statements.
  absl::StatusOr<llvm::Function*> OutlineParallelBody(const ir::StmtNode& loop, llvm::Value* extent,
                                                      const std::vector<std::string>& captured,
                                                      const std::vector<llvm::Type*>& types,
                                                      bool* uses_tiles);

  // Expressions (expr_emitter.cc).
  absl::StatusOr<EmitValue> EmitExpr(const ir::Expr& expr);
  absl::StatusOr<EmitValue> EmitBinary(const ir::ExprNode& expr);
  /// `ramp` < `bound` (or <= when `inclusive`) for an i64 ramp and a uniform bound, as a
  /// comparison of the lane index against one scalar-computed limit in narrow lanes: the masks of
  /// tails and windows cost one compare of small integers per vector, not one i64 compare per
  /// eight lanes.
  llvm::Value* EmitRampBelow(const EmitValue& ramp, llvm::Value* bound, bool inclusive);
  absl::StatusOr<EmitValue> EmitSelect(const ir::ExprNode& expr);
  absl::StatusOr<EmitValue> EmitCast(const ir::ExprNode& expr);
  absl::StatusOr<EmitValue> EmitLoad(const ir::ExprNode& expr);
  absl::StatusOr<EmitValue> EmitCall(const ir::ExprNode& expr);
  /// Converts `value` (scalar or vector) from `from` to `to` per the IR's cast semantics.
  llvm::Value* ConvertScalar(llvm::Value* value, ir::ScalarType from, ir::ScalarType to);
  /// `type`'s LLVM type, as a vector of the current lane count when `vector` is true.
  llvm::Type* ValueType(ir::ScalarType type, bool vector);

  // Typed calls: dot-product intrinsics, packing, bit ops (lowp_emitter.cc).
  absl::StatusOr<EmitValue> EmitTypedCall(const ir::ExprNode& expr);
  llvm::Value* EmitDotU8S8(llvm::Value* acc, llvm::Value* a, llvm::Value* b, int lanes,
                           bool portable = false);
  llvm::Value* EmitDotBF16(llvm::Value* acc, llvm::Value* a, llvm::Value* b, int lanes);
  llvm::Value* EmitBF16Bits(llvm::Value* f32_value);
  llvm::Value* EmitArithmetic(ir::ExprKind kind, ir::ScalarType type, llvm::Value* a,
                              llvm::Value* b);
  /// Widens any shape to an <L x T> vector (only inside a vectorized loop).
  llvm::Value* ToVector(const EmitValue& value);
  /// <1 x i1>: whether any lane of `mask` is active.
  llvm::Value* AnyLaneMask(llvm::Value* mask);
  /// The address of element(s) `index` of `pointer`: an inbounds GEP when every lane accesses
  /// it, a plain one under a lane `mask`, where a masked-off lane's element (the first lane's,
  /// which a contiguous access takes as its base) may lie outside the buffer, and an inbounds
  /// GEP would make the address poison.
  llvm::Value* ElementAddress(llvm::Type* elem_type, llvm::Value* pointer, llvm::Value* index,
                              llvm::Value* mask);
  absl::StatusOr<BufferBinding> LookupBuffer(const std::string& name);
  absl::Status CheckConstantIndex(const std::string& buffer, const BufferBinding& binding,
                                  const EmitValue& index, int64_t elements_per_access = 1);

  // Math functions (math_emitter.cc); `x` is a scalar float or a float vector.
  absl::StatusOr<llvm::Value*> EmitMathCall(const std::string& name,
                                            const std::vector<llvm::Value*>& args);
  llvm::Value* EmitExp(llvm::Value* x);
  llvm::Value* EmitVectorExp(llvm::Value* x);
  /// erf and tanh as inline polynomials (vectorizable; within 4e-7 relative of libm).
  llvm::Value* EmitErf(llvm::Value* x);
  llvm::Value* EmitTanh(llvm::Value* x);
  /// Horner evaluation of `coefficients` (highest degree first) at `x`.
  llvm::Value* EmitPolynomial(llvm::Value* x, std::initializer_list<double> coefficients);

  llvm::Type* FloatTy() { return builder_.getFloatTy(); }
  llvm::Type* I64Ty() { return builder_.getInt64Ty(); }
  llvm::Constant* F32(double v) { return llvm::ConstantFP::get(FloatTy(), v); }
  llvm::Constant* I64(int64_t v) { return builder_.getInt64(v); }

  ModuleState* state_;
  llvm::Function* function_;
  llvm::IRBuilder<> builder_;
  llvm::IRBuilder<> alloca_builder_;  ///< positioned before the entry block's terminator
  std::map<std::string, EmitValue> vars_;
  std::map<std::string, BufferBinding> buffers_;
  std::vector<llvm::Value*> param_pointers_;  ///< in ModuleState::params order
  VectorContext* vector_ = nullptr;           ///< the innermost vectorized loop; nullptr outside
  /// > 0 inside code that may not run (runtime branches, masked lanes, loops whose extent is not
  /// a constant): constant out-of-bounds indices there are not errors.
  int conditional_depth_ = 0;
  bool uses_tiles_ = false;  ///< this function emitted a TileMatMul
  /// Calls of parallel loops whose bodies used (and released) the tiles on this thread.
  std::vector<llvm::Instruction*> tile_reload_points_;
};

/// Marks arguments [first_arg, first_arg + params.size()) as noalias, dereferenceable buffers.
void AddBufferParamAttributes(llvm::Function* function, unsigned first_arg,
                              const std::vector<ir::BufferParam>& params);

/// Adds the `!llvm.loop` metadata every generated loop carries (LLVM's own vectorizer off).
void AttachLoopMetadata(llvm::BranchInst* latch_branch);

}  // namespace gtco::codegen::internal
