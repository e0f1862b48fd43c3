// Loop-nest IR: node factories with constant folding, and the deterministic text printer.
#include "common/ir/loop_ir.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/util/status.h"

namespace gtco::ir {
namespace {

Expr NewExpr(ExprKind kind, ScalarType type, std::vector<Expr> operands, std::string name = "") {
  auto node = std::make_shared<ExprNode>();
  node->kind = kind;
  node->type = type;
  node->name = std::move(name);
  node->operands = std::move(operands);
  return node;
}

std::shared_ptr<StmtNode> NewStmt(StmtKind kind, std::string name, std::vector<Expr> operands,
                                  std::vector<Stmt> body) {
  auto node = std::make_shared<StmtNode>();
  node->kind = kind;
  node->name = std::move(name);
  node->operands = std::move(operands);
  node->body = std::move(body);
  return node;
}

bool IsIntConst(const Expr& e, int64_t value) {
  return e->kind == ExprKind::kIntImm && e->int_value == value;
}
bool IsFloatConst(const Expr& e, double value) {
  return e->kind == ExprKind::kFloatImm && e->float_value == value;
}

bool IsComparison(ExprKind kind) {
  return kind == ExprKind::kLt || kind == ExprKind::kLe || kind == ExprKind::kEq ||
         kind == ExprKind::kAnd;
}

int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t quotient = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --quotient;
  return quotient;
}
int64_t FloorMod(int64_t a, int64_t b) { return a - FloorDiv(a, b) * b; }

/// Folds two i32 immediates with wrap-around (truncating Div/Mod); nullptr when not folded.
Expr FoldInt32s(ExprKind kind, int64_t a_value, int64_t b_value) {
  const auto a = static_cast<uint32_t>(a_value), b = static_cast<uint32_t>(b_value);
  const auto make = [](uint32_t bits) {
    return MakeTypedInt(static_cast<int32_t>(bits), ScalarType::kI32);
  };
  switch (kind) {
    case ExprKind::kAdd:
      return make(a + b);
    case ExprKind::kSub:
      return make(a - b);
    case ExprKind::kMul:
      return make(a * b);
    case ExprKind::kMin:
      return make(static_cast<uint32_t>(std::min<int64_t>(a_value, b_value)));
    case ExprKind::kMax:
      return make(static_cast<uint32_t>(std::max<int64_t>(a_value, b_value)));
    default:
      return nullptr;
  }
}

/// Folds two integer immediates; returns nullptr when the operation is not folded.
Expr FoldInts(ExprKind kind, int64_t a, int64_t b) {
  switch (kind) {
    case ExprKind::kAdd:
      return MakeInt(a + b);
    case ExprKind::kSub:
      return MakeInt(a - b);
    case ExprKind::kMul:
      return MakeInt(a * b);
    case ExprKind::kDiv:
      return b == 0 ? nullptr : MakeInt(FloorDiv(a, b));
    case ExprKind::kMod:
      return b == 0 ? nullptr : MakeInt(FloorMod(a, b));
    case ExprKind::kMin:
      return MakeInt(std::min(a, b));
    case ExprKind::kMax:
      return MakeInt(std::max(a, b));
    default:
      return nullptr;
  }
}

/// Folds two float immediates with fp32 arithmetic (the IR's semantics).
Expr FoldFloats(ExprKind kind, double a_value, double b_value) {
  const float a = static_cast<float>(a_value);
  const float b = static_cast<float>(b_value);
  switch (kind) {
    case ExprKind::kAdd:
      return MakeFloat(a + b);
    case ExprKind::kSub:
      return MakeFloat(a - b);
    case ExprKind::kMul:
      return MakeFloat(a * b);
    case ExprKind::kDiv:
      return MakeFloat(a / b);
    case ExprKind::kMin:
      return MakeFloat(b < a ? b : a);
    case ExprKind::kMax:
      return MakeFloat(a < b ? b : a);
    default:
      return nullptr;
  }
}

/// Identities: x+0, 0+x, x-0, x*1, 1*x, x/1 (and x*0, 0*x, x%1 for ints).
Expr FoldIdentity(ExprKind kind, const Expr& a, const Expr& b) {
  if (a->type == ScalarType::kI64 || a->type == ScalarType::kI32) {
    const ScalarType type = a->type;
    switch (kind) {
      case ExprKind::kAdd:
        if (IsIntConst(b, 0)) return a;
        if (IsIntConst(a, 0)) return b;
        return nullptr;
      case ExprKind::kSub:
        return IsIntConst(b, 0) ? a : nullptr;
      case ExprKind::kMul:
        if (IsIntConst(b, 1)) return a;
        if (IsIntConst(a, 1)) return b;
        if (IsIntConst(a, 0) || IsIntConst(b, 0)) return MakeTypedInt(0, type);
        return nullptr;
      case ExprKind::kDiv:
        return IsIntConst(b, 1) ? a : nullptr;
      case ExprKind::kMod:
        return IsIntConst(b, 1) ? MakeTypedInt(0, type) : nullptr;
      default:
        return nullptr;
    }
  }
  if (a->type == ScalarType::kF32) {
    switch (kind) {
      case ExprKind::kMul:
        if (IsFloatConst(b, 1.0)) return a;
        if (IsFloatConst(a, 1.0)) return b;
        return nullptr;
      case ExprKind::kDiv:
        return IsFloatConst(b, 1.0) ? a : nullptr;
      default:
        return nullptr;
    }
  }
  return nullptr;
}

const char* BinaryOperatorText(ExprKind kind) {
  switch (kind) {
    case ExprKind::kAdd:
      return " + ";
    case ExprKind::kSub:
      return " - ";
    case ExprKind::kMul:
      return " * ";
    case ExprKind::kDiv:
      return " / ";
    case ExprKind::kMod:
      return " % ";
    case ExprKind::kLt:
      return " < ";
    case ExprKind::kLe:
      return " <= ";
    case ExprKind::kEq:
      return " == ";
    case ExprKind::kAnd:
      return " && ";
    default:
      return nullptr;
  }
}

const char* TypeName(ScalarType type) { return ScalarTypeName(type); }

/// The names of the typed calls and their arities.
int TypedCallArity(const std::string& name) {
  if (name == "dot_u8s8x4" || name == "dot_u8s8x4_wide" || name == "dot_bf16x2") return 3;
  if (name == "pack_i8x4") return 4;
  if (name == "pack_bf16x2" || name == "bitxor") return 2;
  return -1;
}

std::string FloatText(double value) {
  if (std::isnan(value)) return "nan_f";
  if (std::isinf(value)) return value > 0 ? "inf_f" : "-inf_f";
  return absl::StrFormat("%.9gf", value);
}

}  // namespace

