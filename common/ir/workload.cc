// Workload: canonical text, parsing, key, cost figures and validation.
#include "common/ir/workload.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/ir/attention.h"
#include "common/ir/conv.h"
#include "common/ir/params_text.h"
#include "common/ir/pool.h"
#include "common/util/hash.h"
#include "common/util/status.h"

namespace gtco::ir {
namespace {

constexpr const char* kHeader = "gtco-workload v1";

struct NamedDType {
  DType dtype;
  const char* name;
  int64_t bytes;
};
constexpr NamedDType kDTypes[] = {{DType::kF32, "f32", 4},   {DType::kF16, "f16", 2},
                                  {DType::kBF16, "bf16", 2}, {DType::kI8, "i8", 1},
                                  {DType::kI32, "i32", 4},   {DType::kI64, "i64", 8},
                                  {DType::kU8, "u8", 1}};

struct NamedAnchor {
  AnchorKind kind;
  const char* name;
  int num_inputs;
};
constexpr NamedAnchor kAnchors[] = {{AnchorKind::kNone, "none", 0},
                                    {AnchorKind::kMatMul, "matmul", 2},
                                    {AnchorKind::kSoftmax, "softmax", 1},
                                    {AnchorKind::kLayerNorm, "layernorm", 3},
                                    {AnchorKind::kReduceMean, "reduce_mean", 1},
                                    {AnchorKind::kAttention, "attention", 3},
                                    {AnchorKind::kConv, "conv", 2},
                                    {AnchorKind::kPool, "pool", 1}};

struct NamedEwOp {
  EwOp op;
  const char* name;
  int arity;
};
constexpr NamedEwOp kEwOps[] = {
    {EwOp::kAdd, "add", 2},   {EwOp::kSub, "sub", 2},   {EwOp::kMul, "mul", 2},
    {EwOp::kDiv, "div", 2},   {EwOp::kPow, "pow", 2},   {EwOp::kMax, "max", 2},
    {EwOp::kMin, "min", 2},   {EwOp::kRelu, "relu", 1}, {EwOp::kSigmoid, "sigmoid", 1},
    {EwOp::kTanh, "tanh", 1}, {EwOp::kErf, "erf", 1},   {EwOp::kSqrt, "sqrt", 1},
    {EwOp::kNeg, "neg", 1},   {EwOp::kExp, "exp", 1},   {EwOp::kCopy, "copy", 1}};

int AnchorInputCount(AnchorKind kind) {
  for (const auto& entry : kAnchors) {
    if (entry.kind == kind) return entry.num_inputs;
  }
  return 0;
}

/// Exact text of a float: C99 hex float ("0x1.8p+1"), or "inf"/"-inf"/"nan".
std::string FloatText(float value) {
  char buffer[48];
  std::snprintf(buffer, sizeof(buffer), "%a", static_cast<double>(value));
  return buffer;
}

absl::StatusOr<float> ParseFloatText(const std::string& text) {
  if (text.empty()) return absl::InvalidArgumentError("empty float in workload text");
  char* end = nullptr;
  float value = std::strtof(text.c_str(), &end);
  if (end != text.c_str() + text.size()) {
    return absl::InvalidArgumentError(absl::StrCat("bad float '", text, "' in workload text"));
  }
  return value;
}

using internal::ShapeText;

std::string OperandText(const Operand& operand) {
  switch (operand.kind) {
    case Operand::Kind::kAcc:
      return "acc";
    case Operand::Kind::kInput:
      return absl::StrCat("in:", operand.index);
    case Operand::Kind::kConst:
      return absl::StrCat("c:", FloatText(operand.value));
    case Operand::Kind::kValue:
      return absl::StrCat("v:", operand.index);
  }
  return "?";
}

std::string TensorText(const char* tag, const TensorDesc& tensor) {
  return absl::StrCat(tag, " ", DTypeName(tensor.dtype), " ", ShapeText(tensor.shape), "\n");
}

// ---- parsing -------------------------------------------------------------------------------

absl::Status ParseError(const std::string& what, const std::string& line) {
  return absl::InvalidArgumentError(
      absl::StrCat("malformed workload text: ", what, " in '", line, "'"));
}

absl::StatusOr<int64_t> ParseInt(const std::string& text, const std::string& line) {
  int64_t value = 0;
  if (!absl::SimpleAtoi(text, &value)) return ParseError("bad integer", line);
  return value;
}

/// Parses "key=value" tokens after the first word of `line` into `fields` (in order).
absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ParseFields(
    const std::vector<std::string>& words, const std::string& line) {
  std::vector<std::pair<std::string, std::string>> fields;
  for (size_t i = 1; i < words.size(); ++i) {
    std::vector<std::string> parts = absl::StrSplit(words[i], absl::MaxSplits('=', 1));
    if (parts.size() != 2) return ParseError("expected key=value", line);
    fields.emplace_back(parts[0], parts[1]);
  }
  return fields;
}

absl::StatusOr<std::vector<int64_t>> ParseShape(const std::string& text, const std::string& line) {
  if (text.size() < 2 || text.front() != '[' || text.back() != ']') {
    return ParseError("bad shape", line);
  }
  std::vector<int64_t> shape;
  std::string body = text.substr(1, text.size() - 2);
  if (body.empty()) return shape;
  for (const auto& dim : absl::StrSplit(body, ',')) {
    GTCO_ASSIGN_OR_RETURN(int64_t value, ParseInt(std::string(dim), line));
    shape.push_back(value);
  }
  return shape;
}

absl::StatusOr<TensorDesc> ParseTensor(const std::vector<std::string>& words,
                                       const std::string& line) {
  if (words.size() != 3) return ParseError("expected '<tag> <dtype> [dims]'", line);
  TensorDesc tensor;
  GTCO_ASSIGN_OR_RETURN(tensor.dtype, ParseDType(words[1]));
  GTCO_ASSIGN_OR_RETURN(tensor.shape, ParseShape(words[2], line));
  return tensor;
}

absl::StatusOr<Operand> ParseOperand(const std::string& text, const std::string& line) {
  Operand operand;
  if (text == "acc") return operand;
  std::vector<std::string> parts = absl::StrSplit(text, absl::MaxSplits(':', 1));
  if (parts.size() != 2) return ParseError("bad operand", line);
  if (parts[0] == "c") {
    operand.kind = Operand::Kind::kConst;
    GTCO_ASSIGN_OR_RETURN(operand.value, ParseFloatText(parts[1]));
    return operand;
  }
  if (parts[0] != "in" && parts[0] != "v") return ParseError("bad operand kind", line);
  operand.kind = parts[0] == "in" ? Operand::Kind::kInput : Operand::Kind::kValue;
  GTCO_ASSIGN_OR_RETURN(int64_t index, ParseInt(parts[1], line));
  operand.index = static_cast<int>(index);
  return operand;
}

absl::StatusOr<EwInstr> ParseInstr(const std::vector<std::string>& words, const std::string& line) {
  if (words.size() < 2) return ParseError("expected 'ew <op> <operands>'", line);
  EwInstr instr;
  bool found = false;
  for (const auto& entry : kEwOps) {
    if (words[1] == entry.name) {
      instr.op = entry.op;
      found = true;
    }
  }
  if (!found) return ParseError("unknown element-wise op", line);
  for (size_t i = 2; i < words.size(); ++i) {
    GTCO_ASSIGN_OR_RETURN(Operand operand, ParseOperand(words[i], line));
    instr.args.push_back(operand);
  }
  return instr;
}

absl::Status ParseMatMulLine(const std::vector<std::string>& words, const std::string& line,
                             MatMulParams& params) {
  GTCO_ASSIGN_OR_RETURN(auto fields, ParseFields(words, line));
  for (const auto& [key, text] : fields) {
    GTCO_ASSIGN_OR_RETURN(int64_t value, ParseInt(text, line));
    if (key == "batch")
      params.batch = value;
    else if (key == "m")
      params.m = value;
    else if (key == "n")
      params.n = value;
    else if (key == "k")
      params.k = value;
    else if (key == "a_batched")
      params.a_batched = value != 0;
    else if (key == "b_batched")
      params.b_batched = value != 0;
    else if (key == "trans_a")
      params.trans_a = value != 0;
    else if (key == "trans_b")
      params.trans_b = value != 0;
    else if (key == "a_zero_point")
      params.a_zero_point = static_cast<int32_t>(value);
    else if (key == "b_zero_point")
      params.b_zero_point = static_cast<int32_t>(value);
    else if (key == "a_zero_point_input")
      params.a_zero_point_input = value != 0;
    else
      return ParseError("unknown matmul field", line);
  }
  return absl::OkStatus();
}

absl::Status ParseRowLine(const std::vector<std::string>& words, const std::string& line,
                          RowParams& params) {
  GTCO_ASSIGN_OR_RETURN(auto fields, ParseFields(words, line));
  for (const auto& [key, text] : fields) {
    if (key == "epsilon") {
      GTCO_ASSIGN_OR_RETURN(params.epsilon, ParseFloatText(text));
      continue;
    }
    GTCO_ASSIGN_OR_RETURN(int64_t value, ParseInt(text, line));
    if (key == "rows")
      params.rows = value;
    else if (key == "cols")
      params.cols = value;
    else
      return ParseError("unknown row field", line);
  }
  return absl::OkStatus();
}

/// Applies one non-header line of canonical text to `workload`.
absl::Status ParseLine(const std::string& line, Workload& workload) {
  std::vector<std::string> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
  if (words.empty()) return absl::OkStatus();
  const std::string& tag = words[0];
  if (tag == "anchor") {
    if (words.size() != 2) return ParseError("expected 'anchor <kind>'", line);
    for (const auto& entry : kAnchors) {
      if (words[1] == entry.name) {
        workload.anchor = entry.kind;
        return absl::OkStatus();
      }
    }
    return ParseError("unknown anchor", line);
  }
  if (tag == "matmul") return ParseMatMulLine(words, line, workload.matmul);
  if (tag == "row") return ParseRowLine(words, line, workload.row);
  if (tag == "attention") return ParseAttentionParamsLine(line, workload.attention);
  if (tag == "conv") return ParseConvParamsLine(line, workload.conv);
  if (tag == "pool") return ParsePoolParamsLine(line, workload.pool);
  if (tag == "anchor_inputs") {
    if (words.size() != 2) return ParseError("expected 'anchor_inputs <n>'", line);
    GTCO_ASSIGN_OR_RETURN(int64_t count, ParseInt(words[1], line));
    workload.num_anchor_inputs = static_cast<int>(count);
    return absl::OkStatus();
  }
  if (tag == "input") {
    GTCO_ASSIGN_OR_RETURN(TensorDesc tensor, ParseTensor(words, line));
    workload.inputs.push_back(std::move(tensor));
    return absl::OkStatus();
  }
  if (tag == "output") {
    GTCO_ASSIGN_OR_RETURN(workload.output, ParseTensor(words, line));
    return absl::OkStatus();
  }
  if (tag == "ew") {
    GTCO_ASSIGN_OR_RETURN(EwInstr instr, ParseInstr(words, line));
    workload.epilogue.push_back(std::move(instr));
    return absl::OkStatus();
  }
  return ParseError("unknown line", line);
}

// ---- validation ----------------------------------------------------------------------------

absl::Status ExpectShape(const TensorDesc& tensor, const std::vector<int64_t>& expected,
                         const std::string& what) {
  if (tensor.shape == expected) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("workload ", what, " has shape ",
                                                 ShapeText(tensor.shape), ", expected ",
                                                 ShapeText(expected)));
}

bool BroadcastsTo(const std::vector<int64_t>& from, const std::vector<int64_t>& to) {
  if (from.size() > to.size()) return false;
  size_t offset = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i] != 1 && from[i] != to[offset + i]) return false;
  }
  return true;
}

