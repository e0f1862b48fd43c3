// Loop-nest IR: what a schedule lowers to and what the code generators consume.
//
// Semantics:
//  - Nodes are immutable and shared (std::shared_ptr<const ...>); build them with the Make*
//    functions below. Scalar types: kI64 (indices; wrap-around on overflow is a bug, never
//    relied upon) and kF32 (IEEE single; codegen may contract mul+add into FMA), plus kBool for
//    conditions. Operands of a binary node have the same type; Div/Mod on kI64 round toward
//    negative infinity for the non-negative values schedules produce (they never divide
//    negatives).
//  - Low-precision types: kI32 is a full arithmetic type (two's complement, wraps on overflow;
//    Div/Mod truncate). kI8, kU8 and kBF16 are storage types: they are loaded, stored and cast,
//    never operands of arithmetic. Casts: between integer types sign/zero-extend or truncate
//    (wrap); integer -> f32 converts the value; f32 -> integer truncates toward zero;
//    bf16 -> f32 is exact; f32 -> bf16 rounds to nearest even.
//  - Evaluation order within an expression is unspecified; expressions have no side effects
//    (Loads read memory, Calls are pure functions).
//  - Buffers are named and typed (BufferParam::elem_type, the Allocate's element type; fp32
//    unless stated). A LoweredFunc's params are global buffers (the kernel's arguments, never
//    aliasing each other); an Allocate introduces a local array visible in its body only.
//    Indices are flat element offsets in units of the buffer's element type.
//  - Load(buffer, index) has a type: normally the buffer's element type. A load of kI32 from a
//    buffer of 1- or 2-byte elements reads the 4 / 2 consecutive elements starting at `index`
//    as one little-endian 32-bit word (how a dot-product intrinsic's packed operands are read).
//    A Store's value must have the buffer's element type.
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
//    semantics). Typed calls (MakeTypedCall), per lane:
//      "dot_u8s8x4"(i32 acc, i32 a, i32 b) -> i32: acc + sum_q u8(a.byte[q]) * s8(b.byte[q])
//                    over q = 0..3, wrapping (x86 AVX512-VNNI vpdpbusd);
//      "dot_u8s8x4_wide": the same value, always as widened multiplies (AVX2 hosts);
//      "dot_bf16x2"(f32 acc, i32 a, i32 b) -> f32: acc + bf16(a.hi) * bf16(b.hi) then
//                    + bf16(a.lo) * bf16(b.lo), each step rounded to f32 (x86 AVX512-BF16
//                    vdpbf16ps; denormals may flush to zero);
//      "pack_i8x4"(i32 b0, b1, b2, b3) -> i32: the low bytes of b0..b3 as bytes 0..3;
//      "pack_bf16x2"(f32 lo, f32 hi) -> i32: bf16(lo) | bf16(hi) << 16 (nearest even);
//      "bitxor"(i32, i32) -> i32.
//  - TileMatMul (x86 AMX): a whole tile block of a matmul in one statement, with the tile
//    registers as its private state (their contents are not kept from one statement to the next).
//    name = the tile instruction: "tdpbf16ps" (bf16 pairs, f32 accumulators) or "tdpbusd",
//    "tdpbssd", "tdpbsud", "tdpbuud" (signedness of A then B bytes, i32 accumulators).
//    With mr A tiles and nr B tiles (mr * nr + mr + nr <= 8 tile registers) it computes
//      C[t*16 + r][c*16 + j] = sum over s < k_steps, q < 16 of
//        dot(A_t[r] word (s*16 + q), B[c] word (s*16 + q) of column j)
//    where one "word" is 4 bytes (2 bf16 / 4 int8 values along K): A_t's row r starts at the
//    A address plus r * a_stride bytes (its words in order along K); B[c] is a packed panel,
//    word (g, j) at the B address + c * b_col_stride bytes + g * b_row_stride + j * 4 bytes
//    (b_row_stride 64 by default: the panel's rows contiguous). With taps t_0 .. t_{T-1} (byte
//    offsets) the sum runs over T * k_steps steps: step u * k_steps + s reads A word (u *
//    k_steps + s) * 16 + q and B's word row s * 16 + q from the B address + t_u; C is
//    overwritten (f32 / i32, row-major, mr * 16 rows of nr * 16 elements), or with accumulate
//    the sum is added to what C holds (a K block after the first).
//    The addresses are operand Loads (their buffer and first-element index; nothing is
//    loaded): operands = {C, B, IntImm k_steps, IntImm nr, IntImm a_stride, IntImm
//    b_col_stride, IntImm flags (1: accumulate, 2: a B row stride and taps follow), IntImm
//    prefetch_bytes, [P,] [IntImm b_row_stride, IntImm T, T IntImm taps,] A_0 .. A_{mr-1}}
//    where, with prefetch_bytes > 0, P is the address Load of nr regions (each prefetch_bytes
//    long, b_col_stride bytes apart) brought towards the L2 cache a share per K step, for the
//    statements that come after this one (nothing is read from them here). Use it only where the host has amx_tile (and amx_bf16 /
//    amx_int8) and the process has asked for tile state (target::AmxTileStateUsable).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gtco::ir {