const char* ScalarTypeName(ScalarType type) {
  switch (type) {
    case ScalarType::kI64:
      return "i64";
    case ScalarType::kF32:
      return "f32";
    case ScalarType::kBool:
      return "bool";
    case ScalarType::kI32:
      return "i32";
    case ScalarType::kI8:
      return "i8";
    case ScalarType::kU8:
      return "u8";
    case ScalarType::kBF16:
      return "bf16";
  }
  return "?";
}

int ScalarTypeBytes(ScalarType type) {
  switch (type) {
    case ScalarType::kI64:
      return 8;
    case ScalarType::kF32:
    case ScalarType::kI32:
      return 4;
    case ScalarType::kBF16:
      return 2;
    case ScalarType::kBool:
    case ScalarType::kI8:
    case ScalarType::kU8:
      return 1;
  }
  return 4;
}

bool IsStorageType(ScalarType type) {
  return type == ScalarType::kI8 || type == ScalarType::kU8 || type == ScalarType::kBF16;
}

Expr MakeTypedInt(int64_t value, ScalarType type) {
  GTCO_CHECK(type == ScalarType::kI64 || type == ScalarType::kI32 || type == ScalarType::kI8 ||
                 type == ScalarType::kU8,
             "integer immediate of non-integer type ", ScalarTypeName(type));
  if (type == ScalarType::kI32) {
    GTCO_CHECK(value >= INT32_MIN && value <= INT32_MAX, "i32 immediate out of range: ", value);
  }
  auto node = std::make_shared<ExprNode>();
  node->kind = ExprKind::kIntImm;
  node->type = type;
  node->int_value = value;
  return node;
}

Expr MakeInt(int64_t value) {
  auto node = std::make_shared<ExprNode>();
  node->kind = ExprKind::kIntImm;
  node->type = ScalarType::kI64;
  node->int_value = value;
  return node;
}

