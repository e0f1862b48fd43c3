// Test helpers: compile a LoweredFunc with a shared CpuJit and run it on host vectors.
#pragma once

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/codegen/llvm/jit.h"
#include "common/codegen/llvm/llvm_codegen.h"
#include "common/ir/loop_ir.h"
#include "gtest/gtest.h"

namespace gtco::codegen::testing {

/// The process-wide JIT shared by the tests (created once).
inline CpuJit& SharedJit() {
  static CpuJit* jit = [] {
    auto created = CpuJit::Create();
    if (!created.ok()) {
      ADD_FAILURE() << created.status();
      std::abort();
    }
    return created->release();
  }();
  return *jit;
}

/// Emits and compiles `func`; fails the test on error.
inline KernelEntry Build(const ir::LoweredFunc& func) {
  auto text = EmitLlvmIr(func);
  EXPECT_TRUE(text.ok()) << text.status();
  if (!text.ok()) return nullptr;
  auto entry = SharedJit().Compile(*text, func.name);
  EXPECT_TRUE(entry.ok()) << entry.status() << "\n" << *text;
  return entry.ok() ? *entry : nullptr;
}

/// Runs `entry` with the buffers in parameter order.
inline void RunKernel(KernelEntry entry, const std::vector<std::vector<float>*>& buffers) {
  ASSERT_NE(entry, nullptr);
  std::vector<void*> args;
  for (std::vector<float>* buffer : buffers) args.push_back(buffer->data());
  entry(args.data());
}

inline std::vector<float> RandomVector(size_t size, float low, float high, unsigned seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> distribution(low, high);
  std::vector<float> values(size);
  for (float& value : values) value = distribution(generator);
  return values;
}

inline ir::Expr Var(const std::string& name) { return ir::MakeVar(name); }
inline ir::Expr Int(int64_t value) { return ir::MakeInt(value); }
inline ir::Expr Flt(double value) { return ir::MakeFloat(value); }

/// `for (var, min, extent) kind body`.
inline ir::Stmt For(const std::string& var, int64_t min, int64_t extent, ir::ForKind kind,
                    ir::Stmt body) {
  return ir::MakeFor(var, ir::MakeInt(min), ir::MakeInt(extent), kind, std::move(body));
}

}  // namespace gtco::codegen::testing
