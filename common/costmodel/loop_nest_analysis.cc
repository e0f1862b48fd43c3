// Loop-nest analysis: a recursive walk over the loop IR that evaluates integer index
// expressions at a representative iteration point (every loop at its first iteration) to
// estimate extents and per-loop strides of each access.
#include "common/costmodel/loop_nest_analysis.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

namespace gtco::costmodel {
namespace {

using ir::Expr;
using ir::ExprKind;
using ir::Stmt;
using ir::StmtKind;

constexpr int64_t kLineBytes = 64;

int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t quotient = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --quotient;
  return quotient;
}

bool IsArithmetic(ExprKind kind) {
  switch (kind) {
    case ExprKind::kAdd:
    case ExprKind::kSub:
    case ExprKind::kMul:
    case ExprKind::kDiv:
    case ExprKind::kMod:
    case ExprKind::kMin:
    case ExprKind::kMax:
    case ExprKind::kLt:
    case ExprKind::kLe:
    case ExprKind::kEq:
    case ExprKind::kAnd:
    case ExprKind::kSelect:
      return true;
    default:
      return false;
  }
}

bool NodesEqual(const ir::ExprNode* a, const ir::ExprNode* b) {
  if (a == b) return true;
  if (a == nullptr || b == nullptr) return false;
  if (a->kind != b->kind || a->type != b->type || a->int_value != b->int_value ||
      a->float_value != b->float_value || a->name != b->name ||
      a->operands.size() != b->operands.size()) {
    return false;
  }
  for (size_t operand_idx = 0; operand_idx < a->operands.size(); ++operand_idx) {
    if (!NodesEqual(a->operands[operand_idx].get(), b->operands[operand_idx].get())) return false;
  }
  return true;
}

/// Index arithmetic (i64, and bool logic) as opposed to value computation (f32, i32).
bool IsIndexType(ir::ScalarType type) {
  return type == ir::ScalarType::kI64 || type == ir::ScalarType::kBool;
}

bool IsIntegerType(ir::ScalarType type) {
  return type == ir::ScalarType::kI64 || type == ir::ScalarType::kI32 ||
         type == ir::ScalarType::kBool || type == ir::ScalarType::kI8 ||
         type == ir::ScalarType::kU8;
}

/// Adds the operation counts of `expr` to `site`. A math call equal to one in `seen_calls`
/// (earlier in the same block: the compiler computes it once) is skipped with its operands;
/// new calls are appended to `seen_calls`.
void CountOps(const Expr& expr, StmtSummary* site, std::vector<const ir::ExprNode*>* seen_calls) {
  if (IsArithmetic(expr->kind)) {
    // Comparisons yield kBool: their operands' type says whether they are index or value work.
    const ir::ScalarType operand_type =
        expr->operands.empty() ? expr->type : expr->operands.back()->type;
    (IsIndexType(operand_type) ? site->int_ops : site->float_ops) += 1;
  } else if (expr->kind == ExprKind::kCast) {
    if (!IsIndexType(expr->type) && !IsIndexType(expr->operands[0]->type)) site->float_ops += 1;
  } else if (expr->kind == ExprKind::kCall) {
    for (const ir::ExprNode* seen : *seen_calls) {
      if (NodesEqual(seen, expr.get())) return;
    }
    seen_calls->push_back(expr.get());
    const std::string& fn = expr->name;
    site->float_ops += fn == "dot_u8s8x4" || fn == "dot_u8s8x4_wide" ? 8
                       : fn == "dot_bf16x2"                          ? 4
                                                                     : 1;
    if (fn == "exp" || fn == "pow" || fn == "sigmoid") site->calls.exp_like += 1;
    if (fn == "erf" || fn == "tanh") site->calls.erf_tanh += 1;
    if (fn == "sqrt" || fn == "fabs") site->calls.sqrt_abs += 1;
  }
  for (const Expr& operand : expr->operands) CountOps(operand, site, seen_calls);
}

void CollectLoads(const Expr& expr, std::vector<const ir::ExprNode*>* loads) {
  if (expr->kind == ExprKind::kLoad) loads->push_back(expr.get());
  for (const Expr& operand : expr->operands) CollectLoads(operand, loads);
}

bool ReadsElement(const Expr& expr, const std::string& buffer, const Expr& index) {
  if (expr->kind == ExprKind::kLoad && expr->name == buffer &&
      NodesEqual(expr->operands[0].get(), index.get())) {
    return true;
  }
  for (const Expr& operand : expr->operands) {
    if (ReadsElement(operand, buffer, index)) return true;
  }
  return false;
}

class NestWalker {
 public:
  explicit NestWalker(const ir::LoweredFunc& func) {
    for (const ir::BufferParam& param : func.params) {
      const int element_bytes = ir::ScalarTypeBytes(param.elem_type);
      buffers_.push_back({param.name, {true, param.num_elements, element_bytes}});
      summary_.global_bytes += param.num_elements * element_bytes;
    }
  }