Expr MakeFloat(double value) {
  auto node = std::make_shared<ExprNode>();
  node->kind = ExprKind::kFloatImm;
  node->type = ScalarType::kF32;
  node->float_value = value;
  return node;
}

Expr MakeVar(const std::string& name, ScalarType type) {
  auto node = std::make_shared<ExprNode>();
  node->kind = ExprKind::kVar;
  node->type = type;
  node->name = name;
  return node;
}

Expr MakeBinary(ExprKind kind, Expr a, Expr b) {
  GTCO_CHECK(a != nullptr && b != nullptr, "null operand");
  GTCO_CHECK(
      BinaryOperatorText(kind) != nullptr || kind == ExprKind::kMin || kind == ExprKind::kMax,
      "not a binary expression kind");
  GTCO_CHECK(a->type == b->type, "binary operands of different types: ", ToString(a), " and ",
             ToString(b));
  if (kind == ExprKind::kAnd) {
    GTCO_CHECK(a->type == ScalarType::kBool, "&& needs bool operands");
  } else {
    GTCO_CHECK(a->type != ScalarType::kBool, "arithmetic/comparison on bool operands");
  }
  GTCO_CHECK(!IsStorageType(a->type), "arithmetic on storage type ", ScalarTypeName(a->type),
             ": cast it first");
  if (a->type == ScalarType::kI32 && a->kind == ExprKind::kIntImm && b->kind == ExprKind::kIntImm) {
    if (Expr folded = FoldInt32s(kind, a->int_value, b->int_value)) return folded;
  } else if (a->kind == ExprKind::kIntImm && b->kind == ExprKind::kIntImm) {
    if (Expr folded = FoldInts(kind, a->int_value, b->int_value)) return folded;
  }
  if (a->kind == ExprKind::kFloatImm && b->kind == ExprKind::kFloatImm) {
    if (Expr folded = FoldFloats(kind, a->float_value, b->float_value)) return folded;
  }
  if (Expr folded = FoldIdentity(kind, a, b)) return folded;
  const ScalarType type = IsComparison(kind) ? ScalarType::kBool : a->type;
  return NewExpr(kind, type, {std::move(a), std::move(b)});
}

Expr Min(Expr a, Expr b) { return MakeBinary(ExprKind::kMin, std::move(a), std::move(b)); }
Expr Max(Expr a, Expr b) { return MakeBinary(ExprKind::kMax, std::move(a), std::move(b)); }

Expr MakeSelect(Expr cond, Expr true_value, Expr false_value) {
  GTCO_CHECK(cond && true_value && false_value, "null operand");
  GTCO_CHECK(cond->type == ScalarType::kBool, "select condition must be bool");
  GTCO_CHECK(true_value->type == false_value->type, "select branches of different types");
  const ScalarType type = true_value->type;
  return NewExpr(ExprKind::kSelect, type,
                 {std::move(cond), std::move(true_value), std::move(false_value)});
}

Expr MakeLoad(const std::string& buffer, Expr index) {
  GTCO_CHECK(index && index->type == ScalarType::kI64, "load index must be i64");
  return NewExpr(ExprKind::kLoad, ScalarType::kF32, {std::move(index)}, buffer);
}

Expr MakeTypedLoad(const std::string& buffer, Expr index, ScalarType type) {
  GTCO_CHECK(index && index->type == ScalarType::kI64, "load index must be i64");
  GTCO_CHECK(type != ScalarType::kBool, "loads cannot be bool");
  return NewExpr(ExprKind::kLoad, type, {std::move(index)}, buffer);
}

Expr MakeTypedCall(const std::string& function, ScalarType type, std::vector<Expr> args) {
  const int arity = TypedCallArity(function);
  GTCO_CHECK(arity >= 0, "unknown typed call '", function, "'");
  GTCO_CHECK(static_cast<int>(args.size()) == arity, "typed call '", function, "' takes ", arity,
             " arguments");
  for (const Expr& arg : args) {
    GTCO_CHECK(arg && arg->type != ScalarType::kBool, "typed call arguments cannot be bool");
  }
  return NewExpr(ExprKind::kCall, type, std::move(args), function);
}

