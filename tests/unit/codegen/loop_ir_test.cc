// Loop IR factories (folding, type rules) and the deterministic printer.
#include "common/ir/loop_ir.h"

#include "gtest/gtest.h"

namespace gtco::ir {
namespace {

TEST(LoopIrTest, FoldsIntegerConstantsAndIdentities) {
  Expr x = MakeVar("x");
  EXPECT_EQ((MakeInt(2) + MakeInt(3))->int_value, 5);
  EXPECT_EQ((MakeInt(-7) / MakeInt(2))->int_value, -4);  // floor division
  EXPECT_EQ((MakeInt(-7) % MakeInt(2))->int_value, 1);   // floor modulo
  EXPECT_EQ(Min(MakeInt(4), MakeInt(-1))->int_value, -1);
  EXPECT_EQ(x + MakeInt(0), x);
  EXPECT_EQ(MakeInt(0) + x, x);
  EXPECT_EQ(x - MakeInt(0), x);
  EXPECT_EQ(x * MakeInt(1), x);
  EXPECT_EQ(MakeInt(1) * x, x);
  EXPECT_EQ((x * MakeInt(0))->kind, ExprKind::kIntImm);
  EXPECT_EQ((x * MakeInt(0))->int_value, 0);
  EXPECT_EQ(x / MakeInt(1), x);
  // Division by a zero constant is left for run time, not folded.
  EXPECT_EQ((MakeInt(1) / MakeInt(0))->kind, ExprKind::kDiv);
}

TEST(LoopIrTest, FoldsFloatsInSinglePrecision) {
  Expr sum = MakeFloat(0.1) + MakeFloat(0.2);
  ASSERT_EQ(sum->kind, ExprKind::kFloatImm);
  EXPECT_EQ(sum->float_value, static_cast<double>(0.1f + 0.2f));
  Expr y = MakeVar("y", ScalarType::kF32);
  EXPECT_EQ(y * MakeFloat(1.0), y);
  // x + 0.0 is not an identity for x = -0.0, so it is kept.
  EXPECT_EQ((y + MakeFloat(0.0))->kind, ExprKind::kAdd);
}

TEST(LoopIrTest, ComparisonsAreBoolAndLoadsAreF32) {
  Expr lt = MakeBinary(ExprKind::kLt, MakeVar("i"), MakeInt(4));
  EXPECT_EQ(lt->type, ScalarType::kBool);
  EXPECT_EQ(MakeLoad("A", MakeVar("i"))->type, ScalarType::kF32);
  EXPECT_EQ(MakeSelect(lt, MakeFloat(1), MakeFloat(2))->type, ScalarType::kF32);
  EXPECT_EQ(MakeCast(ScalarType::kF32, MakeVar("i"))->type, ScalarType::kF32);
}

TEST(LoopIrDeathTest, MixedOperandTypesAreBugs) {
  EXPECT_DEATH(MakeVar("i") + MakeFloat(1.0), "different types");
}

LoweredFunc SampleFunc() {
  Expr i = MakeVar("i"), j = MakeVar("j");
  Stmt store = MakeStore(
      "C", i * MakeInt(16) + j,
      MakeCall("exp", {MakeLoad("A", i * MakeInt(16) + j)}) + MakeLoad("acc", MakeInt(0)));
  Stmt guarded =
      MakeIf(MakeBinary(ExprKind::kLt, j, MakeInt(10)), store, MakeStore("C", j, MakeFloat(0.5)));
  Stmt body = MakeFor(
      "i", MakeInt(0), MakeInt(4), ForKind::kParallel,
      MakeAllocate("acc", 1,
                   MakeLet("n", Max(i, MakeInt(1)),
                           MakeFor("j", MakeInt(0), MakeInt(16), ForKind::kVectorized, guarded))));
  return {"sample", {{"A", 64}, {"C", 64}}, body};
}

TEST(LoopIrTest, ToStringIsReadableAndDeterministic) {
  const std::string text = ToString(SampleFunc());
  EXPECT_EQ(text, ToString(SampleFunc()));
  EXPECT_EQ(text,
            "func sample(A[64], C[64]) {\n"
            "  parallel for (i, 0, 4) {\n"
            "    allocate acc[1] {\n"
            "      let n = max(i, 1) {\n"
            "        vectorized for (j, 0, 16) {\n"
            "          if ((j < 10)) {\n"
            "            C[((i * 16) + j)] = (exp(A[((i * 16) + j)]) + acc[0])\n"
            "          } else {\n"
            "            C[j] = 0.5f\n"
            "          }\n"
            "        }\n"
            "      }\n"
            "    }\n"
            "  }\n"
            "}\n");
}

TEST(LoopIrTest, ForKindNames) {
  EXPECT_STREQ(ForKindName(ForKind::kSerial), "serial");
  EXPECT_STREQ(ForKindName(ForKind::kParallel), "parallel");
  EXPECT_STREQ(ForKindName(ForKind::kVectorized), "vectorized");
  EXPECT_STREQ(ForKindName(ForKind::kUnrolled), "unrolled");
}

}  // namespace
}  // namespace gtco::ir