absl::Status ValidateAnchorShapes(const Workload& w) {
  const auto& inputs = w.inputs;
  if (w.anchor == AnchorKind::kMatMul) {
    const MatMulParams& p = w.matmul;
    if (p.batch <= 0 || p.m <= 0 || p.n <= 0 || p.k <= 0) {
      return absl::InvalidArgumentError("workload matmul sizes must be positive");
    }
    std::vector<int64_t> a = {p.a_batched ? p.batch : 1, p.trans_a ? p.k : p.m,
                              p.trans_a ? p.m : p.k};
    std::vector<int64_t> b = {p.b_batched ? p.batch : 1, p.trans_b ? p.n : p.k,
                              p.trans_b ? p.k : p.n};
    GTCO_RETURN_IF_ERROR(ExpectShape(inputs[0], a, "matmul input A"));
    GTCO_RETURN_IF_ERROR(ExpectShape(inputs[1], b, "matmul input B"));
    return ExpectShape(w.output, {p.batch, p.m, p.n}, "matmul output");
  }
  if (w.anchor == AnchorKind::kAttention) return ValidateAttentionShapes(w);
  if (w.anchor == AnchorKind::kConv) return ValidateConvShapes(w);
  if (w.anchor == AnchorKind::kPool) return ValidatePoolShapes(w);
  if (w.anchor == AnchorKind::kNone) {
    for (int64_t dim : w.output.shape) {
      if (dim <= 0) return absl::InvalidArgumentError("workload output dims must be positive");
    }
    if (w.epilogue.empty()) {
      return absl::InvalidArgumentError("workload without anchor needs an epilogue");
    }
    return absl::OkStatus();
  }
  const RowParams& r = w.row;
  if (r.rows <= 0 || r.cols <= 0) {
    return absl::InvalidArgumentError("workload rows and cols must be positive");
  }
  GTCO_RETURN_IF_ERROR(ExpectShape(inputs[0], {r.rows, r.cols}, "input X"));
  if (w.anchor == AnchorKind::kLayerNorm) {
    GTCO_RETURN_IF_ERROR(ExpectShape(inputs[1], {r.cols}, "layernorm scale"));
    GTCO_RETURN_IF_ERROR(ExpectShape(inputs[2], {r.cols}, "layernorm bias"));
  }
  int64_t out_cols = w.anchor == AnchorKind::kReduceMean ? 1 : r.cols;
  return ExpectShape(w.output, {r.rows, out_cols}, "output");
}