Expr MakeCall(const std::string& function, std::vector<Expr> args) {
  for (const Expr& arg : args) {
    GTCO_CHECK(arg && arg->type == ScalarType::kF32, "call arguments must be f32");
  }
  return NewExpr(ExprKind::kCall, ScalarType::kF32, std::move(args), function);
}

Expr MakeCast(ScalarType type, Expr value) {
  GTCO_CHECK(value != nullptr, "null operand");
  if (value->type == type) return value;
  return NewExpr(ExprKind::kCast, type, {std::move(value)});
}

const char* ForKindName(ForKind kind) {
  switch (kind) {
    case ForKind::kSerial:
      return "serial";
    case ForKind::kParallel:
      return "parallel";
    case ForKind::kVectorized:
      return "vectorized";
    case ForKind::kUnrolled:
      return "unrolled";
  }
  return "?";
}

Stmt MakeFor(const std::string& var, Expr min, Expr extent, ForKind kind, Stmt body) {
  GTCO_CHECK(min && extent && body, "null for-loop part");
  GTCO_CHECK(min->type == ScalarType::kI64 && extent->type == ScalarType::kI64,
             "loop bounds must be i64");
  if (kind == ForKind::kVectorized || kind == ForKind::kUnrolled) {
    GTCO_CHECK(extent->kind == ExprKind::kIntImm, ForKindName(kind),
               " loop needs a constant extent, got ", ToString(extent));
  }
  auto node = NewStmt(StmtKind::kFor, var, {std::move(min), std::move(extent)}, {std::move(body)});
  node->for_kind = kind;
  return node;
}

Stmt MakeStore(const std::string& buffer, Expr index, Expr value) {
  GTCO_CHECK(index && index->type == ScalarType::kI64, "store index must be i64");
  GTCO_CHECK(value && value->type != ScalarType::kBool, "stored value cannot be bool");
  return NewStmt(StmtKind::kStore, buffer, {std::move(index), std::move(value)}, {});
}

Stmt MakeBlock(std::vector<Stmt> stmts) {
  for (const Stmt& stmt : stmts) GTCO_CHECK(stmt != nullptr, "null statement in block");
  return NewStmt(StmtKind::kBlock, "", {}, std::move(stmts));
}

Stmt MakeIf(Expr cond, Stmt then_case, Stmt else_case) {
  GTCO_CHECK(cond && cond->type == ScalarType::kBool, "if condition must be bool");
  GTCO_CHECK(then_case != nullptr, "null then-branch");
  std::vector<Stmt> body = {std::move(then_case)};
  if (else_case) body.push_back(std::move(else_case));
  return NewStmt(StmtKind::kIfThenElse, "", {std::move(cond)}, std::move(body));
}

Stmt MakeAllocate(const std::string& buffer, int64_t size, Stmt body) {
  GTCO_CHECK(size > 0, "allocation size must be positive");
  GTCO_CHECK(body != nullptr, "null allocate scope");
  auto node = NewStmt(StmtKind::kAllocate, buffer, {}, {std::move(body)});
  node->alloc_size = size;
  return node;
}

Stmt MakeTypedAllocate(const std::string& buffer, int64_t size, ScalarType elem_type, Stmt body) {
  GTCO_CHECK(elem_type != ScalarType::kBool, "allocations cannot hold bool");
  auto node = std::const_pointer_cast<StmtNode>(MakeAllocate(buffer, size, std::move(body)));
  node->alloc_type = elem_type;
  return node;
}

Stmt MakeLet(const std::string& var, Expr value, Stmt body) {
  GTCO_CHECK(value && value->type != ScalarType::kBool, "let value must be i64 or f32");
  GTCO_CHECK(body != nullptr, "null let scope");
  return NewStmt(StmtKind::kLetStmt, var, {std::move(value)}, {std::move(body)});
}

bool TileInstructionIsBF16(const std::string& instruction) { return instruction == "tdpbf16ps"; }

