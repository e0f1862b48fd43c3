// Epilogue lowering: element-wise ops to IR and broadcast index math.
#include "common/schedule/epilogue.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/ir/conv.h"
#include "common/schedule/lower_util.h"
#include "common/util/status.h"

namespace gtco::schedule {
namespace {

using ir::Expr;
using ir::MakeFloat;
using ir::MakeInt;

absl::Status CheckOperands(const ir::Workload& w) {
  for (size_t instr_idx = 0; instr_idx < w.epilogue.size(); ++instr_idx) {
    const ir::EwInstr& instr = w.epilogue[instr_idx];
    if (static_cast<int>(instr.args.size()) != ir::EwOpArity(instr.op)) {
      return absl::InvalidArgumentError(absl::StrCat("epilogue instruction ", instr_idx, " (",
                                                     ir::EwOpName(instr.op), ") has ",
                                                     instr.args.size(), " operands"));
    }
    for (const ir::Operand& arg : instr.args) {
      const bool bad_input = arg.kind == ir::Operand::Kind::kInput &&
                             (arg.index < 0 || arg.index >= static_cast<int>(w.inputs.size()));
      const bool bad_value = arg.kind == ir::Operand::Kind::kValue &&
                             (arg.index < 0 || arg.index >= static_cast<int>(instr_idx));
      if (bad_input || bad_value) {
        return absl::InvalidArgumentError(absl::StrCat("epilogue instruction ", instr_idx,
                                                       " refers to a missing ",
                                                       bad_input ? "input " : "value ", arg.index));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

bool AlignToOutput(const std::vector<int64_t>& shape, const std::vector<int64_t>& out_shape,
                   std::vector<int64_t>* aligned) {
  const size_t rank = out_shape.size();
  std::vector<int64_t> trimmed = shape;
  while (trimmed.size() > rank) {
    if (trimmed.front() != 1) return false;
    trimmed.erase(trimmed.begin());
  }
  aligned->assign(rank - trimmed.size(), 1);
  aligned->insert(aligned->end(), trimmed.begin(), trimmed.end());
  for (size_t dim = 0; dim < rank; ++dim) {
    if ((*aligned)[dim] != 1 && (*aligned)[dim] != out_shape[dim]) return false;
  }
  return true;
}

absl::StatusOr<EpilogueBuilder> EpilogueBuilder::Create(const ir::Workload& w) {
  std::vector<std::vector<int64_t>> input_shapes;
  for (const ir::TensorDesc& input : w.inputs) input_shapes.push_back(input.shape);
  return Create(w, w.output.shape, std::move(input_shapes));
}

absl::StatusOr<EpilogueBuilder> EpilogueBuilder::Create(
    const ir::Workload& w, std::vector<int64_t> out_shape,
    std::vector<std::vector<int64_t>> input_shapes) {
  GTCO_RETURN_IF_ERROR(CheckOperands(w));
  if (out_shape.empty()) out_shape.push_back(1);
  std::vector<bool> used(w.inputs.size(), false);
  for (const ir::EwInstr& instr : w.epilogue) {
    for (const ir::Operand& arg : instr.args) {
      if (arg.kind == ir::Operand::Kind::kInput) used[arg.index] = true;
    }
  }
  std::vector<std::vector<int64_t>> aligned_shapes(input_shapes.size());
  for (size_t input_idx = 0; input_idx < input_shapes.size(); ++input_idx) {
    if (!used[input_idx]) continue;
    if (!AlignToOutput(input_shapes[input_idx], out_shape, &aligned_shapes[input_idx])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "epilogue input ", input_idx, " of shape [", absl::StrJoin(input_shapes[input_idx], ","),
          "] does not broadcast to the output shape [", absl::StrJoin(out_shape, ","), "]"));
    }
  }
  return EpilogueBuilder(&w, std::move(out_shape), std::move(aligned_shapes));
}

Expr EpilogueBuilder::InputIndex(int input_idx, const Expr& row, const Expr& last) const {
  const std::vector<int64_t>& shape = input_shapes_[input_idx];
  const size_t rank = out_shape_.size();
  Expr index = shape[rank - 1] == 1 ? MakeInt(0) : last;
  // Leading dims: dim d's coordinate is (row / prod(out[d+1..rank-2])) % out[d]. When the input
  // matches the output on a suffix of the leading dims and is 1 before it, one modulo suffices.
  size_t suffix_begin = rank - 1;
  while (suffix_begin > 0 && shape[suffix_begin - 1] == out_shape_[suffix_begin - 1]) {
    --suffix_begin;
  }
  bool ones_before_suffix = true;
  for (size_t dim = 0; dim < suffix_begin; ++dim) ones_before_suffix &= shape[dim] == 1;
  if (ones_before_suffix) {
    if (suffix_begin == rank - 1) return index;
    int64_t suffix_rows = 1;
    for (size_t dim = suffix_begin; dim + 1 < rank; ++dim) suffix_rows *= out_shape_[dim];
    const Expr local_row = suffix_begin == 0 ? row : row % MakeInt(suffix_rows);
    return local_row * MakeInt(shape[rank - 1]) + index;
  }
  int64_t out_stride = 1;  // rows spanned by one step of dim `dim` in the output
  int64_t in_stride = shape[rank - 1];
  for (size_t dim = rank - 1; dim-- > 0;) {
    if (shape[dim] != 1) {
      const Expr coord = (row / MakeInt(out_stride)) % MakeInt(out_shape_[dim]);
      index = index + coord * MakeInt(in_stride);
    }
    out_stride *= out_shape_[dim];
    in_stride *= shape[dim];
  }
  return index;
}

Expr EpilogueBuilder::Apply(const Expr& acc, const Expr& row, const Expr& last) const {
  std::vector<Expr> values;
  for (const ir::EwInstr& instr : workload_->epilogue) {
    std::vector<Expr> args;
    for (const ir::Operand& arg : instr.args) {
      switch (arg.kind) {
        case ir::Operand::Kind::kAcc:
          args.push_back(acc);
          break;
        case ir::Operand::Kind::kConst:
          args.push_back(MakeFloat(arg.value));
          break;
        case ir::Operand::Kind::kValue:
          args.push_back(values[arg.index]);
          break;
        case ir::Operand::Kind::kInput:
          args.push_back(ir::MakeLoad(InputName(arg.index), InputIndex(arg.index, row, last)));
          break;
      }
    }
    values.push_back(LowerEwOp(instr.op, args[0], args.size() > 1 ? args[1] : args[0]));
  }
  return values.empty() ? acc : values.back();
}

Expr LowerEwOp(ir::EwOp op, const Expr& a, const Expr& b) {
  using ir::EwOp;
  using ir::ExprKind;
  switch (op) {
    case EwOp::kAdd:
      return ir::MakeBinary(ExprKind::kAdd, a, b);
    case EwOp::kSub:
      return ir::MakeBinary(ExprKind::kSub, a, b);
    case EwOp::kMul:
      return ir::MakeBinary(ExprKind::kMul, a, b);
    case EwOp::kDiv:
      return ir::MakeBinary(ExprKind::kDiv, a, b);
    case EwOp::kMax:
      return ir::Max(a, b);
    case EwOp::kMin:
      return ir::Min(a, b);
    case EwOp::kPow:
      // A constant exponent of 1 to 4 (GELU's tanh form cubes its input) as multiplications:
      // the pow call cost GPT-Neo's FFN matmul 45 % of its time in its epilogue.
      if (b->kind == ExprKind::kFloatImm) {
        const double exponent = b->float_value;
        if (exponent == 1.0) return a;
        if (exponent == 2.0) return ir::MakeBinary(ExprKind::kMul, a, a);
        if (exponent == 3.0) {
          return ir::MakeBinary(ExprKind::kMul, ir::MakeBinary(ExprKind::kMul, a, a), a);
        }
        if (exponent == 4.0) {
          const Expr square = ir::MakeBinary(ExprKind::kMul, a, a);
          return ir::MakeBinary(ExprKind::kMul, square, square);
        }
      }
      return ir::MakeCall("pow", {a, b});
    case EwOp::kRelu:
      return ir::Max(a, MakeFloat(0.0));
    case EwOp::kSigmoid:
      return ir::MakeCall("sigmoid", {a});
    case EwOp::kTanh:
      return ir::MakeCall("tanh", {a});
    case EwOp::kErf:
      return ir::MakeCall("erf", {a});
    case EwOp::kSqrt:
      return ir::MakeCall("sqrt", {a});
    case EwOp::kNeg:
      return ir::MakeBinary(ExprKind::kMul, a, MakeFloat(-1.0));
    case EwOp::kExp:
      return ir::MakeCall("exp", {a});
    case EwOp::kCopy:
      return a;
  }
  return a;
}

absl::StatusOr<std::vector<int64_t>> ConvEpilogueInputShape(const ir::Workload& w, size_t index) {
  const std::vector<int64_t> out4 = ir::ConvOutShape(w.conv);
  const std::vector<int64_t>& shape = w.inputs.at(index).shape;
  std::vector<int64_t> aligned;
  if (!AlignToOutput(shape, out4, &aligned)) {
    return absl::InvalidArgumentError(absl::StrCat("conv epilogue input ", index, " of shape [",
                                                   absl::StrJoin(shape, ","),
                                                   "] does not broadcast to the output"));
  }
  const bool full = aligned[2] == out4[2] && aligned[3] == out4[3];
  const bool none = aligned[2] == 1 && aligned[3] == 1;
  if (!full && !none) {
    return absl::InvalidArgumentError(absl::StrCat(
        "conv epilogue input ", index, " of shape [", absl::StrJoin(shape, ","),
        "] broadcasts over one spatial dim only; the conv kernels need both or neither"));
  }
  return std::vector<int64_t>{aligned[0], aligned[1], full ? out4[2] * out4[3] : 1};
}

absl::StatusOr<EpilogueBuilder> ConvEpilogue(const ir::Workload& w) {
  const ir::ConvParams& p = w.conv;
  const int64_t spatial = ir::ConvOutH(p) * ir::ConvOutW(p);
  std::vector<std::vector<int64_t>> shapes;
  for (size_t index = 0; index < w.inputs.size(); ++index) {
    if (static_cast<int>(index) < w.num_anchor_inputs) {
      shapes.push_back({1});  // anchor inputs are read by the kernel, not the epilogue
      continue;
    }
    GTCO_ASSIGN_OR_RETURN(std::vector<int64_t> view_shape, ConvEpilogueInputShape(w, index));
    shapes.push_back(std::move(view_shape));
  }
  return EpilogueBuilder::Create(w, {p.batch, p.out_channels, spatial}, std::move(shapes));
}

}  // namespace gtco::schedule