/// Size limits of a valid workload; they keep every element, byte and flop count in int64
/// (2 * batch*m*n*k <= 2^61 when the three matmul tensors are within kMaxTensorElements).
constexpr int64_t kMaxTensorElements = int64_t{1} << 40;
constexpr size_t kMaxEpilogueLength = size_t{1} << 16;  ///< instructions, and extra inputs

absl::Status ValidateSizes(const Workload& w) {
  if (w.epilogue.size() > kMaxEpilogueLength || w.inputs.size() > kMaxEpilogueLength) {
    return absl::InvalidArgumentError(
        absl::StrCat("workload has ", w.epilogue.size(), " epilogue instructions and ",
                     w.inputs.size(), " inputs; at most ", kMaxEpilogueLength, " each"));
  }
  auto check = [](const TensorDesc& tensor, const std::string& what) {
    int64_t elements = 1;
    for (int64_t dim : tensor.shape) {
      if (dim <= 0 || dim > kMaxTensorElements / elements) {
        return absl::InvalidArgumentError(
            absl::StrCat("workload ", what, " of shape ", ShapeText(tensor.shape),
                         " has a non-positive dim or more than 2^40 elements"));
      }
      elements *= dim;
    }
    return absl::OkStatus();
  };
  for (size_t i = 0; i < w.inputs.size(); ++i) {
    GTCO_RETURN_IF_ERROR(check(w.inputs[i], absl::StrCat("input ", i)));
  }
  return check(w.output, "output");
}