Stmt MakeTileMatMul(const TileMatMulArgs& args) {
  static const char* const kInstructions[] = {"tdpbf16ps", "tdpbusd", "tdpbssd", "tdpbsud",
                                              "tdpbuud"};
  GTCO_CHECK(std::find(std::begin(kInstructions), std::end(kInstructions), args.instruction) !=
                 std::end(kInstructions),
             "unknown tile instruction");
  const int64_t mr = static_cast<int64_t>(args.a.size());
  GTCO_CHECK(mr >= 1 && args.nr >= 1 && mr * args.nr + mr + args.nr <= 8,
             "a tile matmul needs mr * nr + mr + nr <= 8 tile registers");
  GTCO_CHECK(args.k_steps >= 1 && args.a_stride > 0 && args.b_col_stride >= 0 &&
                 args.b_row_stride >= 64,
             "tile matmul sizes must be positive");
  const bool extended = args.b_row_stride != 64 || !args.b_taps.empty();
  GTCO_CHECK(!extended || !args.prefetch, "a tile matmul with taps or a B row stride does not "
                                          "prefetch");
  std::vector<Expr> operands = {args.c,
                                args.b,
                                MakeInt(args.k_steps),
                                MakeInt(args.nr),
                                MakeInt(args.a_stride),
                                MakeInt(args.b_col_stride),
                                MakeInt((args.accumulate ? 1 : 0) | (extended ? 2 : 0)),
                                MakeInt(args.prefetch ? args.prefetch_bytes : 0)};
  if (args.prefetch) {
    GTCO_CHECK(args.prefetch->kind == ExprKind::kLoad && args.prefetch_bytes > 0,
               "a tile prefetch is an address Load of a positive size");
    operands.push_back(args.prefetch);
  }
  if (extended) {
    operands.push_back(MakeInt(args.b_row_stride));
    operands.push_back(MakeInt(static_cast<int64_t>(args.b_taps.size())));
    for (int64_t tap : args.b_taps) operands.push_back(MakeInt(tap));
  }
  operands.insert(operands.end(), args.a.begin(), args.a.end());
  for (const Expr& address : {args.c, args.b}) {
    GTCO_CHECK(address && address->kind == ExprKind::kLoad, "tile addresses must be Loads");
  }
  for (const Expr& address : args.a) {
    GTCO_CHECK(address && address->kind == ExprKind::kLoad, "tile addresses must be Loads");
  }
  return NewStmt(StmtKind::kTileMatMul, args.instruction, std::move(operands), {});
}

TileMatMulArgs GetTileMatMulArgs(const StmtNode& stmt) {
  TileMatMulArgs args;
  args.instruction = stmt.name;
  args.c = stmt.operands[0];
  args.b = stmt.operands[1];
  args.k_steps = stmt.operands[2]->int_value;
  args.nr = stmt.operands[3]->int_value;
  args.a_stride = stmt.operands[4]->int_value;
  args.b_col_stride = stmt.operands[5]->int_value;
  args.accumulate = (stmt.operands[6]->int_value & 1) != 0;
  args.prefetch_bytes = stmt.operands[7]->int_value;
  size_t first_a = 8;
  if (args.prefetch_bytes > 0) args.prefetch = stmt.operands[first_a++];
  if ((stmt.operands[6]->int_value & 2) != 0) {
    args.b_row_stride = stmt.operands[first_a++]->int_value;
    const int64_t taps = stmt.operands[first_a++]->int_value;
    for (int64_t tap = 0; tap < taps; ++tap) {
      args.b_taps.push_back(stmt.operands[first_a++]->int_value);
    }
  }
  args.a.assign(stmt.operands.begin() + static_cast<std::ptrdiff_t>(first_a), stmt.operands.end());
  return args;
}

std::string ToString(const Expr& expr) {
  if (!expr) return "<null>";
  switch (expr->kind) {
    case ExprKind::kIntImm:
      if (expr->type != ScalarType::kI64) {
        return absl::StrCat(expr->int_value, TypeName(expr->type));
      }
      return absl::StrCat(expr->int_value);
    case ExprKind::kFloatImm:
      return FloatText(expr->float_value);
    case ExprKind::kVar:
      return expr->name;
    case ExprKind::kMin:
    case ExprKind::kMax:
      return absl::StrCat(expr->kind == ExprKind::kMin ? "min(" : "max(",
                          ToString(expr->operands[0]), ", ", ToString(expr->operands[1]), ")");
    case ExprKind::kSelect:
      return absl::StrCat("select(", ToString(expr->operands[0]), ", ", ToString(expr->operands[1]),
                          ", ", ToString(expr->operands[2]), ")");
    case ExprKind::kLoad:
      if (expr->type != ScalarType::kF32) {
        return absl::StrCat(expr->name, "<", TypeName(expr->type), ">[",
                            ToString(expr->operands[0]), "]");
      }
      return absl::StrCat(expr->name, "[", ToString(expr->operands[0]), "]");
    case ExprKind::kCall:
      return absl::StrCat(
          expr->name, "(",
          absl::StrJoin(expr->operands, ", ",
                        [](std::string* out, const Expr& arg) { out->append(ToString(arg)); }),
          ")");
    case ExprKind::kCast:
      return absl::StrCat(TypeName(expr->type), "(", ToString(expr->operands[0]), ")");
    default:
      return absl::StrCat("(", ToString(expr->operands[0]), BinaryOperatorText(expr->kind),
                          ToString(expr->operands[1]), ")");
  }
}