  NestSummary Run(const Stmt& body) {
    if (body != nullptr) Visit(body, 1.0);
    return std::move(summary_);
  }

 private:
  struct Binding {
    std::string var;
    bool is_loop = true;
    int64_t value = 0;  // loops: the current representative value
    Expr let_value;     // lets: evaluated lazily in the scope below this binding
  };
  struct BufferInfo {
    bool is_global = false;
    int64_t elements = 0;
    int element_bytes = 4;
  };
  struct OpenLoop {
    size_t binding_idx;
    int64_t min;
  };

  /// One step of a compiled index expression (postfix): an immediate, the current value of a
  /// loop binding, an unknown value, or an operator on the values below it.
  struct Op {
    ExprKind kind;  ///< kIntImm, kVar (a loop: `value` is its scope index), kSelect, arithmetic
    int64_t value = 0;
    bool unknown = false;  ///< the value cannot be known here
  };
  using Program = std::vector<Op>;

  /// Compiles `expr` with the bindings scope_[0, limit) into `program`: variables bound by loops
  /// are read when the program runs (MakeAccess moves them), let-bound ones are inlined.
  void Compile(const Expr& expr, size_t limit, Program* program) const;
  /// The integer value of a compiled expression at the loops' current values; nullopt when
  /// unknown (an unbound variable, a non-integer cast, overflow, division by zero).
  std::optional<int64_t> Run(const Program& program) const;
  /// Integer value of `expr` with every binding in scope; nullopt when unknown.
  std::optional<int64_t> Eval(const Expr& expr) const {
    Program program;
    Compile(expr, scope_.size(), &program);
    return Run(program);
  }

  void Visit(const Stmt& stmt, double weight);
  void VisitFor(const Stmt& stmt, double weight);
  void RecordSite(double weight, const ir::StmtNode* store, const Expr& expr);
  /// A TileMatMul: one site with its multiply-adds and its operands' first elements.
  void RecordTileSite(double weight, const ir::StmtNode& stmt);
  /// `value_type`: the type the access reads or writes (the load's type, or the stored
  /// value's).
  Access MakeAccess(const std::string& buffer, const Expr& index, ir::ScalarType value_type,
                    bool is_store);