/// kI32, kI8, kU8 and kBF16 come after the original three so existing values keep their numbers.
enum class ScalarType { kI64, kF32, kBool, kI32, kI8, kU8, kBF16 };
/// "i64", "f32", "bool", "i32", "i8", "u8", "bf16".
const char* ScalarTypeName(ScalarType type);
/// Bytes of one element of `type` in memory (bool: 1).
int ScalarTypeBytes(ScalarType type);
/// True for kI8, kU8 and kBF16 (no arithmetic).
bool IsStorageType(ScalarType type);

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
/// An integer immediate of integer type `type` (kI64, kI32, ...); `value` must fit.
Expr MakeTypedInt(int64_t value, ScalarType type);
Expr MakeFloat(double value);
Expr MakeVar(const std::string& name, ScalarType type = ScalarType::kI64);
/// Binary arithmetic/comparison; folds constants and identities (x+0, x*1, x*0 for ints).
Expr MakeBinary(ExprKind kind, Expr a, Expr b);
Expr MakeSelect(Expr cond, Expr true_value, Expr false_value);
/// An f32 load (the buffer must hold f32).
Expr MakeLoad(const std::string& buffer, Expr index);
/// A load of type `type` (see the semantics above for wide loads from narrow buffers).
Expr MakeTypedLoad(const std::string& buffer, Expr index, ScalarType type);
/// An fp32 math call (every argument f32).
Expr MakeCall(const std::string& function, std::vector<Expr> args);
/// A typed call (the typed names above); result type `type`, arguments of any non-bool type.
Expr MakeTypedCall(const std::string& function, ScalarType type, std::vector<Expr> args);
Expr MakeCast(ScalarType type, Expr value);

inline Expr operator+(Expr a, Expr b) { return MakeBinary(ExprKind::kAdd, a, b); }
inline Expr operator-(Expr a, Expr b) { return MakeBinary(ExprKind::kSub, a, b); }
inline Expr operator*(Expr a, Expr b) { return MakeBinary(ExprKind::kMul, a, b); }
inline Expr operator/(Expr a, Expr b) { return MakeBinary(ExprKind::kDiv, a, b); }
inline Expr operator%(Expr a, Expr b) { return MakeBinary(ExprKind::kMod, a, b); }
Expr Min(Expr a, Expr b);
Expr Max(Expr a, Expr b);

enum class StmtKind { kFor, kStore, kBlock, kIfThenElse, kAllocate, kLetStmt, kTileMatMul };
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
  // kAllocate: name = local buffer, alloc_size elements of alloc_type, body[0] = scope.
  // kLetStmt: name = variable (typed as the value), operands = {value}, body[0] = scope.
  // kTileMatMul: name = tile instruction, operands as described above, no body.
  std::string name;
  std::vector<Expr> operands;
  std::vector<Stmt> body;
  ForKind for_kind = ForKind::kSerial;
  int64_t alloc_size = 0;
  ScalarType alloc_type = ScalarType::kF32;  ///< kAllocate: element type
};

Stmt MakeFor(const std::string& var, Expr min, Expr extent, ForKind kind, Stmt body);
Stmt MakeStore(const std::string& buffer, Expr index, Expr value);
Stmt MakeBlock(std::vector<Stmt> stmts);
Stmt MakeIf(Expr cond, Stmt then_case, Stmt else_case = nullptr);
Stmt MakeAllocate(const std::string& buffer, int64_t size, Stmt body);
/// An allocation of `size` elements of `elem_type` (not kBool).
Stmt MakeTypedAllocate(const std::string& buffer, int64_t size, ScalarType elem_type, Stmt body);
Stmt MakeLet(const std::string& var, Expr value, Stmt body);

/// The operands of a TileMatMul, named (see the semantics above).
struct TileMatMulArgs {
  std::string instruction;   ///< "tdpbf16ps", "tdpbusd", "tdpbssd", "tdpbsud" or "tdpbuud"
  Expr c, b;                 ///< address Loads: C's first element, B's panel start
  std::vector<Expr> a;       ///< address Loads: the first element of each A tile (mr of them)
  int64_t k_steps = 1;       ///< 64-byte steps along K
  int64_t nr = 1;            ///< B tiles (16 columns each)
  int64_t a_stride = 0;      ///< bytes between consecutive rows of an A tile
  int64_t b_col_stride = 0;  ///< bytes between the panels of consecutive B tiles
  bool accumulate = false;   ///< C tiles start from C's contents (else from zero)
  Expr prefetch;             ///< address Load of the regions to prefetch, or null
  int64_t prefetch_bytes = 0;  ///< bytes of each of the nr regions (0: no prefetch)
  /// Bytes between consecutive K-word rows of a B tile: 64 for a packed panel (the default);
  /// more where B's tiles are read in place from a larger layout (the AMX conv's pair layout).
  int64_t b_row_stride = 64;
  /// Taps: the K steps run once per entry, B read from the B address plus the entry's bytes
  /// (A advancing across taps as one K); empty means one tap at offset 0. Not with prefetch.
  std::vector<int64_t> b_taps;
};
/// A TileMatMul statement; GTCO_CHECK-fails on an unknown instruction, too many tiles or
/// address operands that are not Loads with i64 indices.
Stmt MakeTileMatMul(const TileMatMulArgs& args);
/// The arguments of a kTileMatMul statement.
TileMatMulArgs GetTileMatMulArgs(const StmtNode& stmt);
/// Whether `instruction` multiplies bf16 pairs (else 8-bit integers).
bool TileInstructionIsBF16(const std::string& instruction);

struct BufferParam {
  std::string name;
  int64_t num_elements = 0;
  ScalarType elem_type = ScalarType::kF32;  ///< element type (not kBool)
};

/// A kernel: `void name(T* params...)` in order (T each param's element type); inputs first,
/// the output last.
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
