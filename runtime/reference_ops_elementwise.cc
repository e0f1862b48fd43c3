// Reference ONNX element-wise ops: unary math and activations, Cast, Clip, broadcasting binary
// and variadic arithmetic, comparisons, logic and Where.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>

#include "absl/strings/str_cat.h"
#include "runtime/reference_ops_internal.h"

namespace gtco::runtime::reference::internal {
namespace {

constexpr double kPi = 3.14159265358979323846;

/// Applies `f` to each element of input 0; the output keeps its dtype unless `out_type` is given.
template <typename F>
OpResult Unary(const OpContext& ctx, F f, std::optional<ElemType> out_type = std::nullopt) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(0));
  Value out;
  out.dtype = out_type.value_or(x->dtype);
  out.shape = x->shape;
  out.data.resize(x->data.size());
  for (size_t index = 0; index < x->data.size(); ++index) out.data[index] = f(x->data[index]);
  return Single(std::move(out));
}

/// f(a, b) over the broadcast of `a` and `b`.
template <typename F>
absl::StatusOr<Value> BinaryValue(const OpContext& ctx, const Value& a, const Value& b,
                                  ElemType out_type, F f) {
  GTCO_REF_ASSIGN_OR_RETURN(Shape shape, BroadcastShapes(ctx, {a.shape, b.shape}));
  const std::vector<double> lhs = BroadcastData(a, shape);
  const std::vector<double> rhs = BroadcastData(b, shape);
  Value out;
  out.dtype = out_type;
  out.shape = std::move(shape);
  out.data.resize(lhs.size());
  for (size_t index = 0; index < lhs.size(); ++index) out.data[index] = f(lhs[index], rhs[index]);
  return out;
}

/// f(input 0, input 1) with broadcasting; the output has input 0's dtype unless `out_type`.
template <typename F>
OpResult Binary(const OpContext& ctx, F f, std::optional<ElemType> out_type = std::nullopt) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* a, ctx.Required(0));
  GTCO_REF_ASSIGN_OR_RETURN(const Value* b, ctx.Required(1));
  GTCO_REF_ASSIGN_OR_RETURN(Value out, BinaryValue(ctx, *a, *b, out_type.value_or(a->dtype), f));
  return Single(std::move(out));
}

/// f folded over all inputs (Sum, Max, ...), broadcasting; `finish` maps the fold's result.
template <typename F>
absl::StatusOr<Value> Fold(const OpContext& ctx, F f) {
  if (ctx.num_inputs() == 0 || ctx.input(0) == nullptr) return ctx.Invalid("needs an input");
  Value acc = *ctx.input(0);
  for (int index = 1; index < ctx.num_inputs(); ++index) {
    GTCO_REF_ASSIGN_OR_RETURN(const Value* next, ctx.Required(index));
    GTCO_REF_ASSIGN_OR_RETURN(acc, BinaryValue(ctx, acc, *next, acc.dtype, f));
  }
  return acc;
}

double NanMax(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); }
double NanMin(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b); }

double Sigmoid(double x) {
  if (x >= 0) return 1.0 / (1.0 + std::exp(-x));
  const double e = std::exp(x);
  return e / (1.0 + e);
}

double Softplus(double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }

/// The f32 value of an ONNX float attribute default (ONNX stores attributes as floats).
double F32(float value) { return static_cast<double>(value); }

OpResult Cast(const OpContext& ctx) {
  const absl::StatusOr<ElemType> to = ElemTypeFromOnnx(ctx.Int("to", 1));
  if (!to.ok()) return ctx.Unsupported(absl::StrCat("target type to=", ctx.Int("to", 1)));
  ElemType target = *to;
  return Unary(
      ctx, [](double x) { return x; }, target);
}

OpResult CastLike(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* like, ctx.Required(1));
  return Unary(
      ctx, [](double x) { return x; }, like->dtype);
}