  NestSummary summary_;
  std::vector<Binding> scope_;
  std::vector<LoopFrame> loops_;
  std::vector<OpenLoop> open_loops_;
  std::vector<std::pair<std::string, BufferInfo>> buffers_;
  /// Math calls already counted in the innermost enclosing block or loop body.
  std::vector<const ir::ExprNode*> root_calls_;
  std::vector<const ir::ExprNode*>* seen_calls_ = &root_calls_;
};

void NestWalker::Compile(const Expr& expr, size_t limit, Program* program) const {
  switch (expr->kind) {
    case ExprKind::kIntImm:
      program->push_back({ExprKind::kIntImm, expr->int_value});
      return;
    case ExprKind::kVar:
      for (size_t idx = limit; idx-- > 0;) {
        const Binding& binding = scope_[idx];
        if (binding.var != expr->name) continue;
        if (binding.is_loop) {
          program->push_back({ExprKind::kVar, static_cast<int64_t>(idx)});
        } else {
          Compile(binding.let_value, idx, program);  // in the scope below the let
        }
        return;
      }
      break;
    case ExprKind::kCast:
      if (!IsIntegerType(expr->operands[0]->type)) break;
      Compile(expr->operands[0], limit, program);
      return;
    case ExprKind::kSelect:
      for (const Expr& operand : expr->operands) Compile(operand, limit, program);
      program->push_back({ExprKind::kSelect});
      return;
    default:
      if (!IsArithmetic(expr->kind) || expr->operands.size() != 2) break;
      Compile(expr->operands[0], limit, program);
      Compile(expr->operands[1], limit, program);
      program->push_back({expr->kind});
      return;
  }
  program->push_back({ExprKind::kIntImm, 0, /*unknown=*/true});
}

std::optional<int64_t> NestWalker::Run(const Program& program) const {
  // An unknown operand makes the result unknown, except in the branch a select does not take.
  struct Value {
    int64_t value;
    bool known;
  };
  Value stack[64];
  std::vector<Value> spill;  // deeper expressions than any lowering makes today
  Value* values = stack;
  if (program.size() > 64) {
    spill.resize(program.size());
    values = spill.data();
  }
  size_t depth = 0;
  for (const Op& op : program) {
    if (op.unknown) {
      values[depth++] = {0, false};
      continue;
    }
    switch (op.kind) {
      case ExprKind::kIntImm:
        values[depth++] = {op.value, true};
        continue;
      case ExprKind::kVar:
        values[depth++] = {scope_[op.value].value, true};
        continue;
      case ExprKind::kSelect: {
        const Value on_false = values[--depth], on_true = values[--depth];
        const Value cond = values[depth - 1];
        values[depth - 1] = !cond.known ? cond : cond.value != 0 ? on_true : on_false;
        continue;
      }
      default:
        break;
    }
    const Value b = values[--depth];
    Value& a = values[depth - 1];
    if (!a.known || !b.known) {
      a.known = false;
      continue;
    }
    int64_t result = 0;
    bool known = true;
    switch (op.kind) {
      case ExprKind::kAdd:
        known = !__builtin_add_overflow(a.value, b.value, &result);
        break;
      case ExprKind::kSub:
        known = !__builtin_sub_overflow(a.value, b.value, &result);
        break;
      case ExprKind::kMul:
        known = !__builtin_mul_overflow(a.value, b.value, &result);
        break;
      case ExprKind::kDiv:
        known = b.value != 0;
        if (known) result = FloorDiv(a.value, b.value);
        break;
      case ExprKind::kMod:
        known = b.value != 0;
        if (known) result = a.value - FloorDiv(a.value, b.value) * b.value;
        break;
      case ExprKind::kMin:
        result = std::min(a.value, b.value);
        break;
      case ExprKind::kMax:
        result = std::max(a.value, b.value);
        break;
      case ExprKind::kLt:
        result = a.value < b.value ? 1 : 0;
        break;
      case ExprKind::kLe:
        result = a.value <= b.value ? 1 : 0;
        break;
      case ExprKind::kEq:
        result = a.value == b.value ? 1 : 0;
        break;
      case ExprKind::kAnd:
        result = (a.value != 0 && b.value != 0) ? 1 : 0;
        break;
      default:
        known = false;
        break;
    }
    a = {result, known};
  }
  if (depth != 1 || !values[0].known) return std::nullopt;
  return values[0].value;
}

void NestWalker::Visit(const Stmt& stmt, double weight) {
  switch (stmt->kind) {
    case StmtKind::kFor:
      VisitFor(stmt, weight);
      return;
    case StmtKind::kStore:
      RecordSite(weight, stmt.get(), nullptr);
      return;
    case StmtKind::kBlock: {
      std::vector<const ir::ExprNode*> block_calls;
      std::vector<const ir::ExprNode*>* const outer_calls = seen_calls_;
      seen_calls_ = &block_calls;
      for (const Stmt& child : stmt->body) Visit(child, weight);
      seen_calls_ = outer_calls;
      return;
    }
    case StmtKind::kIfThenElse: {
      summary_.branch_executions += weight;
      RecordSite(weight, nullptr, stmt->operands[0]);
      // Without profile data each side of a two-way branch is taken half of the time.
      const double branch_weight = stmt->body.size() > 1 ? 0.5 * weight : weight;
      for (const Stmt& child : stmt->body) {
        if (child != nullptr) Visit(child, branch_weight);
      }
      return;
    }
    case StmtKind::kAllocate: {
      const int element_bytes = ir::ScalarTypeBytes(stmt->alloc_type);
      summary_.allocate_bytes.push_back(stmt->alloc_size * element_bytes);
      buffers_.push_back({stmt->name, {false, stmt->alloc_size, element_bytes}});
      Visit(stmt->body[0], weight);
      buffers_.pop_back();
      return;
    }
    case StmtKind::kTileMatMul:
      RecordTileSite(weight, *stmt);
      return;
    case StmtKind::kLetStmt: {
      RecordSite(weight, nullptr, stmt->operands[0]);
      Binding binding;
      binding.var = stmt->name;
      binding.is_loop = false;
      binding.let_value = stmt->operands[0];
      scope_.push_back(std::move(binding));
      Visit(stmt->body[0], weight);
      scope_.pop_back();
      return;
    }
  }
}

void NestWalker::VisitFor(const Stmt& stmt, double weight) {
  const int64_t min = Eval(stmt->operands[0]).value_or(0);
  {
    StmtSummary bounds;
    std::vector<const ir::ExprNode*> bound_calls;
    CountOps(stmt->operands[0], &bounds, &bound_calls);
    CountOps(stmt->operands[1], &bounds, &bound_calls);
    summary_.overhead_int_ops += bounds.int_ops * weight;
  }
  const int64_t extent = std::max<int64_t>(0, Eval(stmt->operands[1]).value_or(1));
  summary_.num_loops[static_cast<int>(stmt->for_kind)] += 1;
  if (stmt->for_kind == ir::ForKind::kParallel) {
    summary_.max_parallel_extent = std::max(summary_.max_parallel_extent, extent);
  }
  Binding binding;
  binding.var = stmt->name;
  binding.value = min;
  scope_.push_back(std::move(binding));
  loops_.push_back({stmt->name, stmt->for_kind, extent});
  open_loops_.push_back({scope_.size() - 1, min});
  summary_.max_loop_depth = std::max(summary_.max_loop_depth, static_cast<int>(loops_.size()));
  std::vector<const ir::ExprNode*> body_calls;
  std::vector<const ir::ExprNode*>* const outer_calls = seen_calls_;
  seen_calls_ = &body_calls;
  Visit(stmt->body[0], weight * static_cast<double>(extent));
  seen_calls_ = outer_calls;
  open_loops_.pop_back();
  loops_.pop_back();
  scope_.pop_back();
}

Access NestWalker::MakeAccess(const std::string& buffer, const Expr& index,
                              ir::ScalarType value_type, bool is_store) {
  Access access;
  access.buffer = buffer;
  access.is_store = is_store;
  access.access_bytes = ir::ScalarTypeBytes(value_type);
  access.buffer_element_bytes = access.access_bytes;
  for (size_t idx = buffers_.size(); idx-- > 0;) {
    if (buffers_[idx].first != buffer) continue;
    access.is_global = buffers_[idx].second.is_global;
    access.buffer_elements = buffers_[idx].second.elements;
    access.buffer_element_bytes = buffers_[idx].second.element_bytes;
    break;
  }
  // Evaluated at three points per open loop: compiled once, run at each.
  Program program;
  Compile(index, scope_.size(), &program);
  const std::optional<int64_t> base = Run(program);
  access.evaluable = base.has_value();
  if (!access.evaluable) return access;
  for (size_t loop_idx = 0; loop_idx < open_loops_.size(); ++loop_idx) {
    Binding& binding = scope_[open_loops_[loop_idx].binding_idx];
    const int64_t min = open_loops_[loop_idx].min;
    binding.value = min + 1;
    const std::optional<int64_t> next = Run(program);
    binding.value = min + 2;
    const std::optional<int64_t> after = Run(program);
    binding.value = min;
    if (!next || !after) {
      access.evaluable = false;
      access.strides.clear();
      access.affine.clear();
      return access;
    }
    access.strides.push_back(*next - *base);
    access.affine.push_back(loops_[loop_idx].extent <= 2 || *after - *next == *next - *base);
  }
  return access;
}

void NestWalker::RecordSite(double weight, const ir::StmtNode* store, const Expr& expr) {
  StmtSummary site;
  site.loops = loops_;
  site.executions = weight;
  std::vector<const ir::ExprNode*> loads;
  if (store != nullptr) {
    const ir::StmtNode& stmt = *store;
    CountOps(stmt.operands[0], &site, seen_calls_);
    CountOps(stmt.operands[1], &site, seen_calls_);
    CollectLoads(stmt.operands[0], &loads);
    CollectLoads(stmt.operands[1], &loads);
  } else {
    CountOps(expr, &site, seen_calls_);
    CollectLoads(expr, &loads);
    if (loads.empty() && site.float_ops == 0) {
      // Pure index arithmetic (let-bound offsets, conditions) is overhead, not a site.
      summary_.overhead_int_ops += site.int_ops * weight;
      return;
    }
  }
  for (const ir::ExprNode* load : loads) {
    site.accesses.push_back(MakeAccess(load->name, load->operands[0], load->type, false));
  }
  if (store != nullptr) {
    site.is_store = true;
    site.accesses.push_back(
        MakeAccess(store->name, store->operands[0], store->operands[1]->type, true));
    site.is_global_store = site.accesses.back().is_global;
    site.accumulates = ReadsElement(store->operands[1], store->name, store->operands[0]);
  }
  summary_.stmts.push_back(std::move(site));
}

void NestWalker::RecordTileSite(double weight, const ir::StmtNode& stmt) {
  // One site per execution of the whole tile block: its multiply-adds (a 16 x 16 x 64-byte
  // product is 16 * 16 * 16 words, each 2 (bf16) or 4 (int8) multiply-adds), the A and B
  // tiles it reads and the C block it writes, as first-element accesses.
  const ir::TileMatMulArgs args = ir::GetTileMatMulArgs(stmt);
  const double per_word = ir::TileInstructionIsBF16(args.instruction) ? 2.0 : 4.0;
  StmtSummary site;
  site.loops = loops_;
  site.executions = weight;
  site.float_ops = 2.0 * per_word * 16 * 16 * 16 * static_cast<double>(args.k_steps) *
                   static_cast<double>(std::max<size_t>(args.b_taps.size(), 1)) *
                   static_cast<double>(args.a.size() * args.nr);
  for (const Expr& a : args.a) {
    site.accesses.push_back(MakeAccess(a->name, a->operands[0], a->type, false));
  }
  site.accesses.push_back(MakeAccess(args.b->name, args.b->operands[0], args.b->type, false));
  if (args.accumulate) {
    site.accesses.push_back(MakeAccess(args.c->name, args.c->operands[0], args.c->type, false));
  }
  site.is_store = true;
  site.accesses.push_back(MakeAccess(args.c->name, args.c->operands[0], args.c->type, true));
  summary_.stmts.push_back(std::move(site));
}

}  // namespace

