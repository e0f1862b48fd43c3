// Loop-nest IR: what a schedule lowers to and what the code generators consume.
//
// Semantics:
//  - Nodes are immutable and shared (std::shared_ptr<const ...>); build them with the Make*
//    functions below. Two scalar types: kI64 (indices; wrap-around on overflow is a bug, never
//    relied upon) and kF32 (IEEE single; codegen may contract mul+add into FMA), plus kBool for
//    conditions. Operands of a binary node have the same type; Div/Mod on kI64 round toward
//    negative infinity for the non-negative values schedules produce (they never divide
//    negatives).
//  - Evaluation order within an expression is unspecified; expressions have no side effects
//    (Loads read memory, Calls are pure math functions).
//  - Buffers are named. A LoweredFunc's params are global buffers (fp32 arrays, the kernel's
//    arguments, never aliasing each other); an Allocate introduces a local fp32 array visible in
//    its body only. Indices are flat element offsets.
//  - For(var, min, extent, kind, body): var takes min, min+1, ..., min+extent-1. extent must not
//    depend on var. Kinds:
//      kSerial     ordinary loop;
//      kParallel   iterations may run concurrently on the host's cores; only allowed where the
//                  body references no Allocate from outside the loop; iterations must be
//                  independent;
//      kVectorized extent must be an IntImm (the lane count); the body is executed as SIMD lanes;
//      kUnrolled   extent must be an IntImm; the body is replicated.
//  - Store(buffer, index, value) writes one element. IfThenElse(cond, then, else?) branches.
//  - Call names: "exp", "erf", "tanh", "sqrt", "pow", "sigmoid", "fabs" (fp32 math, libm
//    semantics).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gtco::ir {

enum class ScalarType { kI64, kF32, kBool };

enum class ExprKind {
  kIntImm, kFloatImm, kVar,
  kAdd, kSub, kMul, kDiv, kMod, kMin, kMax,  // arithmetic, same-type operands
  kLt, kLe, kEq, kAnd,                       // comparisons / logic -> kBool
  kSelect,                                   // operands: cond, true_value, false_value
  kLoad,                                     // name = buffer, operands: index
  kCall,                                     // name = function, operands: args (kF32)
  kCast                                      // operands: value; type = target type
};

struct ExprNode;
using Expr = std::shared_ptr<const ExprNode>;

struct ExprNode {
  ExprKind kind;
  ScalarType type;
  int64_t int_value = 0;     ///< kIntImm
  double float_value = 0.0;  ///< kFloatImm
  std::string name;          ///< kVar: variable; kLoad: buffer; kCall: function
  std::vector<Expr> operands;
};

Expr MakeInt(int64_t value);
Expr MakeFloat(double value);
Expr MakeVar(const std::string& name, ScalarType type = ScalarType::kI64);
/// Binary arithmetic/comparison; folds constants and identities (x+0, x*1, x*0 for ints).
Expr MakeBinary(ExprKind kind, Expr a, Expr b);
Expr MakeSelect(Expr cond, Expr true_value, Expr false_value);
Expr MakeLoad(const std::string& buffer, Expr index);
Expr MakeCall(const std::string& function, std::vector<Expr> args);
Expr MakeCast(ScalarType type, Expr value);

inline Expr operator+(Expr a, Expr b) { return MakeBinary(ExprKind::kAdd, a, b); }
inline Expr operator-(Expr a, Expr b) { return MakeBinary(ExprKind::kSub, a, b); }
inline Expr operator*(Expr a, Expr b) { return MakeBinary(ExprKind::kMul, a, b); }
inline Expr operator/(Expr a, Expr b) { return MakeBinary(ExprKind::kDiv, a, b); }
inline Expr operator%(Expr a, Expr b) { return MakeBinary(ExprKind::kMod, a, b); }
Expr Min(Expr a, Expr b);
Expr Max(Expr a, Expr b);

enum class StmtKind { kFor, kStore, kBlock, kIfThenElse, kAllocate, kLetStmt };
enum class ForKind { kSerial, kParallel, kVectorized, kUnrolled };
const char* ForKindName(ForKind kind);

struct StmtNode;
using Stmt = std::shared_ptr<const StmtNode>;

struct StmtNode {
  StmtKind kind;
  // kFor: name = loop var, operands = {min, extent}, for_kind, body[0] = body.
  // kStore: name = buffer, operands = {index, value}.
  // kBlock: body = statements in order.
  // kIfThenElse: operands = {cond}, body = {then} or {then, else}.
  // kAllocate: name = local buffer, alloc_size elements of fp32, body[0] = scope.
  // kLetStmt: name = variable (kI64 or kF32 as the value), operands = {value}, body[0] = scope.
  std::string name;
  std::vector<Expr> operands;
  std::vector<Stmt> body;
  ForKind for_kind = ForKind::kSerial;
  int64_t alloc_size = 0;
};

Stmt MakeFor(const std::string& var, Expr min, Expr extent, ForKind kind, Stmt body);
Stmt MakeStore(const std::string& buffer, Expr index, Expr value);
Stmt MakeBlock(std::vector<Stmt> stmts);
Stmt MakeIf(Expr cond, Stmt then_case, Stmt else_case = nullptr);
Stmt MakeAllocate(const std::string& buffer, int64_t size, Stmt body);
Stmt MakeLet(const std::string& var, Expr value, Stmt body);

struct BufferParam {
  std::string name;
  int64_t num_elements = 0;
};

/// A kernel: `void name(float* params...)` in order; inputs first, the output last.
struct LoweredFunc {
  std::string name;
  std::vector<BufferParam> params;
  Stmt body;
};

/// Readable, deterministic text of the IR (for logs, golden tests and program hashes).
std::string ToString(const Expr& expr);
std::string ToString(const Stmt& stmt, int indent = 0);
std::string ToString(const LoweredFunc& func);

}  // namespace gtco::ir