OpResult Clip(const OpContext& ctx) {
  double lo = -HUGE_VAL, hi = HUGE_VAL;
  if (ctx.opset() < 11) {
    lo = ctx.Float("min", std::numeric_limits<float>::lowest());
    hi = ctx.Float("max", std::numeric_limits<float>::max());
  } else {
    for (int index : {1, 2}) {
      const Value* bound = ctx.input(index);
      if (bound == nullptr) continue;
      if (bound->data.size() != 1) return ctx.Invalid("min and max must be scalars");
      (index == 1 ? lo : hi) = bound->data[0];
    }
  }
  return Unary(ctx,
               [lo, hi](double x) { return std::isnan(x) ? x : std::min(std::max(x, lo), hi); });
}

OpResult Dropout(const OpContext& ctx) {
  const Value* training = ctx.input(2);
  if (training != nullptr && !training->data.empty() && training->data[0] != 0) {
    const Value* ratio = ctx.input(1);
    if (ratio == nullptr || ratio->data.empty() || ratio->data[0] != 0) {
      return ctx.Unsupported("training_mode=true");
    }
  }
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(0));
  std::vector<Value> outputs = {*x};
  if (ctx.num_outputs() > 1) {
    Value mask = MakeValue(ElemType::kBool, x->shape);
    std::fill(mask.data.begin(), mask.data.end(), 1.0);
    outputs.push_back(std::move(mask));
  }
  return outputs;
}

OpResult Div(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* a, ctx.Required(0));
  if (IsFloat(a->dtype)) return Binary(ctx, [](double x, double y) { return x / y; });
  return Binary(ctx, [](double x, double y) {
    const int64_t divisor = ToInt64(y);
    return divisor == 0 ? 0.0 : static_cast<double>(ToInt64(x) / divisor);
  });
}

OpResult Mod(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* a, ctx.Required(0));
  if (ctx.Int("fmod", 0) != 0)
    return Binary(ctx, [](double x, double y) { return std::fmod(x, y); });
  if (IsFloat(a->dtype)) {  // numpy's mod: the result takes the divisor's sign
    return Binary(ctx, [](double x, double y) {
      const double r = std::fmod(x, y);
      return r != 0 && ((r < 0) != (y < 0)) ? r + y : r;
    });
  }
  return Binary(ctx, [](double x, double y) {
    const int64_t a = ToInt64(x), b = ToInt64(y);
    if (b == 0) return 0.0;
    int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return static_cast<double>(r);
  });
}

OpResult BitShift(const OpContext& ctx) {
  const std::string direction = ctx.String("direction", "");
  if (direction != "LEFT" && direction != "RIGHT") {
    return ctx.Unsupported(absl::StrCat("direction='", direction, "'"));
  }
  const bool left = direction == "LEFT";
  return Binary(ctx, [left](double x, double y) {
    const uint64_t value = static_cast<uint64_t>(ToInt64(x));
    const int64_t shift = ToInt64(y);
    if (shift < 0 || shift >= 64) return 0.0;
    return static_cast<double>(left ? value << shift : value >> shift);
  });
}

OpResult Where(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* cond, ctx.Required(0));
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(1));
  GTCO_REF_ASSIGN_OR_RETURN(const Value* y, ctx.Required(2));
  GTCO_REF_ASSIGN_OR_RETURN(Shape shape, BroadcastShapes(ctx, {cond->shape, x->shape, y->shape}));
  const std::vector<double> c = BroadcastData(*cond, shape);
  const std::vector<double> a = BroadcastData(*x, shape);
  const std::vector<double> b = BroadcastData(*y, shape);
  Value out;
  out.dtype = x->dtype;
  out.shape = std::move(shape);
  out.data.resize(c.size());
  for (size_t index = 0; index < c.size(); ++index)
    out.data[index] = c[index] != 0 ? a[index] : b[index];
  return Single(std::move(out));
}