NestSummary AnalyzeLoopNest(const ir::LoweredFunc& func) { return NestWalker(func).Run(func.body); }

int SerialDepth(const StmtSummary& stmt) {
  int depth = 0;
  for (const LoopFrame& loop : stmt.loops) {
    if (loop.kind == ir::ForKind::kSerial || loop.kind == ir::ForKind::kParallel) ++depth;
  }
  return depth;
}

int LevelStart(const StmtSummary& stmt, int level) {
  int seen = 0;
  for (int loop_idx = static_cast<int>(stmt.loops.size()) - 1; loop_idx >= 0; --loop_idx) {
    const ir::ForKind kind = stmt.loops[loop_idx].kind;
    if (kind != ir::ForKind::kSerial && kind != ir::ForKind::kParallel) continue;
    if (seen == level) return loop_idx + 1;
    ++seen;
  }
  return 0;
}

double TripCount(const StmtSummary& stmt, int begin, int end) {
  double trips = 1.0;
  for (int loop_idx = begin; loop_idx < end; ++loop_idx) {
    trips *= static_cast<double>(stmt.loops[loop_idx].extent);
  }
  return trips;
}

double RegisterReuse(const StmtSummary& stmt, const Access& access) {
  if (!access.evaluable) return 1.0;
  double reuse = 1.0;
  for (size_t loop_idx = 0; loop_idx < stmt.loops.size(); ++loop_idx) {
    const ir::ForKind kind = stmt.loops[loop_idx].kind;
    if (kind != ir::ForKind::kUnrolled && kind != ir::ForKind::kVectorized) continue;
    if (access.strides[loop_idx] == 0) reuse *= std::max<double>(1, stmt.loops[loop_idx].extent);
  }
  return reuse;
}