std::string ToString(const Stmt& stmt, int indent) {
  const std::string pad(indent, ' ');
  if (!stmt) return pad + "<null>\n";
  switch (stmt->kind) {
    case StmtKind::kFor:
      return absl::StrCat(pad, ForKindName(stmt->for_kind), " for (", stmt->name, ", ",
                          ToString(stmt->operands[0]), ", ", ToString(stmt->operands[1]), ") {\n",
                          ToString(stmt->body[0], indent + 2), pad, "}\n");
    case StmtKind::kStore:
      return absl::StrCat(pad, stmt->name, "[", ToString(stmt->operands[0]),
                          "] = ", ToString(stmt->operands[1]), "\n");
    case StmtKind::kBlock: {
      std::string text;
      for (const Stmt& child : stmt->body) text += ToString(child, indent);
      return text;
    }
    case StmtKind::kIfThenElse: {
      std::string text = absl::StrCat(pad, "if (", ToString(stmt->operands[0]), ") {\n",
                                      ToString(stmt->body[0], indent + 2));
      if (stmt->body.size() > 1) {
        absl::StrAppend(&text, pad, "} else {\n", ToString(stmt->body[1], indent + 2));
      }
      return absl::StrCat(text, pad, "}\n");
    }
    case StmtKind::kAllocate:
      return absl::StrCat(
          pad, "allocate ", stmt->name, "[", stmt->alloc_size, "]",
          stmt->alloc_type == ScalarType::kF32 ? "" : absl::StrCat(":", TypeName(stmt->alloc_type)),
          " {\n", ToString(stmt->body[0], indent + 2), pad, "}\n");
    case StmtKind::kLetStmt:
      return absl::StrCat(pad, "let ", stmt->name, " = ", ToString(stmt->operands[0]), " {\n",
                          ToString(stmt->body[0], indent + 2), pad, "}\n");
    case StmtKind::kTileMatMul: {
      const TileMatMulArgs args = GetTileMatMulArgs(*stmt);
      return absl::StrCat(
          pad, "tile_matmul.", args.instruction, "(c=&", ToString(args.c), ", b=&",
          ToString(args.b), ", a={",
          absl::StrJoin(args.a, ", ",
                        [](std::string* out, const Expr& a) { out->append("&" + ToString(a)); }),
          "}, k_steps=", args.k_steps, ", nr=", args.nr, ", a_stride=", args.a_stride,
          ", b_col_stride=", args.b_col_stride, args.accumulate ? ", accumulate" : "",
          args.prefetch ? absl::StrCat(", prefetch=&", ToString(args.prefetch), " x ",
                                       args.prefetch_bytes)
                        : "",
          args.b_row_stride != 64 ? absl::StrCat(", b_row_stride=", args.b_row_stride) : "",
          args.b_taps.empty() ? "" : absl::StrCat(", b_taps={", absl::StrJoin(args.b_taps, ", "),
                                                  "}"),
          ")\n");
    }
  }
  return pad + "<unknown>\n";
}

std::string ToString(const LoweredFunc& func) {
  std::string text = absl::StrCat("func ", func.name, "(");
  for (size_t i = 0; i < func.params.size(); ++i) {
    absl::StrAppend(&text, i == 0 ? "" : ", ", func.params[i].name, "[",
                    func.params[i].num_elements, "]");
    if (func.params[i].elem_type != ScalarType::kF32) {
      absl::StrAppend(&text, ":", TypeName(func.params[i].elem_type));
    }
  }
  return absl::StrCat(text, ") {\n", ToString(func.body, 2), "}\n");
}

}  // namespace gtco::ir