void AddUnaryMathOps(OpTable* t) {
  (*t)["Identity"] = [](const OpContext& c) { return Unary(c, [](double x) { return x; }); };
  (*t)["Neg"] = [](const OpContext& c) { return Unary(c, [](double x) { return -x; }); };
  (*t)["Abs"] = [](const OpContext& c) { return Unary(c, [](double x) { return std::fabs(x); }); };
  (*t)["Exp"] = [](const OpContext& c) { return Unary(c, [](double x) { return std::exp(x); }); };
  (*t)["Log"] = [](const OpContext& c) { return Unary(c, [](double x) { return std::log(x); }); };
  (*t)["Sqrt"] = [](const OpContext& c) { return Unary(c, [](double x) { return std::sqrt(x); }); };
  (*t)["Reciprocal"] = [](const OpContext& c) {
    return Unary(c, [](double x) { return 1.0 / x; });
  };
  (*t)["Floor"] = [](const OpContext& c) {
    return Unary(c, [](double x) { return std::floor(x); });
  };
  (*t)["Ceil"] = [](const OpContext& c) { return Unary(c, [](double x) { return std::ceil(x); }); };
  (*t)["Round"] = [](const OpContext& c) {
    return Unary(c, [](double x) { return std::nearbyint(x); });  // ties to even
  };
  (*t)["Sign"] = [](const OpContext& c) {
    return Unary(c, [](double x) { return std::isnan(x) ? x : (x > 0) - (x < 0) + 0.0; });
  };
  (*t)["Sin"] = [](const OpContext& c) { return Unary(c, [](double x) { return std::sin(x); }); };
  (*t)["Cos"] = [](const OpContext& c) { return Unary(c, [](double x) { return std::cos(x); }); };
  (*t)["Tan"] = [](const OpContext& c) { return Unary(c, [](double x) { return std::tan(x); }); };
  (*t)["Asin"] = [](const OpContext& c) { return Unary(c, [](double x) { return std::asin(x); }); };
  (*t)["Acos"] = [](const OpContext& c) { return Unary(c, [](double x) { return std::acos(x); }); };
  (*t)["Atan"] = [](const OpContext& c) { return Unary(c, [](double x) { return std::atan(x); }); };
  (*t)["Sinh"] = [](const OpContext& c) { return Unary(c, [](double x) { return std::sinh(x); }); };
  (*t)["Cosh"] = [](const OpContext& c) { return Unary(c, [](double x) { return std::cosh(x); }); };
  (*t)["Tanh"] = [](const OpContext& c) { return Unary(c, [](double x) { return std::tanh(x); }); };
  (*t)["Asinh"] = [](const OpContext& c) {
    return Unary(c, [](double x) { return std::asinh(x); });
  };
  (*t)["Acosh"] = [](const OpContext& c) {
    return Unary(c, [](double x) { return std::acosh(x); });
  };
  (*t)["Atanh"] = [](const OpContext& c) {
    return Unary(c, [](double x) { return std::atanh(x); });
  };
  (*t)["Erf"] = [](const OpContext& c) { return Unary(c, [](double x) { return std::erf(x); }); };
  (*t)["Not"] = [](const OpContext& c) {
    return Unary(
        c, [](double x) { return x == 0 ? 1.0 : 0.0; }, ElemType::kBool);
  };
  (*t)["IsNaN"] = [](const OpContext& c) {
    return Unary(
        c, [](double x) { return std::isnan(x) ? 1.0 : 0.0; }, ElemType::kBool);
  };
  (*t)["IsInf"] = [](const OpContext& c) {
    const bool negative = c.Int("detect_negative", 1) != 0;
    const bool positive = c.Int("detect_positive", 1) != 0;
    return Unary(
        c,
        [negative, positive](double x) {
          return std::isinf(x) && (x > 0 ? positive : negative) ? 1.0 : 0.0;
        },
        ElemType::kBool);
  };
  (*t)["BitwiseNot"] = [](const OpContext& c) -> OpResult {
    GTCO_REF_ASSIGN_OR_RETURN(const Value* x, c.Required(0));
    const bool is_unsigned = x->dtype == ElemType::kU8;
    return Unary(c, [is_unsigned](double v) {
      return is_unsigned ? 255.0 - v : static_cast<double>(~ToInt64(v));
    });
  };
}

