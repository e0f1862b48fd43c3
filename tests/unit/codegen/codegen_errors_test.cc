// JIT behaviour (bad IR, missing entries, name reuse, Reset, host facts) and the code
// generator's rejection of IR it cannot lower.
#include <algorithm>
#include <string>
#include <vector>

#include "tests/unit/codegen/codegen_test_util.h"

namespace gtco::codegen {
namespace {

using ir::ForKind;
using testing::Flt;
using testing::For;
using testing::Int;
using testing::RunKernel;
using testing::SharedJit;
using testing::Var;

/// Y[i] = X[i] + value for i < n.
ir::LoweredFunc AddConstant(const std::string& name, int64_t n, double value) {
  return {name,
          {{"X", n}, {"Y", n}},
          For("i", 0, n, ForKind::kSerial,
              ir::MakeStore("Y", Var("i"), ir::MakeLoad("X", Var("i")) + Flt(value)))};
}

TEST(CpuJitTest, ReportsHostFacts) {
  EXPECT_FALSE(SharedJit().host_cpu().empty());
#if defined(__x86_64__)
  const auto& features = SharedJit().host_features();
  EXPECT_NE(std::find(features.begin(), features.end(), "sse2"), features.end());
#endif
}

TEST(CpuJitTest, BadIrIsInvalidArgumentWithParserMessage) {
  auto entry = SharedJit().Compile("define void @f( { this is not IR", "f");
  ASSERT_FALSE(entry.ok());
  EXPECT_EQ(entry.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(entry.status().message().find("at line 1, column 19: expected type"), std::string::npos)
      << entry.status();
}

TEST(CpuJitTest, IrThatDoesNotVerifyIsInvalidArgument) {
  // A block without a terminator parses but does not verify.
  auto entry = SharedJit().Compile("define void @f() {\nentry:\n  %x = add i32 1, 2\n}\n", "f");
  ASSERT_FALSE(entry.ok());
  EXPECT_EQ(entry.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CpuJitTest, MissingEntryAndUnresolvedSymbolAreInvalidArgument) {
  auto missing = SharedJit().Compile("define void @f() {\n  ret void\n}\n", "g");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument) << missing.status();
  auto unresolved = SharedJit().Compile(
      "declare void @gtco_no_such_symbol()\n"
      "define void @f() {\n  call void @gtco_no_such_symbol()\n  ret void\n}\n",
      "f");
  EXPECT_EQ(unresolved.status().code(), absl::StatusCode::kInvalidArgument) << unresolved.status();
}

TEST(CpuJitTest, SameNameTwiceAndReset) {
  auto jit = CpuJit::Create();
  ASSERT_TRUE(jit.ok()) << jit.status();
  std::vector<float> x = {1, 2, 3}, y(3);
  for (double value : {1.0, 10.0}) {
    auto text = EmitLlvmIr(AddConstant("add_const", 3, value));
    ASSERT_TRUE(text.ok()) << text.status();
    auto entry = (*jit)->Compile(*text, "add_const");
    ASSERT_TRUE(entry.ok()) << entry.status();
    RunKernel(*entry, {&x, &y});
    EXPECT_EQ(y[2], 3 + value);
  }
  ASSERT_TRUE((*jit)->Reset().ok());
  auto text = EmitLlvmIr(AddConstant("add_const", 3, 100.0));
  auto entry = (*jit)->Compile(*text, "add_const");
  ASSERT_TRUE(entry.ok()) << entry.status();
  RunKernel(*entry, {&x, &y});
  EXPECT_EQ(y[0], 101.0f);
}

TEST(EmitLlvmIrTest, ExportsEntryWithoutTargetAttributes) {
  auto text = EmitLlvmIr(AddConstant("my_kernel", 8, 2.0));
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_NE(text->find("define void @my_kernel(ptr %args)"), std::string::npos) << *text;
  EXPECT_NE(text->find("noalias"), std::string::npos);
  EXPECT_EQ(text->find("target-cpu"), std::string::npos);
  EXPECT_EQ(text->find("target triple"), std::string::npos);
}

void ExpectRejected(const ir::LoweredFunc& func, const std::string& message_part) {
  auto text = EmitLlvmIr(func);
  ASSERT_FALSE(text.ok()) << "expected an error mentioning '" << message_part << "'";
  EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument) << text.status();
  EXPECT_NE(text.status().message().find(message_part), std::string::npos) << text.status();
}

TEST(EmitLlvmIrTest, RejectsWhatItCannotLower) {
  const std::vector<ir::BufferParam> params = {{"X", 64}, {"Y", 64}};
  ir::Stmt store_i = ir::MakeStore("Y", Var("i"), ir::MakeLoad("X", Var("i")));
  ExpectRejected({"f", params, ir::MakeStore("Y", Var("i"), Flt(1.0))}, "unbound variable 'i'");
  ExpectRejected(
      {"f", params, For("i", 0, 4, ForKind::kSerial, ir::MakeStore("W", Var("i"), Flt(1.0)))},
      "unknown buffer 'W'");
  ExpectRejected({"f", params, ir::MakeStore("Y", Int(64), Flt(1.0))}, "out of bounds");
  ExpectRejected({"f", params,
                  For("i", 0, 4, ForKind::kSerial,
                      ir::MakeStore("Y", Var("i"), ir::MakeCall("lgamma", {Flt(1.0)})))},
                 "unsupported call 'lgamma'");
  ExpectRejected(
      {"f", params,
       For("i", 0, 8, ForKind::kVectorized, For("j", 0, 2, ForKind::kParallel, store_i))},
      "inside the vectorized loop");
  ExpectRejected(
      {"f", params,
       For("i", 0, 8, ForKind::kVectorized, For("j", 0, 2, ForKind::kVectorized, store_i))},
      "inside the vectorized loop");
  ExpectRejected({"f", params,
                  For("j", 0, 8, ForKind::kVectorized,
                      ir::MakeFor("i", Int(0), Var("j"), ForKind::kSerial, store_i))},
                 "depends on the vectorized loop variable");
  // A parallel body may not use an allocation made outside it.
  ExpectRejected(
      {"f", params,
       ir::MakeAllocate(
           "tmp", 4, For("i", 0, 4, ForKind::kParallel, ir::MakeStore("tmp", Var("i"), Flt(0.0))))},
      "unknown buffer 'tmp'");
  ExpectRejected({"", params, store_i}, "no name");
  ExpectRejected({"f", {{"X", 4}, {"X", 4}}, store_i}, "repeated parameter");
}

TEST(EmitLlvmIrTest, DeterministicText) {
  auto first = EmitLlvmIr(AddConstant("k", 40, 3.0));
  auto second = EmitLlvmIr(AddConstant("k", 40, 3.0));
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(*first, *second);
}

TEST(EmitLlvmBitcodeTest, CompilesAndRunsLikeTheText) {
  const ir::LoweredFunc func = AddConstant("add_bitcode", 5, 2.5);
  auto bitcode = EmitLlvmBitcode(func);
  auto text = EmitLlvmIr(func);
  ASSERT_TRUE(bitcode.ok() && text.ok()) << bitcode.status() << text.status();
  ASSERT_GE(bitcode->size(), 4u);
  EXPECT_EQ(bitcode->substr(0, 4), std::string("BC\xC0\xDE", 4));  // the bitcode magic
  EXPECT_EQ(*bitcode, *EmitLlvmBitcode(func));                       // deterministic
  std::vector<float> x = {1, 2, 3, 4, 5}, y(5);
  auto entry = SharedJit().Compile(*bitcode, "add_bitcode");
  ASSERT_TRUE(entry.ok()) << entry.status();
  RunKernel(*entry, {&x, &y});
  EXPECT_EQ(y, (std::vector<float>{3.5f, 4.5f, 5.5f, 6.5f, 7.5f}));
}

TEST(EmitLlvmBitcodeTest, TruncatedBitcodeIsInvalidArgument) {
  auto bitcode = EmitLlvmBitcode(AddConstant("add_cut", 5, 1.0));
  ASSERT_TRUE(bitcode.ok()) << bitcode.status();
  auto entry = SharedJit().Compile(bitcode->substr(0, bitcode->size() / 2), "add_cut");
  ASSERT_FALSE(entry.ok());
  EXPECT_EQ(entry.status().code(), absl::StatusCode::kInvalidArgument) << entry.status();
  EXPECT_NE(entry.status().message().find("cannot parse LLVM IR"), std::string::npos)
      << entry.status();
}

}  // namespace
}  // namespace gtco::codegen