namespace {

/// Distinct cache lines of one access while loops [first_loop, end) run once.
double AccessLines(const StmtSummary& stmt, const Access& access, int first_loop) {
  const double element_bytes = access.buffer_element_bytes;
  const int64_t line_elements = std::max<int64_t>(1, kLineBytes / access.buffer_element_bytes);
  // A wide load reads several consecutive elements (an i32 word of u8 data: 4).
  const int64_t width = std::max(1, access.access_bytes / access.buffer_element_bytes);
  const int num_loops = static_cast<int>(stmt.loops.size());
  double positions = 1.0, span = 0.0;
  int64_t min_stride = 0;
  for (int loop_idx = first_loop; loop_idx < num_loops; ++loop_idx) {
    const double extent = static_cast<double>(stmt.loops[loop_idx].extent);
    if (extent <= 1) continue;
    // A gather's index is unknown: assume every position lands on its own line.
    const int64_t stride = access.evaluable ? std::llabs(access.strides[loop_idx]) : line_elements;
    if (stride == 0) continue;
    positions *= extent;
    span += static_cast<double>(stride) * (extent - 1);
    min_stride = min_stride == 0 ? stride : std::min(min_stride, stride);
  }
  if (access.evaluable) positions = std::min(positions, span + 1);
  // Bytes of line each position costs: a dense walk shares lines between neighbours.
  const double step_bytes = static_cast<double>(std::max(min_stride, width)) * element_bytes;
  const double bytes_per_position =
      std::max(std::min(step_bytes, static_cast<double>(kLineBytes)), width * element_bytes);
  double lines = positions * bytes_per_position / static_cast<double>(kLineBytes);
  if (access.buffer_elements > 0) {
    lines = std::min(lines, std::ceil(static_cast<double>(access.buffer_elements) * element_bytes /
                                      static_cast<double>(kLineBytes)));
  }
  return std::max(1.0, std::ceil(lines));
}

}  // namespace

double FootprintBytes(const StmtSummary& stmt, int first_loop) {
  // Accesses of one buffer overlap (acc[i] read and written): take the largest per buffer. A
  // statement touches a handful of buffers: a linear scan beats a hash map here (this runs for
  // every scored schedule). The line counts are whole numbers, so the sum is exact in any order.
  std::vector<std::pair<const std::string*, double>> lines_per_buffer;
  lines_per_buffer.reserve(stmt.accesses.size());
  for (const Access& access : stmt.accesses) {
    const double lines = AccessLines(stmt, access, first_loop);
    auto same = std::find_if(lines_per_buffer.begin(), lines_per_buffer.end(),
                             [&](const auto& entry) { return *entry.first == access.buffer; });
    if (same == lines_per_buffer.end()) {
      lines_per_buffer.emplace_back(&access.buffer, lines);
    } else {
      same->second = std::max(same->second, lines);
    }
  }
  double total_lines = 0;
  for (const auto& [buffer, lines] : lines_per_buffer) total_lines += lines;
  return total_lines * static_cast<double>(kLineBytes);
}

}  // namespace gtco::costmodel