void AddActivationOps(OpTable* t) {
  (*t)["Sigmoid"] = [](const OpContext& c) { return Unary(c, Sigmoid); };
  (*t)["Relu"] = [](const OpContext& c) {
    return Unary(c, [](double x) { return x < 0 ? 0.0 : x; });
  };
  (*t)["LeakyRelu"] = [](const OpContext& c) {
    const double alpha = c.Float("alpha", F32(0.01f));
    return Unary(c, [alpha](double x) { return x < 0 ? alpha * x : x; });
  };
  (*t)["Elu"] = [](const OpContext& c) {
    const double alpha = c.Float("alpha", 1.0);
    return Unary(c, [alpha](double x) { return x < 0 ? alpha * std::expm1(x) : x; });
  };
  (*t)["Selu"] = [](const OpContext& c) {
    const double alpha = c.Float("alpha", F32(1.67326319217681884765625f));
    const double gamma = c.Float("gamma", F32(1.05070102214813232421875f));
    return Unary(
        c, [alpha, gamma](double x) { return x > 0 ? gamma * x : gamma * alpha * std::expm1(x); });
  };
  (*t)["Celu"] = [](const OpContext& c) {
    const double alpha = c.Float("alpha", 1.0);
    return Unary(c, [alpha](double x) {
      return std::max(0.0, x) + std::min(0.0, alpha * std::expm1(x / alpha));
    });
  };
  (*t)["Softplus"] = [](const OpContext& c) { return Unary(c, Softplus); };
  (*t)["Softsign"] = [](const OpContext& c) {
    return Unary(c, [](double x) { return x / (1.0 + std::fabs(x)); });
  };
  (*t)["HardSigmoid"] = [](const OpContext& c) {
    const double alpha = c.Float("alpha", F32(0.2f)), beta = c.Float("beta", F32(0.5f));
    return Unary(
        c, [alpha, beta](double x) { return std::max(0.0, std::min(1.0, alpha * x + beta)); });
  };
  (*t)["HardSwish"] = [](const OpContext& c) {
    return Unary(c, [](double x) { return x * std::max(0.0, std::min(1.0, x / 6.0 + 0.5)); });
  };
  (*t)["Mish"] = [](const OpContext& c) {
    return Unary(c, [](double x) { return x * std::tanh(Softplus(x)); });
  };
  (*t)["Gelu"] = [](const OpContext& c) -> OpResult {
    const std::string approximate = c.String("approximate", "none");
    if (approximate == "none") {
      return Unary(c, [](double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); });
    }
    if (approximate == "tanh") {
      return Unary(c, [](double x) {
        const double inner = std::sqrt(2.0 / kPi) * (x + 0.044715 * x * x * x);
        return 0.5 * x * (1.0 + std::tanh(inner));
      });
    }
    return c.Unsupported(absl::StrCat("approximate='", approximate, "'"));
  };
  (*t)["ThresholdedRelu"] = [](const OpContext& c) {
    const double alpha = c.Float("alpha", 1.0);
    return Unary(c, [alpha](double x) { return x > alpha ? x : 0.0; });
  };
  (*t)["Shrink"] = [](const OpContext& c) {
    const double bias = c.Float("bias", 0.0), lambd = c.Float("lambd", F32(0.5f));
    return Unary(c, [bias, lambd](double x) {
      return x < -lambd ? x + bias : (x > lambd ? x - bias : 0.0);
    });
  };
  (*t)["Cast"] = Cast;
  (*t)["CastLike"] = CastLike;
  (*t)["Clip"] = Clip;
  (*t)["Dropout"] = Dropout;
}