bool IsInt8(DType dtype) { return dtype == DType::kI8 || dtype == DType::kU8; }

/// The zero point of an integer matmul input must be a value of the input's dtype.
absl::Status CheckZeroPoint(const char* name, int32_t zero_point, DType dtype) {
  const int32_t lo = dtype == DType::kU8 ? 0 : -128, hi = dtype == DType::kU8 ? 255 : 127;
  if (zero_point >= lo && zero_point <= hi) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("matmul ", name, " ", zero_point,
                                                 " is outside the range of ", DTypeName(dtype)));
}

/// Element types: see the header's table for matmuls; everything else computes in f32.
absl::Status ValidateDTypes(const Workload& w) {
  auto dtype_error = [&](const std::string& what) {
    std::string types;
    for (const TensorDesc& input : w.inputs) absl::StrAppend(&types, DTypeName(input.dtype), ",");
    return absl::InvalidArgumentError(absl::StrCat("workload ", AnchorKindName(w.anchor), " (",
                                                   types, " -> ", DTypeName(w.output.dtype),
                                                   "): ", what));
  };
  size_t first_f32 = 0;
  if (w.anchor == AnchorKind::kMatMul && w.inputs.size() >= 2) {
    const DType a = w.inputs[0].dtype, b = w.inputs[1].dtype, out = w.output.dtype;
    const MatMulParams& p = w.matmul;
    first_f32 = 2;
    if (IsInt8(a) && IsInt8(b)) {
      if (out != DType::kI32 && out != DType::kF32) {
        return dtype_error("integer matmuls produce i32 or f32");
      }
      if (out == DType::kI32 && !w.epilogue.empty()) {
        return dtype_error("epilogues need an f32 output");
      }
      if (p.a_zero_point_input) {
        if (p.a_zero_point != 0) {
          return dtype_error("a_zero_point must be 0 when the zero point is an input");
        }
        if (w.inputs.size() < 3 || w.inputs[2].dtype != a || w.inputs[2].NumElements() != 1) {
          return dtype_error("the zero-point input must be one element of A's dtype");
        }
        first_f32 = 3;
      }
      GTCO_RETURN_IF_ERROR(CheckZeroPoint("a_zero_point", p.a_zero_point, a));
      GTCO_RETURN_IF_ERROR(CheckZeroPoint("b_zero_point", p.b_zero_point, b));
    } else if (p.a_zero_point != 0 || p.b_zero_point != 0 || p.a_zero_point_input) {
      return dtype_error("zero points are only allowed for integer matmuls");
    } else if (a == DType::kBF16 && b == DType::kBF16) {
      if (out != DType::kF32 && out != DType::kBF16) {
        return dtype_error("bf16 matmuls produce f32 or bf16");
      }
      if (out == DType::kBF16 && !w.epilogue.empty()) {
        return dtype_error("epilogues need an f32 output");
      }
    } else if (a == DType::kF16 && b == DType::kF16) {
      if (out != DType::kF32 && out != DType::kF16) {
        return dtype_error("f16 matmuls produce f32 or f16");
      }
      if (out == DType::kF16 && !w.epilogue.empty()) {
        return dtype_error("epilogues need an f32 output");
      }
    } else if (a != DType::kF32 || b != DType::kF32 || out != DType::kF32) {
      return dtype_error("unsupported matmul element types");
    }
  } else if (w.anchor == AnchorKind::kAttention && w.inputs.size() >= 3) {
    first_f32 = 3;
    GTCO_RETURN_IF_ERROR(ValidateAttentionDTypes(w));
  } else if (w.anchor == AnchorKind::kConv && w.conv.x_pairs && w.inputs.size() >= 2) {
    first_f32 = 2;
    if (w.inputs[0].dtype != DType::kBF16 || w.inputs[1].dtype != DType::kBF16 ||
        w.output.dtype != DType::kF32) {
      return dtype_error("a conv in the pair layout takes bf16 X and W and produces f32");
    }
  } else if (w.output.dtype != DType::kF32) {
    return dtype_error("only f32 is supported here");
  }
  for (size_t i = first_f32; i < w.inputs.size(); ++i) {
    if (w.inputs[i].dtype != DType::kF32) {
      return dtype_error(absl::StrCat("input ", i, " must be f32"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateOperand(const Workload& w, const Operand& operand, size_t instr_index) {
  switch (operand.kind) {
    case Operand::Kind::kAcc:
      if (w.anchor == AnchorKind::kNone) {
        return absl::InvalidArgumentError("operand acc used in a workload without anchor");
      }
      return absl::OkStatus();
    case Operand::Kind::kInput:
      if (operand.index < w.num_anchor_inputs ||
          operand.index >= static_cast<int>(w.inputs.size())) {
        return absl::InvalidArgumentError(
            absl::StrCat("epilogue input index ", operand.index, " out of range"));
      }
      return absl::OkStatus();
    case Operand::Kind::kValue:
      if (operand.index < 0 || operand.index >= static_cast<int>(instr_index)) {
        return absl::InvalidArgumentError(absl::StrCat("epilogue value index ", operand.index,
                                                       " must name an earlier instruction"));
      }
      return absl::OkStatus();
    case Operand::Kind::kConst:
      return absl::OkStatus();
  }
  return absl::InvalidArgumentError("bad operand kind");
}

}  // namespace

const char* DTypeName(DType dtype) {
  for (const auto& entry : kDTypes) {
    if (entry.dtype == dtype) return entry.name;
  }
  return "?";
}

int64_t DTypeSize(DType dtype) {
  for (const auto& entry : kDTypes) {
    if (entry.dtype == dtype) return entry.bytes;
  }
  return 4;
}

bool IsIntegerDType(DType dtype) {
  return dtype == DType::kU8 || dtype == DType::kI8 || dtype == DType::kI32 || dtype == DType::kI64;
}

bool IsLowPrecisionMatMul(const Workload& w) {
  if (w.anchor != AnchorKind::kMatMul || w.inputs.size() < 2) return false;
  return w.inputs[0].dtype != DType::kF32 || w.inputs[1].dtype != DType::kF32;
}

absl::StatusOr<DType> ParseDType(const std::string& name) {
  for (const auto& entry : kDTypes) {
    if (name == entry.name) return entry.dtype;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown dtype '", name, "'"));
}

const char* AnchorKindName(AnchorKind kind) {
  for (const auto& entry : kAnchors) {
    if (entry.kind == kind) return entry.name;
  }
  return "?";
}

const char* EwOpName(EwOp op) {
  for (const auto& entry : kEwOps) {
    if (entry.op == op) return entry.name;
  }
  return "?";
}

int EwOpArity(EwOp op) {
  for (const auto& entry : kEwOps) {
    if (entry.op == op) return entry.arity;
  }
  return 0;
}

float EvalEwOp(EwOp op, float a, float b) {
  switch (op) {
    case EwOp::kAdd:
      return a + b;
    case EwOp::kSub:
      return a - b;
    case EwOp::kMul:
      return a * b;
    case EwOp::kDiv:
      return a / b;
    case EwOp::kPow:
      return std::pow(a, b);
    case EwOp::kMax:
      return a > b ? a : b;
    case EwOp::kMin:
      return a < b ? a : b;
    case EwOp::kRelu:
      return a > 0.0f ? a : 0.0f;
    case EwOp::kSigmoid:
      return 1.0f / (1.0f + std::exp(-a));
    case EwOp::kTanh:
      return std::tanh(a);
    case EwOp::kErf:
      return std::erf(a);
    case EwOp::kSqrt:
      return std::sqrt(a);
    case EwOp::kNeg:
      return -a;
    case EwOp::kExp:
      return std::exp(a);
    case EwOp::kCopy:
      return a;
  }
  return a;
}

int64_t TensorDesc::NumElements() const {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  return count;
}

std::string Workload::CanonicalString() const {
  std::string text = absl::StrCat(kHeader, "\nanchor ", AnchorKindName(anchor), "\n");
  if (anchor == AnchorKind::kMatMul) {
    const MatMulParams& p = matmul;
    absl::StrAppend(&text, "matmul batch=", p.batch, " m=", p.m, " n=", p.n, " k=", p.k,
                    " a_batched=", p.a_batched ? 1 : 0, " b_batched=", p.b_batched ? 1 : 0,
                    " trans_a=", p.trans_a ? 1 : 0, " trans_b=", p.trans_b ? 1 : 0);
    // Only integer matmuls carry zero points, so float matmuls keep their historic text.
    const bool integer = inputs.size() >= 2 && IsIntegerDType(inputs[0].dtype);
    if (integer || p.a_zero_point != 0 || p.b_zero_point != 0) {
      absl::StrAppend(&text, " a_zero_point=", p.a_zero_point, " b_zero_point=", p.b_zero_point);
    }
    if (p.a_zero_point_input) absl::StrAppend(&text, " a_zero_point_input=1");
    absl::StrAppend(&text, "\n");
  } else if (anchor == AnchorKind::kAttention) {
    absl::StrAppend(&text, AttentionParamsLine(attention), "\n");
  } else if (anchor == AnchorKind::kConv) {
    absl::StrAppend(&text, ConvParamsLine(conv), "\n");
  } else if (anchor == AnchorKind::kPool) {
    absl::StrAppend(&text, PoolParamsLine(pool), "\n");
  } else if (anchor != AnchorKind::kNone) {
    absl::StrAppend(&text, "row rows=", row.rows, " cols=", row.cols);
    if (anchor == AnchorKind::kLayerNorm) {
      absl::StrAppend(&text, " epsilon=", FloatText(row.epsilon));
    }
    absl::StrAppend(&text, "\n");
  }
  absl::StrAppend(&text, "anchor_inputs ", num_anchor_inputs, "\n");
  for (const TensorDesc& input : inputs) absl::StrAppend(&text, TensorText("input", input));
  absl::StrAppend(&text, TensorText("output", output));
  for (const EwInstr& instr : epilogue) {
    absl::StrAppend(&text, "ew ", EwOpName(instr.op));
    for (const Operand& operand : instr.args) absl::StrAppend(&text, " ", OperandText(operand));
    absl::StrAppend(&text, "\n");
  }
  return text;
}

std::string Workload::Key() const {
  return absl::StrCat(AnchorKindName(anchor), "-", util::HexDigest128(CanonicalString()));
}

std::string Workload::Description() const {
  std::string text;
  switch (anchor) {
    case AnchorKind::kMatMul:
      text = absl::StrCat("matmul ", matmul.batch, "x", matmul.m, "x", matmul.n, "x", matmul.k,
                          " (b x m x n x k)", matmul.trans_a ? " trans_a" : "",
                          matmul.trans_b ? " trans_b" : "");
      if (IsLowPrecisionMatMul(*this)) {
        absl::StrAppend(&text, " ", DTypeName(inputs[0].dtype), "*", DTypeName(inputs[1].dtype),
                        "->", DTypeName(output.dtype));
        if (matmul.a_zero_point_input) absl::StrAppend(&text, " (A's zero point an input)");
      }
      break;
    case AnchorKind::kNone:
      text = absl::StrCat("elementwise ", absl::StrJoin(output.shape, "x"));
      break;
    case AnchorKind::kAttention:
      text = AttentionSummary(*this);
      break;
    case AnchorKind::kConv:
      text = ConvSummary(*this);
      break;
    case AnchorKind::kPool:
      text = PoolSummary(*this);
      break;
    default:
      text = absl::StrCat(AnchorKindName(anchor), " ", row.rows, "x", row.cols);
      break;
  }
  if (!epilogue.empty()) absl::StrAppend(&text, " ");
  for (const EwInstr& instr : epilogue) absl::StrAppend(&text, "+", EwOpName(instr.op));
  return text;
}

int64_t Workload::Flops() const {
  int64_t anchor_flops = 0;
  int64_t elements = row.rows * row.cols;
  switch (anchor) {
    case AnchorKind::kMatMul:
      anchor_flops = 2 * matmul.batch * matmul.m * matmul.n * matmul.k;
      break;
    case AnchorKind::kSoftmax:  // max, subtract, exp, sum, divide
      anchor_flops = 5 * elements;
      break;
    case AnchorKind::kLayerNorm:  // mean, centre, square, variance, normalize, scale, shift
      anchor_flops = 8 * elements;
      break;
    case AnchorKind::kReduceMean:
      anchor_flops = elements;
      break;
    case AnchorKind::kAttention:
      anchor_flops = AttentionFlops(attention);
      break;
    case AnchorKind::kConv:
      anchor_flops = ConvFlops(conv);
      break;
    case AnchorKind::kPool:
      anchor_flops = PoolFlops(pool);
      break;
    case AnchorKind::kNone:
      break;
  }
  return anchor_flops + static_cast<int64_t>(epilogue.size()) * output.NumElements();
}

int64_t Workload::MinBytes() const {
  int64_t bytes = output.NumElements() * DTypeSize(output.dtype);
  for (const TensorDesc& input : inputs) bytes += input.NumElements() * DTypeSize(input.dtype);
  return bytes;
}

absl::Status Workload::Validate() const {
  // A masked attention reads its mask as a fourth anchor input; an integer matmul with a
  // run-time zero point reads it as a third.
  const int anchor_inputs =
      AnchorInputCount(anchor) +
      (anchor == AnchorKind::kAttention && attention.mask_groups > 0 ? 1 : 0) +
      (anchor == AnchorKind::kMatMul && matmul.a_zero_point_input ? 1 : 0);
  if (num_anchor_inputs != anchor_inputs) {
    return absl::InvalidArgumentError(absl::StrCat("anchor ", AnchorKindName(anchor), " takes ",
                                                   anchor_inputs, " inputs, not ",
                                                   num_anchor_inputs));
  }
  if (static_cast<int>(inputs.size()) < num_anchor_inputs) {
    return absl::InvalidArgumentError("workload has fewer inputs than its anchor needs");
  }
  GTCO_RETURN_IF_ERROR(ValidateAnchorShapes(*this));
  GTCO_RETURN_IF_ERROR(ValidateDTypes(*this));
  for (size_t i = num_anchor_inputs; i < inputs.size(); ++i) {
    if (!BroadcastsTo(inputs[i].shape, output.shape)) {
      return absl::InvalidArgumentError(
          absl::StrCat("epilogue input ", i, " of shape ", ShapeText(inputs[i].shape),
                       " does not broadcast to the output shape ", ShapeText(output.shape)));
    }
  }
  GTCO_RETURN_IF_ERROR(ValidateSizes(*this));
  for (size_t i = 0; i < epilogue.size(); ++i) {
    const EwInstr& instr = epilogue[i];
    if (static_cast<int>(instr.args.size()) != EwOpArity(instr.op)) {
      return absl::InvalidArgumentError(absl::StrCat("epilogue op ", EwOpName(instr.op), " takes ",
                                                     EwOpArity(instr.op), " operands, not ",
                                                     instr.args.size()));
    }
    for (const Operand& operand : instr.args) {
      GTCO_RETURN_IF_ERROR(ValidateOperand(*this, operand, i));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Workload> ParseWorkload(const std::string& text) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  if (lines.empty() || lines[0] != kHeader) {
    return absl::InvalidArgumentError(
        absl::StrCat("malformed workload text: expected header '", kHeader, "'"));
  }
  Workload workload;
  for (size_t i = 1; i < lines.size(); ++i) {
    GTCO_RETURN_IF_ERROR(ParseLine(lines[i], workload));
  }
  return workload;
}

}  // namespace gtco::ir