void AddBinaryOps(OpTable* t) {
  (*t)["Add"] = [](const OpContext& c) {
    return Binary(c, [](double x, double y) { return x + y; });
  };
  (*t)["Sub"] = [](const OpContext& c) {
    return Binary(c, [](double x, double y) { return x - y; });
  };
  (*t)["Mul"] = [](const OpContext& c) {
    return Binary(c, [](double x, double y) { return x * y; });
  };
  (*t)["Div"] = Div;
  (*t)["Mod"] = Mod;
  (*t)["Pow"] = [](const OpContext& c) {
    return Binary(c, [](double x, double y) { return std::pow(x, y); });
  };
  (*t)["PRelu"] = [](const OpContext& c) {
    return Binary(c, [](double x, double slope) { return x < 0 ? slope * x : x; });
  };
  (*t)["BitShift"] = BitShift;
  (*t)["BitwiseAnd"] = [](const OpContext& c) {
    return Binary(c,
                  [](double x, double y) { return static_cast<double>(ToInt64(x) & ToInt64(y)); });
  };
  (*t)["BitwiseOr"] = [](const OpContext& c) {
    return Binary(c,
                  [](double x, double y) { return static_cast<double>(ToInt64(x) | ToInt64(y)); });
  };
  (*t)["BitwiseXor"] = [](const OpContext& c) {
    return Binary(c,
                  [](double x, double y) { return static_cast<double>(ToInt64(x) ^ ToInt64(y)); });
  };
  (*t)["Equal"] = [](const OpContext& c) {
    return Binary(
        c, [](double x, double y) { return x == y ? 1.0 : 0.0; }, ElemType::kBool);
  };
  (*t)["Less"] = [](const OpContext& c) {
    return Binary(
        c, [](double x, double y) { return x < y ? 1.0 : 0.0; }, ElemType::kBool);
  };
  (*t)["LessOrEqual"] = [](const OpContext& c) {
    return Binary(
        c, [](double x, double y) { return x <= y ? 1.0 : 0.0; }, ElemType::kBool);
  };
  (*t)["Greater"] = [](const OpContext& c) {
    return Binary(
        c, [](double x, double y) { return x > y ? 1.0 : 0.0; }, ElemType::kBool);
  };
  (*t)["GreaterOrEqual"] = [](const OpContext& c) {
    return Binary(
        c, [](double x, double y) { return x >= y ? 1.0 : 0.0; }, ElemType::kBool);
  };
  (*t)["And"] = [](const OpContext& c) {
    return Binary(
        c, [](double x, double y) { return x != 0 && y != 0 ? 1.0 : 0.0; }, ElemType::kBool);
  };
  (*t)["Or"] = [](const OpContext& c) {
    return Binary(
        c, [](double x, double y) { return x != 0 || y != 0 ? 1.0 : 0.0; }, ElemType::kBool);
  };
  (*t)["Xor"] = [](const OpContext& c) {
    return Binary(
        c, [](double x, double y) { return (x != 0) != (y != 0) ? 1.0 : 0.0; }, ElemType::kBool);
  };
  (*t)["Where"] = Where;
}

void AddVariadicOps(OpTable* t) {
  (*t)["Sum"] = [](const OpContext& c) -> OpResult {
    GTCO_REF_ASSIGN_OR_RETURN(Value out, Fold(c, [](double x, double y) { return x + y; }));
    return Single(std::move(out));
  };
  (*t)["Mean"] = [](const OpContext& c) -> OpResult {
    GTCO_REF_ASSIGN_OR_RETURN(Value out, Fold(c, [](double x, double y) { return x + y; }));
    for (double& element : out.data) element /= c.num_inputs();
    return Single(std::move(out));
  };
  (*t)["Max"] = [](const OpContext& c) -> OpResult {
    GTCO_REF_ASSIGN_OR_RETURN(Value out, Fold(c, NanMax));
    return Single(std::move(out));
  };
  (*t)["Min"] = [](const OpContext& c) -> OpResult {
    GTCO_REF_ASSIGN_OR_RETURN(Value out, Fold(c, NanMin));
    return Single(std::move(out));
  };
}

}  // namespace

void AddElementwiseOps(OpTable* table) {
  AddUnaryMathOps(table);
  AddActivationOps(table);
  AddBinaryOps(table);
  AddVariadicOps(table);
}

}  // namespace gtco::runtime::reference::internal
