// Tests of the low-precision matmul mappings ("avx512_bf16", "avx512_vnni", "avx2_int8",
// "amx_bf16", "amx_int8"): verdicts and their reasons, knob pruning, the intrinsics in the
// generated IR, and JIT'd kernels on ordinary and awkward shapes compared with the typed
// reference (skipped where the host lacks the CPU feature).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "common/codegen/llvm/jit.h"
#include "common/codegen/llvm/llvm_codegen.h"
#include "common/ir/reference.h"
#include "common/kernels/cpu/matmul_lowp/matmul_lowp_sketch.h"
#include "common/kernels/family.h"
#include "common/kernels/prepack.h"
#include "common/kernels/registry.h"
#include "common/schedule/space.h"
#include "common/target/target.h"
#include "tests/unit/kernels/matmul_test_workloads.h"

namespace gtco::kernels {
namespace {

using ir::DType;

/// A matmul with canonical 3-D shapes, the given element types and zero points.
ir::Workload LowpMatMul(int64_t batch, int64_t m, int64_t n, int64_t k, DType a, DType b, DType out,
                        int32_t za = 0, int32_t zb = 0, bool trans_b = false,
                        bool b_batched = true) {
  ir::Workload w = gtco::testing::MatMulWorkload(batch, m, n, k, a, out, trans_b, b_batched);
  w.inputs[1].dtype = b;
  w.matmul.a_zero_point = za;
  w.matmul.b_zero_point = zb;
  return w;
}

target::HardwareInfo Machine(std::vector<std::string> features) {
  target::HardwareInfo hw;
  hw.cpu_model = "test cpu";
  hw.cpu_features = std::move(features);
  hw.cores = 2;
  return hw;
}

/// `w` with A's zero point read at run time (anchor input 2, one element of A's dtype).
ir::Workload WithZeroPointInput(ir::Workload w) {
  w.matmul.a_zero_point = 0;
  w.matmul.a_zero_point_input = true;
  w.inputs.insert(w.inputs.begin() + 2, ir::TensorDesc{w.inputs[0].dtype, {1}});
  w.num_anchor_inputs = 3;
  return w;
}

TEST(LowpVerdictTest, AppliesOnlyWithTheFeatureAndTheRightDtypes) {
  const target::HardwareInfo avx512 =
      Machine({"avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni"});
  const target::HardwareInfo avx2 = Machine({"avx2", "fma"});
  const ir::Workload bf16 = LowpMatMul(1, 8, 8, 8, DType::kBF16, DType::kBF16, DType::kF32);
  const ir::Workload int8 = LowpMatMul(1, 8, 8, 8, DType::kU8, DType::kI8, DType::kI32, 3, 0);

  MappingVerdict verdict = Avx512Bf16Verdict(bf16, avx512);
  EXPECT_TRUE(verdict.applies) << verdict.reason;
  EXPECT_TRUE(Avx512VnniVerdict(int8, avx512).applies);

  verdict = Avx512Bf16Verdict(bf16, avx2);
  EXPECT_FALSE(verdict.applies);
  EXPECT_EQ(verdict.mapping, kAvx512Bf16Mapping);
  EXPECT_NE(verdict.reason.find("needs CPU features avx512f, avx512_bf16"), std::string::npos)
      << verdict.reason;
  verdict = Avx512VnniVerdict(int8, Machine({"avx512f", "avx512_bf16"}));
  EXPECT_FALSE(verdict.applies);
  EXPECT_NE(verdict.reason.find("needs CPU feature avx512_vnni"), std::string::npos)
      << verdict.reason;

  verdict = Avx512Bf16Verdict(int8, avx512);
  EXPECT_FALSE(verdict.applies);
  EXPECT_NE(verdict.reason.find("not bf16 x bf16"), std::string::npos) << verdict.reason;
  verdict = Avx512VnniVerdict(bf16, avx512);
  EXPECT_FALSE(verdict.applies);
  EXPECT_NE(verdict.reason.find("not 8-bit integers"), std::string::npos) << verdict.reason;
  const ir::Workload f32 = LowpMatMul(1, 8, 8, 8, DType::kF32, DType::kF32, DType::kF32);
  EXPECT_FALSE(Avx512Bf16Verdict(f32, avx512).applies);
  EXPECT_FALSE(MatMulBf16Sketch().AppliesTo(f32));
  EXPECT_FALSE(MatMulVnniSketch().AppliesTo(f32));

  ir::Workload transposed = bf16;
  transposed.matmul.trans_a = true;
  verdict = Avx512Bf16Verdict(transposed, avx512);
  EXPECT_FALSE(verdict.applies);
  EXPECT_NE(verdict.reason.find("trans_a"), std::string::npos) << verdict.reason;

  ir::Workload wrong_out = int8;  // i32, or f32 (converted, for an epilogue); nothing else
  wrong_out.output.dtype = DType::kBF16;
  EXPECT_FALSE(Avx512VnniVerdict(wrong_out, avx512).applies);
  wrong_out.output.dtype = DType::kF32;
  EXPECT_TRUE(Avx512VnniVerdict(wrong_out, avx512).applies);
  ir::Workload bad_zero = int8;
  bad_zero.matmul.a_zero_point = 300;  // outside u8
  EXPECT_FALSE(Avx512VnniVerdict(bad_zero, avx512).applies);

  ir::Workload huge_k = LowpMatMul(1, 1, 16, 200000, DType::kBF16, DType::kBF16, DType::kF32);
  verdict = Avx512Bf16Verdict(huge_k, avx512);
  EXPECT_FALSE(verdict.applies);
  EXPECT_NE(verdict.reason.find("too large"), std::string::npos) << verdict.reason;
}

TEST(LowpSketchTest, DefaultTraceIsAdmittedAndRegisterPressureIsPruned) {
  const target::HardwareInfo hw = Machine({"avx512f", "avx512_bf16", "avx512_vnni"});
  for (const LoopSketch* sketch : {&MatMulBf16Sketch(), &MatMulVnniSketch()}) {
    const bool bf16 = sketch == &MatMulBf16Sketch();
    const ir::Workload w =
        bf16 ? LowpMatMul(1, 197, 77, 513, DType::kBF16, DType::kBF16, DType::kF32)
             : LowpMatMul(1, 197, 77, 513, DType::kI8, DType::kI8, DType::kI32);
    ASSERT_TRUE(sketch->AppliesTo(w));
    const std::vector<Knob> knobs = sketch->Knobs(w, hw);
    ASSERT_EQ(knobs.size(), sketch->KnobNames().size());
    KnobValues defaults;
    for (const Knob& knob : knobs) defaults.push_back(knob.values.front());
    EXPECT_TRUE(sketch->Admits(w, hw, defaults));
    KnobValues crowded = defaults;
    crowded[0] = 8;  // mr
    crowded[1] = 4;  // nr: 32 accumulators + 4 B vectors do not fit 32 registers
    EXPECT_FALSE(sketch->Admits(w, hw, crowded));
    EXPECT_TRUE(sketch->Lower(w, defaults, "k").ok());
    KnobValues bad = defaults;
    bad[0] = 9;
    EXPECT_FALSE(sketch->Lower(w, bad, "k").ok());
  }
}

TEST(LowpSketchTest, KernelsCallTheDotProductIntrinsics) {
  const target::HardwareInfo hw = Machine({"avx512f", "avx512_bf16", "avx512_vnni"});
  struct Case {
    const LoopSketch* sketch;
    ir::Workload w;
    const char* intrinsic;
  };
  const std::vector<Case> cases = {
      {&MatMulBf16Sketch(), LowpMatMul(1, 4, 32, 6, DType::kBF16, DType::kBF16, DType::kBF16),
       "@llvm.x86.avx512bf16.dpbf16ps.512"},
      {&MatMulVnniSketch(), LowpMatMul(1, 4, 32, 6, DType::kU8, DType::kI8, DType::kI32),
       "@llvm.x86.avx512.vpdpbusd.512"}};
  for (const Case& test_case : cases) {
    KnobValues defaults;
    for (const Knob& knob : test_case.sketch->Knobs(test_case.w, hw)) {
      defaults.push_back(knob.values.front());
    }
    absl::StatusOr<ir::LoweredFunc> func = test_case.sketch->Lower(test_case.w, defaults, "k");
    ASSERT_TRUE(func.ok()) << func.status();
    // Typed params and buffers (B pre-packed by default: no i32 panel in the bf16 kernel).
    EXPECT_NE(ir::ToString(*func).find(test_case.sketch == &MatMulBf16Sketch() ? ":bf16" : ":i32"),
              std::string::npos);
    absl::StatusOr<std::string> llvm_ir = codegen::EmitLlvmIr(*func);
    ASSERT_TRUE(llvm_ir.ok()) << llvm_ir.status();
    EXPECT_NE(llvm_ir->find(test_case.intrinsic), std::string::npos) << test_case.intrinsic;
  }
}

TEST(LowpRegistryTest, LowPrecisionWorkloadsGetTheirMappingsFromTheRegistry) {
  const target::HardwareInfo avx512 =
      Machine({"avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni"});
  const ir::Workload bf16 = LowpMatMul(1, 64, 48, 40, DType::kBF16, DType::kBF16, DType::kF32);
  const ir::Workload int8 = LowpMatMul(1, 64, 48, 40, DType::kI8, DType::kU8, DType::kI32, 2, 3);
  struct Case {
    const ir::Workload* w;
    const char* mapping;
    const char* intrinsic;
  };
  for (const Case& c : {Case{&bf16, kAvx512Bf16Mapping, "llvm.x86.avx512bf16.dpbf16ps.512"},
                        Case{&int8, kAvx512VnniMapping, "llvm.x86.avx512.vpdpbusd.512"}}) {
    absl::StatusOr<SearchSpace> space = kernels::CreateSpace(*c.w, avx512);
    ASSERT_TRUE(space.ok()) << space.status();
    EXPECT_EQ(space->mapping(), c.mapping);
    std::mt19937_64 rng(3);
    const Trace trace = space->Sample(rng);
    absl::StatusOr<ir::LoweredFunc> func = LowerSchedule(*c.w, trace, "k");  // replay by name
    ASSERT_TRUE(func.ok()) << trace.ToString() << ": " << func.status();
    absl::StatusOr<std::string> llvm_ir = codegen::EmitLlvmIr(*func);
    ASSERT_TRUE(llvm_ir.ok()) << llvm_ir.status();
    EXPECT_NE(llvm_ir->find(c.intrinsic), std::string::npos);
    // The fp32 mappings decline low-precision operands.
    for (const MappingVerdict& verdict : ExplainMappings(*c.w, avx512)) {
      EXPECT_EQ(verdict.applies, verdict.mapping == c.mapping)
          << verdict.mapping << ": " << verdict.reason;
    }
    // An AVX2-only machine has no space for bf16, and says why; integers fall back to avx2_int8.
    absl::StatusOr<SearchSpace> avx2 = kernels::CreateSpace(*c.w, Machine({"avx2", "fma"}));
    if (c.w == &bf16) {
      ASSERT_FALSE(avx2.ok());
      EXPECT_NE(avx2.status().message().find("needs CPU feature"), std::string::npos)
          << avx2.status();
      continue;
    }
    ASSERT_TRUE(avx2.ok()) << avx2.status();
    EXPECT_EQ(avx2->mapping(), kAvx2Int8Mapping);
    const Trace fallback = avx2->Sample(rng);
    absl::StatusOr<ir::LoweredFunc> portable = LowerSchedule(*c.w, fallback, "k");
    ASSERT_TRUE(portable.ok()) << fallback.ToString() << ": " << portable.status();
    absl::StatusOr<std::string> portable_ir = codegen::EmitLlvmIr(*portable);
    ASSERT_TRUE(portable_ir.ok()) << portable_ir.status();
    EXPECT_EQ(portable_ir->find("vpdpbusd"), std::string::npos);  // no VNNI on this host
    EXPECT_NE(portable_ir->find("<8 x i32>"), std::string::npos);
    // The fallback stands aside where avx512_vnni runs them.
    const MappingVerdict beside = Avx2Int8Verdict(*c.w, avx512);
    EXPECT_FALSE(beside.applies);
    EXPECT_NE(beside.reason.find("avx512_vnni is present"), std::string::npos) << beside.reason;
    EXPECT_FALSE(Avx2Int8Verdict(*c.w, Machine({"sse4_2"})).applies);
  }
  // An f32 matmul never lands on a low-precision mapping.
  absl::StatusOr<SearchSpace> f32 = kernels::CreateSpace(
      LowpMatMul(1, 64, 48, 40, DType::kF32, DType::kF32, DType::kF32), avx512);
  ASSERT_TRUE(f32.ok()) << f32.status();
  EXPECT_NE(f32->mapping(), kAvx512Bf16Mapping);
  EXPECT_NE(f32->mapping(), kAvx512VnniMapping);
}

TEST(AmxVerdictTest, AppliesWithTheTileFeaturesAndShapesTheTilesTake) {
  const target::HardwareInfo amx = Machine(
      {"avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "amx_tile", "amx_bf16", "amx_int8"});
  const target::HardwareInfo avx512 =
      Machine({"avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni"});
  const ir::Workload bf16 = LowpMatMul(1, 197, 77, 64, DType::kBF16, DType::kBF16, DType::kF32);
  const ir::Workload int8 = LowpMatMul(1, 128, 96, 128, DType::kU8, DType::kI8, DType::kF32, 3);
  MappingVerdict verdict = AmxBf16Verdict(bf16, amx);
  EXPECT_TRUE(verdict.applies) << verdict.reason;
  EXPECT_EQ(verdict.mapping, kAmxBf16Mapping);
  verdict = AmxInt8Verdict(int8, amx);
  EXPECT_TRUE(verdict.applies) << verdict.reason;
  // The vector mappings stay beside them: the tuner measures which wins.
  EXPECT_TRUE(Avx512Bf16Verdict(bf16, amx).applies);
  EXPECT_TRUE(Avx512VnniVerdict(int8, amx).applies);

  verdict = AmxBf16Verdict(bf16, avx512);
  EXPECT_FALSE(verdict.applies);
  EXPECT_NE(verdict.reason.find("amx_tile"), std::string::npos) << verdict.reason;
  verdict = AmxInt8Verdict(int8, Machine({"avx512f", "avx512_vnni", "amx_tile", "amx_bf16"}));
  EXPECT_FALSE(verdict.applies);
  EXPECT_NE(verdict.reason.find("needs CPU feature amx_int8"), std::string::npos) << verdict.reason;
  EXPECT_FALSE(AmxBf16Verdict(int8, amx).applies);
  EXPECT_FALSE(AmxInt8Verdict(bf16, amx).applies);

  // A is read in place in 64-byte tile rows, and a tile has 16 rows.
  verdict = AmxBf16Verdict(LowpMatMul(1, 64, 64, 40, DType::kBF16, DType::kBF16, DType::kF32), amx);
  EXPECT_FALSE(verdict.applies);
  EXPECT_NE(verdict.reason.find("K = 40 is not a multiple of 32"), std::string::npos)
      << verdict.reason;
  verdict = AmxInt8Verdict(LowpMatMul(1, 64, 64, 96, DType::kI8, DType::kI8, DType::kI32), amx);
  EXPECT_FALSE(verdict.applies);
  EXPECT_NE(verdict.reason.find("not a multiple of 64"), std::string::npos) << verdict.reason;
  verdict = AmxBf16Verdict(LowpMatMul(1, 15, 64, 64, DType::kBF16, DType::kBF16, DType::kF32), amx);
  EXPECT_FALSE(verdict.applies);
  EXPECT_NE(verdict.reason.find("M = 15 is below the 16 rows"), std::string::npos)
      << verdict.reason;
}

// An untuned workload exports with the first applicable mapping's default trace: on an AMX host
// that is the AMX mapping's, parallel on a multi-core host, two B tiles per A tile (the
// avx512_bf16 default, first before, ran ViT's out-projection single-threaded ~50x slower).
TEST(AmxSketchTest, AnUntunedWorkloadDefaultsToParallelTilesOnAnAmxHost) {
  const target::HardwareInfo amx = Machine(
      {"avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "amx_tile", "amx_bf16", "amx_int8"});
  const ir::Workload bf16 = LowpMatMul(1, 197, 768, 768, DType::kBF16, DType::kBF16, DType::kF32);
  absl::StatusOr<SearchSpace> space = kernels::CreateSpace(bf16, amx);
  ASSERT_TRUE(space.ok()) << space.status();
  EXPECT_EQ(space->mapping(), kAmxBf16Mapping);
  const schedule::Trace preferred = space->DefaultTrace();
  EXPECT_EQ(preferred.Get("par"), 1) << preferred.ToString();
  EXPECT_EQ(preferred.Get("nr"), 2) << preferred.ToString();
  EXPECT_EQ(preferred.Get("nc"), 64) << preferred.ToString();
  const ir::Workload int8 = LowpMatMul(1, 128, 768, 768, DType::kU8, DType::kI8, DType::kF32, 3);
  absl::StatusOr<SearchSpace> int8_space = kernels::CreateSpace(int8, amx);
  ASSERT_TRUE(int8_space.ok()) << int8_space.status();
  EXPECT_EQ(int8_space->mapping(), kAmxInt8Mapping);
  // Without AMX the vector mapping's default is parallel too; on one core it is serial.
  const target::HardwareInfo avx512 =
      Machine({"avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni"});
  absl::StatusOr<SearchSpace> vector = kernels::CreateSpace(bf16, avx512);
  ASSERT_TRUE(vector.ok()) << vector.status();
  EXPECT_EQ(vector->mapping(), kAvx512Bf16Mapping);
  EXPECT_EQ(vector->DefaultTrace().Get("par"), 1) << vector->DefaultTrace().ToString();
  target::HardwareInfo one_core = amx;
  one_core.cores = 1;
  absl::StatusOr<SearchSpace> serial = kernels::CreateSpace(bf16, one_core);
  ASSERT_TRUE(serial.ok()) << serial.status();
  EXPECT_EQ(serial->DefaultTrace().Get("par"), 0) << serial->DefaultTrace().ToString();
}

TEST(AmxSketchTest, TileRegistersBoundTheBlockAndKernelsCallTheTileInstructions) {
  const target::HardwareInfo amx =
      Machine({"avx2", "fma", "avx512f", "amx_tile", "amx_bf16", "amx_int8"});
  struct Case {
    const LoopSketch* sketch;
    ir::Workload w;
    const char* instruction;
  };
  const std::vector<Case> cases = {
      {&MatMulAmxBf16Sketch(),
       LowpMatMul(1, 128, 768, 768, DType::kBF16, DType::kBF16, DType::kF32), "llvm.x86.tdpbf16ps"},
      {&MatMulAmxInt8Sketch(), LowpMatMul(1, 128, 768, 768, DType::kU8, DType::kI8, DType::kI32),
       "llvm.x86.tdpbusd"},
      {&MatMulAmxInt8Sketch(), LowpMatMul(1, 128, 768, 768, DType::kI8, DType::kI8, DType::kI32),
       "llvm.x86.tdpbssd"},
      {&MatMulAmxInt8Sketch(), LowpMatMul(1, 128, 768, 768, DType::kI8, DType::kU8, DType::kI32),
       "llvm.x86.tdpbsud"},
      {&MatMulAmxInt8Sketch(), LowpMatMul(1, 128, 768, 768, DType::kU8, DType::kU8, DType::kI32),
       "llvm.x86.tdpbuud"}};
  for (const Case& c : cases) {
    ASSERT_TRUE(c.sketch->AppliesTo(c.w));
    KnobValues values;
    for (const Knob& knob : c.sketch->Knobs(c.w, amx)) values.push_back(knob.values.front());
    EXPECT_TRUE(c.sketch->Admits(c.w, amx, values));
    values[0] = 2;  // mr: 2 x 2 C tiles + 2 A + 2 B = 8 tiles, all of them
    values[1] = 2;
    EXPECT_TRUE(c.sketch->Admits(c.w, amx, values));
    values[1] = 3;  // 6 + 2 + 3 = 11 > 8
    EXPECT_FALSE(c.sketch->Admits(c.w, amx, values));
    EXPECT_FALSE(c.sketch->Lower(c.w, values, "k").ok());
    values[1] = 2;
    absl::StatusOr<ir::LoweredFunc> func = c.sketch->Lower(c.w, values, "k");
    ASSERT_TRUE(func.ok()) << func.status();
    EXPECT_NE(ir::ToString(*func).find("tile_matmul."), std::string::npos);
    absl::StatusOr<std::string> llvm_ir = codegen::EmitLlvmIr(*func);
    ASSERT_TRUE(llvm_ir.ok()) << llvm_ir.status();
    for (const char* call : {c.instruction, "llvm.x86.ldtilecfg", "llvm.x86.tileloadd64",
                             "llvm.x86.tilestored64", "llvm.x86.tilerelease"}) {
      EXPECT_NE(llvm_ir->find(call), std::string::npos) << call;
    }
  }
  // The registry offers the AMX mappings beside the vector ones on such a machine.
  const ir::Workload w = cases[0].w;
  absl::StatusOr<std::vector<SearchSpace>> spaces = CreateMappingSpaces(w, amx);
  ASSERT_TRUE(spaces.ok()) << spaces.status();
  bool has_amx = false;
  for (const SearchSpace& space : *spaces) has_amx |= space.mapping() == kAmxBf16Mapping;
  EXPECT_TRUE(has_amx);
}

// "kc" walks K in blocks (partial sums in a scratch C) so a long K's A rows stay in the L2
// cache while the column blocks reuse them; the whole K stays the default, and the sketch
// before the knob ("/v1") still replays its stored traces as the whole K.
TEST(AmxSketchTest, KBlocksAreSearchedAndTheTracesBeforeThemStillReplay) {
  const target::HardwareInfo amx =
      Machine({"avx2", "fma", "avx512f", "amx_tile", "amx_bf16", "amx_int8"});
  const ir::Workload ffn2 = LowpMatMul(1, 197, 768, 9216, DType::kBF16, DType::kBF16, DType::kF32);
  const LoopSketch& sketch = MatMulAmxBf16Sketch();
  EXPECT_STREQ(sketch.Name(), "mm_amx_bf16/v2");
  const std::vector<Knob> knobs = sketch.Knobs(ffn2, amx);
  ASSERT_EQ(knobs.size(), 9u);
  EXPECT_EQ(knobs[7].name, "kc");
  EXPECT_EQ(knobs[7].values, (std::vector<int64_t>{9216, 512, 1024, 1536}));
  EXPECT_EQ(knobs[8].name, "pf");
  EXPECT_EQ(knobs[8].values, (std::vector<int64_t>{0, 1}));
  // int8 (64-value tile rows): BERT's FFN2 K = 3072 gets blocks, K = 768 none (a block is at
  // least 8 tile rows and at most half of K).
  const ir::Workload int8 = LowpMatMul(1, 128, 768, 3072, DType::kU8, DType::kI8, DType::kI32);
  EXPECT_EQ(MatMulAmxInt8Sketch().Knobs(int8, amx)[7].values,
            (std::vector<int64_t>{3072, 512, 1024, 1536}));
  const ir::Workload short_k = LowpMatMul(1, 128, 768, 768, DType::kU8, DType::kI8, DType::kI32);
  EXPECT_EQ(MatMulAmxInt8Sketch().Knobs(short_k, amx)[7].values, (std::vector<int64_t>{768}));
  // A block must divide K in whole tile rows.
  KnobValues values;
  for (const Knob& knob : knobs) values.push_back(knob.values.front());
  // The search starts from K-blocked, prefetching seeds besides the whole-K default: one
  // 384-column panel per core, 2 x 2 tiles, at 1024 and 512; the default's tiles at 512.
  const std::vector<KnobValues> seeds = sketch.Seeds(ffn2, amx, values);
  ASSERT_EQ(seeds.size(), 3u);
  for (const KnobValues& seed : seeds) {
    EXPECT_TRUE(sketch.Admits(ffn2, amx, seed));
    EXPECT_EQ(seed[8], 1);
  }
  EXPECT_EQ(seeds[0][2], 384);
  EXPECT_EQ(seeds[0][7], 1024);
  EXPECT_EQ(seeds[1][2], 384);
  EXPECT_EQ(seeds[1][7], 512);
  EXPECT_EQ(seeds[2][2], values[2]);
  EXPECT_EQ(seeds[2][7], 512);
  EXPECT_TRUE(MatMulAmxInt8Sketch().Seeds(short_k, amx, {}).empty());
  values[7] = 1000;
  absl::StatusOr<ir::LoweredFunc> bad = sketch.Lower(ffn2, values, "k");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("knob 'kc' = 1000"), std::string::npos) << bad.status();
  // A K-blocked kernel accumulates onto its scratch C after the first block.
  values[2] = 384;  // nc: the panel of one core
  values[7] = 1024;
  EXPECT_TRUE(sketch.Admits(ffn2, amx, values));
  absl::StatusOr<ir::LoweredFunc> blocked = sketch.Lower(ffn2, values, "k");
  ASSERT_TRUE(blocked.ok()) << blocked.status();
  const std::string text = ir::ToString(*blocked);
  EXPECT_NE(text.find("accumulate"), std::string::npos);
  EXPECT_NE(text.find("cacc"), std::string::npos);
  EXPECT_EQ(text.find("prefetch="), std::string::npos);
  values[8] = 1;  // pf: each block prefetches its share of the task's next B chunk
  absl::StatusOr<ir::LoweredFunc> prefetching = sketch.Lower(ffn2, values, "k");
  ASSERT_TRUE(prefetching.ok()) << prefetching.status();
  EXPECT_NE(ir::ToString(*prefetching).find("prefetch="), std::string::npos);
  absl::StatusOr<std::string> prefetch_ir = codegen::EmitLlvmIr(*prefetching);
  ASSERT_TRUE(prefetch_ir.ok()) << prefetch_ir.status();
  EXPECT_NE(prefetch_ir->find("llvm.prefetch"), std::string::npos);
  values[4] = 2;  // per-M-block tasks read the same panel next: no prefetch
  EXPECT_FALSE(sketch.Admits(ffn2, amx, values));
  values[4] = 1;
  values[8] = 0;
  absl::StatusOr<std::string> llvm_ir = codegen::EmitLlvmIr(*blocked);
  ASSERT_TRUE(llvm_ir.ok()) << llvm_ir.status();
  // A "/v1" trace (seven knobs, no kc) resolves to the replay-only sketch and lowers to the
  // program of the same knobs with kc = K.
  const std::string knobs_text = "mr=2;nr=2;nc=32;mc=32;par=1;unroll_k=1;pack_b=2";
  absl::StatusOr<Trace> v1 = Trace::Parse("mm_amx_bf16/v1;" + knobs_text);
  absl::StatusOr<Trace> v2 = Trace::Parse("mm_amx_bf16/v2;" + knobs_text + ";kc=9216;pf=0");
  ASSERT_TRUE(v1.ok() && v2.ok());
  absl::StatusOr<ir::LoweredFunc> old_func = LowerSchedule(ffn2, *v1, "k");
  absl::StatusOr<ir::LoweredFunc> new_func = LowerSchedule(ffn2, *v2, "k");
  ASSERT_TRUE(old_func.ok()) << old_func.status();
  ASSERT_TRUE(new_func.ok()) << new_func.status();
  EXPECT_EQ(ir::ToString(*old_func), ir::ToString(*new_func));
  EXPECT_EQ(ir::ToString(*old_func).find("accumulate"), std::string::npos);
  EXPECT_TRUE(ReadsPrepackedInput(*v1));
  std::vector<std::vector<float>> operands = {std::vector<float>(197 * 9216, 0.5f),
                                              std::vector<float>(9216 * 768, 0.25f)};
  EXPECT_TRUE(PackInputsForTrace(ffn2, *v1, &operands).ok());
}

class LowpJitTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    hw_ = new target::HardwareInfo(target::DetectHostCpu());
    absl::StatusOr<std::unique_ptr<codegen::CpuJit>> jit = codegen::CpuJit::Create();
    if (jit.ok()) jit_ = jit->release();
  }
  static void TearDownTestSuite() {
    delete jit_;
    jit_ = nullptr;
    delete hw_;
  }

  /// Skips unless the host can run `mapping`'s kernels.
  bool HostRuns(const ir::Workload& w, bool bf16) {
    if (jit_ == nullptr) return false;
    const MappingVerdict verdict = bf16 ? Avx512Bf16Verdict(w, *hw_) : Avx512VnniVerdict(w, *hw_);
    return verdict.applies;
  }
  /// Whether the host runs AMX kernels (the CPU has the tiles, Linux granted the state).
  bool HostRunsAmx() {
    return jit_ != nullptr &&
           MissingCpuFeatures(*hw_, {"avx512f", "amx_tile", "amx_bf16", "amx_int8"}).empty();
  }

  /// A random admitted knob vector (the defaults for sample 0).
  static KnobValues SampleKnobs(const Sketch& sketch, const ir::Workload& w, std::mt19937_64& rng,
                                bool defaults) {
    const std::vector<Knob> knobs = sketch.Knobs(w, *hw_);
    KnobValues values;
    for (const Knob& knob : knobs) values.push_back(knob.values.front());
    for (int attempt = 0; attempt < 10000 && !defaults; ++attempt) {
      KnobValues candidate;
      for (const Knob& knob : knobs) {
        std::uniform_int_distribution<size_t> pick(0, knob.values.size() - 1);
        candidate.push_back(knob.values[pick(rng)]);
      }
      if (sketch.Admits(w, *hw_, candidate)) return candidate;
    }
    return values;
  }

  /// Lowers `samples` + 1 knob vectors of `w`, runs them and compares with the reference.
  static void CheckKernels(const LoopSketch& sketch, const ir::Workload& w, int samples,
                           uint64_t seed, int64_t force_pack_b = 0, int64_t force_kc = 0,
                           int64_t force_pf = -1) {
    const std::vector<ir::TypedBuffer> inputs = ir::RandomTypedInputs(w, seed);
    const ir::TypedBuffer expected = ir::ComputeTypedReference(w, inputs);
    double rtol, atol;
    ir::DefaultTolerance(w, &rtol, &atol);
    std::mt19937_64 rng(seed);
    for (int sample = 0; sample <= samples; ++sample) {
      KnobValues values = SampleKnobs(sketch, w, rng, sample == 0);
      Trace trace{sketch.Name(), {}};
      const std::vector<std::string> names = sketch.KnobNames();
      for (size_t knob = 0; knob < names.size(); ++knob) {
        if (names[knob] == "pack_b" && force_pack_b != 0) values[knob] = force_pack_b;
        if (names[knob] == "kc" && force_kc != 0) values[knob] = force_kc;
        // Only a pre-packed B is prefetched (pack_b, knob 6, comes before pf).
        if (names[knob] == "pf") {
          if (force_pf >= 0) values[knob] = force_pf;
          if (values[6] != 2) values[knob] = 0;
        }
        trace.decisions.push_back({names[knob], values[knob]});
      }
      std::string knob_text;
      for (int64_t value : values) knob_text += std::to_string(value) + " ";
      SCOPED_TRACE(w.Description() + " knobs " + knob_text);
      absl::StatusOr<ir::LoweredFunc> func = sketch.Lower(w, values, "kernel");
      ASSERT_TRUE(func.ok()) << func.status();
      absl::StatusOr<std::string> llvm_ir = codegen::EmitLlvmIr(*func);
      ASSERT_TRUE(llvm_ir.ok()) << llvm_ir.status();
      absl::StatusOr<codegen::KernelEntry> entry = jit_->Compile(*llvm_ir, "kernel");
      ASSERT_TRUE(entry.ok()) << entry.status();
      std::vector<ir::TypedBuffer> buffers = inputs;
      if (ReadsPrepackedInput(trace)) {  // B in the layout the kernel reads, as exported
        std::vector<std::vector<float>> values_of;
        for (const ir::TypedBuffer& buffer : inputs) values_of.push_back(buffer.ToFloats());
        const absl::Status packed = PackInputsForTrace(w, trace, &values_of);
        ASSERT_TRUE(packed.ok()) << packed;
        ASSERT_NE(values_of[1].size(), static_cast<size_t>(inputs[1].size()) + 1);
        buffers[1] = ir::TypedBuffer::FromValues(w.inputs[1].dtype, values_of[1]);
      }
      ir::TypedBuffer output(w.output.dtype, w.output.NumElements());
      for (int64_t idx = 0; idx < output.size(); ++idx) {  // a sentinel no kernel writes
        output.Set(idx, w.output.dtype == DType::kI32 ? -1234567.0 : NAN);
      }
      std::vector<void*> args;
      for (ir::TypedBuffer& buffer : buffers) args.push_back(buffer.data());
      args.push_back(output.data());
      (*entry)(args.data());
      const absl::Status match = ir::CompareTypedOutputs(expected, output, rtol, atol);
      EXPECT_TRUE(match.ok()) << match;
    }
    ASSERT_TRUE(jit_->Reset().ok());
  }

  static codegen::CpuJit* jit_;
  static target::HardwareInfo* hw_;
};

codegen::CpuJit* LowpJitTest::jit_ = nullptr;
target::HardwareInfo* LowpJitTest::hw_ = nullptr;

struct Shape {
  int64_t batch, m, n, k;
};
const std::vector<Shape> kAwkwardShapes = {{1, 1, 1, 1},      {1, 3, 5, 7},    {1, 77, 197, 33},
                                           {1, 197, 77, 130}, {1, 16, 64, 64}, {3, 5, 33, 9}};

TEST_F(LowpJitTest, Bf16KernelsMatchTheReference) {
  uint64_t seed = 1;
  for (DType out : {DType::kF32, DType::kBF16}) {
    for (const Shape& s : kAwkwardShapes) {
      const ir::Workload w = LowpMatMul(s.batch, s.m, s.n, s.k, DType::kBF16, DType::kBF16, out);
      if (!HostRuns(w, true)) GTEST_SKIP() << "host lacks avx512_bf16: " << hw_->Summary();
      CheckKernels(MatMulBf16Sketch(), w, 6, seed++);
    }
  }
}

TEST_F(LowpJitTest, Bf16KernelsWithEpilogueTransposedBAndSharedB) {
  ir::Workload w = LowpMatMul(1, 45, 70, 99, DType::kBF16, DType::kBF16, DType::kF32);
  w.inputs.push_back({DType::kF32, {70}});  // bias, then relu
  w.epilogue.push_back(
      {ir::EwOp::kAdd, {{ir::Operand::Kind::kAcc, 0, 0}, {ir::Operand::Kind::kInput, 2, 0}}});
  w.epilogue.push_back({ir::EwOp::kRelu, {{ir::Operand::Kind::kValue, 0, 0}}});
  if (!HostRuns(w, true)) GTEST_SKIP() << "host lacks avx512_bf16: " << hw_->Summary();
  CheckKernels(MatMulBf16Sketch(), w, 6, 11);
  CheckKernels(MatMulBf16Sketch(),
               LowpMatMul(1, 31, 50, 21, DType::kBF16, DType::kBF16, DType::kF32, 0, 0, true), 6,
               12);
  CheckKernels(MatMulBf16Sketch(),
               LowpMatMul(4, 9, 40, 17, DType::kBF16, DType::kBF16, DType::kF32, 0, 0, false,
                          /*b_batched=*/false),
               6, 13);
}

/// 8-bit operand types and zero points: every signedness pair, each correction term.
struct IntTypes {
  DType a, b;
  int32_t za, zb;
};
const std::vector<IntTypes> kIntTypes = {{DType::kU8, DType::kI8, 0, 0},
                                         {DType::kU8, DType::kI8, 3, 0},
                                         {DType::kI8, DType::kI8, -5, 7},
                                         {DType::kU8, DType::kU8, 128, 2},
                                         {DType::kI8, DType::kU8, 0, 255}};

TEST_F(LowpJitTest, VnniKernelsMatchTheReferenceExactly) {
  // u8 x s8 is vpdpbusd's own form; the others exercise the sign and zero-point corrections.
  uint64_t seed = 100;
  for (const IntTypes& t : kIntTypes) {
    for (const Shape& s : kAwkwardShapes) {
      const ir::Workload w = LowpMatMul(s.batch, s.m, s.n, s.k, t.a, t.b, DType::kI32, t.za, t.zb);
      if (!HostRuns(w, false)) GTEST_SKIP() << "host lacks avx512_vnni: " << hw_->Summary();
      CheckKernels(MatMulVnniSketch(), w, 4, seed++);
    }
  }
}

// The AVX2 fallback: the same loop nest on 8 lanes with widened products, exact on every sign
// and zero-point combination, the run-time zero point and the f32 epilogue included. Runs on any
// AVX2 host (AVX-512 ones too: the kernels use no AVX-512 instruction).
TEST_F(LowpJitTest, Avx2Int8KernelsMatchTheReferenceExactly) {
  const target::HardwareInfo avx2_only = Machine({"avx2", "fma"});
  if (jit_ == nullptr || !MissingCpuFeatures(*hw_, {"avx2", "fma"}).empty()) {
    GTEST_SKIP() << "host lacks avx2: " << hw_->Summary();
  }
  struct Types {
    DType a, b;
    int32_t za, zb;
  };
  const std::vector<Types> types = {{DType::kU8, DType::kI8, 0, 0},
                                    {DType::kI8, DType::kI8, -5, 7},
                                    {DType::kU8, DType::kU8, 128, 2},
                                    {DType::kI8, DType::kU8, 0, 255}};
  uint64_t seed = 500;
  for (const Types& t : types) {
    for (const Shape& s : kAwkwardShapes) {
      const ir::Workload w = LowpMatMul(s.batch, s.m, s.n, s.k, t.a, t.b, DType::kI32, t.za, t.zb);
      ASSERT_TRUE(Avx2Int8Verdict(w, avx2_only).applies);
      CheckKernels(MatMulAvx2Int8Sketch(), w, 3, seed++);
    }
  }
  ir::Workload dynamic =
      WithZeroPointInput(LowpMatMul(1, 21, 40, 70, DType::kU8, DType::kI8, DType::kF32, 0, -2));
  dynamic.inputs.push_back({DType::kF32, {40}});
  dynamic.epilogue.push_back(
      {ir::EwOp::kMul, {{ir::Operand::Kind::kAcc, 0, 0}, {ir::Operand::Kind::kInput, 3, 0}}});
  ASSERT_TRUE(dynamic.Validate().ok()) << dynamic.Validate();
  CheckKernels(MatMulAvx2Int8Sketch(), dynamic, 4, 600);
  // Signed A with a run-time zero point against unsigned B with one: every correction term.
  CheckKernels(
      MatMulAvx2Int8Sketch(),
      WithZeroPointInput(LowpMatMul(2, 13, 40, 37, DType::kI8, DType::kU8, DType::kI32, 0, 131)), 4,
      601);
}

TEST_F(LowpJitTest, VnniKernelsWithTransposedAndSharedB) {
  const ir::Workload transposed =
      LowpMatMul(1, 19, 45, 67, DType::kI8, DType::kI8, DType::kI32, 1, -1, true);
  if (!HostRuns(transposed, false)) GTEST_SKIP() << "host lacks avx512_vnni: " << hw_->Summary();
  CheckKernels(MatMulVnniSketch(), transposed, 6, 200);
  CheckKernels(MatMulVnniSketch(),
               LowpMatMul(3, 10, 20, 30, DType::kU8, DType::kI8, DType::kI32, 9, 0, false,
                          /*b_batched=*/false),
               6, 201);
}

// B pre-packed (pack_b = 2, the AVX-512 "/v2" sketches' default where one B is shared): the
// kernels read the AMX layout of 16-column tiles as exported, on awkward shapes (K tails, N
// tails, clamped rows), transposed B, a batch sharing B, bf16 and s8 B with zero points.
TEST_F(LowpJitTest, VectorKernelsReadBPrePacked) {
  const ir::Workload bf16 = LowpMatMul(1, 77, 197, 33, DType::kBF16, DType::kBF16, DType::kF32);
  if (!HostRuns(bf16, true)) GTEST_SKIP() << "host lacks avx512_bf16: " << hw_->Summary();
  uint64_t seed = 700;
  for (const Shape& s : kAwkwardShapes) {
    if (s.batch > 1) continue;  // one B per batch element: packed in every call
    CheckKernels(MatMulBf16Sketch(),
                 LowpMatMul(s.batch, s.m, s.n, s.k, DType::kBF16, DType::kBF16, DType::kF32), 3,
                 seed++, /*force_pack_b=*/2);
  }
  CheckKernels(MatMulBf16Sketch(),
               LowpMatMul(1, 31, 50, 21, DType::kBF16, DType::kBF16, DType::kF32, 0, 0, true), 3,
               seed++, 2);
  CheckKernels(MatMulBf16Sketch(),
               LowpMatMul(4, 9, 40, 17, DType::kBF16, DType::kBF16, DType::kF32, 0, 0, false,
                          /*b_batched=*/false),
               3, seed++, 2);
  const ir::Workload int8 = LowpMatMul(1, 19, 45, 67, DType::kI8, DType::kI8, DType::kI32, 1, -1);
  if (!HostRuns(int8, false)) GTEST_SKIP() << "host lacks avx512_vnni: " << hw_->Summary();
  CheckKernels(MatMulVnniSketch(), int8, 4, seed++, 2);
  CheckKernels(MatMulVnniSketch(),
               LowpMatMul(3, 10, 20, 30, DType::kU8, DType::kI8, DType::kI32, 9, 0, false,
                          /*b_batched=*/false),
               4, seed++, 2);
  CheckKernels(MatMulVnniSketch(),
               LowpMatMul(1, 23, 33, 70, DType::kU8, DType::kI8, DType::kI32, 5, 3, true), 4,
               seed++, 2);
}

TEST(LowpSketchTest, VectorSketchesOfferPrePackedBWhereTheKernelReadsItAsStored) {
  const target::HardwareInfo hw = Machine({"avx512f", "avx512_bf16", "avx512_vnni"});
  auto pack_b_values = [&](const LoopSketch& sketch, const ir::Workload& w) {
    const std::vector<std::string> names = sketch.KnobNames();
    const std::vector<Knob> knobs = sketch.Knobs(w, hw);
    for (size_t knob = 0; knob < names.size(); ++knob) {
      if (names[knob] == "pack_b") return knobs[knob].values;
    }
    return std::vector<int64_t>{};
  };
  const ir::Workload shared = LowpMatMul(1, 64, 96, 128, DType::kBF16, DType::kBF16, DType::kF32);
  EXPECT_EQ(pack_b_values(MatMulBf16Sketch(), shared), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(pack_b_values(MatMulBf16Sketch(),
                          LowpMatMul(2, 64, 96, 128, DType::kBF16, DType::kBF16, DType::kF32)),
            (std::vector<int64_t>{1}));  // one B per batch element
  const ir::Workload u8_b = LowpMatMul(1, 64, 96, 128, DType::kU8, DType::kU8, DType::kI32);
  EXPECT_EQ(pack_b_values(MatMulVnniSketch(), u8_b), (std::vector<int64_t>{1}));
  KnobValues values = {4, 2, 64, 64, 1, 2, 2};
  absl::StatusOr<ir::LoweredFunc> refused = MatMulVnniSketch().Lower(u8_b, values, "k");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("bf16 or s8 B only"), std::string::npos)
      << refused.status();
  // A "/v1" trace (six knobs, no pack_b) resolves to the replay-only sketch and lowers to the
  // program of the same knobs with pack_b = 1.
  for (const char* name : {"mm_avx512_bf16", "mm_avx512_vnni"}) {
    const bool bf16 = std::string(name) == "mm_avx512_bf16";
    const ir::Workload w =
        bf16 ? shared : LowpMatMul(1, 64, 96, 128, DType::kU8, DType::kI8, DType::kI32, 3, 0);
    const std::string knobs_text = "mr=4;nr=2;nc=64;mc=64;par=1;unroll_k=2";
    absl::StatusOr<Trace> v1 = Trace::Parse(std::string(name) + "/v1;" + knobs_text);
    absl::StatusOr<Trace> v2 = Trace::Parse(std::string(name) + "/v2;" + knobs_text + ";pack_b=1");
    ASSERT_TRUE(v1.ok() && v2.ok());
    absl::StatusOr<ir::LoweredFunc> old_func = LowerSchedule(w, *v1, "k");
    absl::StatusOr<ir::LoweredFunc> new_func = LowerSchedule(w, *v2, "k");
    ASSERT_TRUE(old_func.ok()) << old_func.status();
    ASSERT_TRUE(new_func.ok()) << new_func.status();
    EXPECT_EQ(ir::ToString(*old_func), ir::ToString(*new_func));
    EXPECT_FALSE(ReadsPrepackedInput(*v1));
  }
}

// ONNX Runtime's dynamic quantization: A's zero point computed per run, the i32 result
// converted to f32 and scaled (by A's scale, then per column by B's) plus a bias in the kernel.
TEST_F(LowpJitTest, VnniKernelsWithARunTimeZeroPointAndAnF32Epilogue) {
  uint64_t seed = 300;
  for (const Shape& s : kAwkwardShapes) {
    ir::Workload w = WithZeroPointInput(
        LowpMatMul(s.batch, s.m, s.n, s.k, DType::kU8, DType::kI8, DType::kF32, 0, -2));
    w.inputs.push_back({DType::kF32, {1}});    // 3: A's scale
    w.inputs.push_back({DType::kF32, {s.n}});  // 4: B's scales, per column
    w.inputs.push_back({DType::kF32, {s.n}});  // 5: bias
    using K = ir::Operand::Kind;
    w.epilogue.push_back({ir::EwOp::kMul, {{K::kAcc, 0, 0}, {K::kInput, 3, 0}}});
    w.epilogue.push_back({ir::EwOp::kMul, {{K::kValue, 0, 0}, {K::kInput, 4, 0}}});
    w.epilogue.push_back({ir::EwOp::kAdd, {{K::kValue, 1, 0}, {K::kInput, 5, 0}}});
    ASSERT_TRUE(w.Validate().ok()) << w.Validate();
    if (!HostRuns(w, false)) GTEST_SKIP() << "host lacks avx512_vnni: " << hw_->Summary();
    CheckKernels(MatMulVnniSketch(), w, 4, seed++);
  }
  // Signed A (its zero point an i8 input) against unsigned B with a zero point: every
  // correction term, including K * za * zb, uses the run-time value.
  const ir::Workload signed_a =
      WithZeroPointInput(LowpMatMul(2, 13, 40, 37, DType::kI8, DType::kU8, DType::kI32, 0, 131));
  ASSERT_TRUE(signed_a.Validate().ok()) << signed_a.Validate();
  CheckKernels(MatMulVnniSketch(), signed_a, 6, 400);
  // The zero point must be one element of A's dtype.
  ir::Workload wrong = signed_a;
  wrong.inputs[2].dtype = DType::kU8;
  EXPECT_FALSE(wrong.Validate().ok());
  EXPECT_FALSE(Avx512VnniVerdict(wrong, *hw_).applies);
}

// AMX: M tails (A tiles clamped to M - 16), N tails (zero-padded panel columns), several K
// steps, batches with per-batch and shared B, transposed B, bf16 output and an epilogue.
const std::vector<Shape> kAmxShapes = {{1, 16, 16, 64}, {1, 197, 77, 128}, {1, 40, 200, 192},
                                       {3, 33, 48, 64}, {1, 128, 96, 256}, {2, 17, 31, 64}};

TEST_F(LowpJitTest, AmxBf16KernelsMatchTheReference) {
  if (!HostRunsAmx()) GTEST_SKIP() << "host lacks AMX (amx_tile, amx_bf16): " << hw_->Summary();
  uint64_t seed = 700;
  for (DType out : {DType::kF32, DType::kBF16}) {
    for (const Shape& s : kAmxShapes) {
      const ir::Workload w = LowpMatMul(s.batch, s.m, s.n, s.k, DType::kBF16, DType::kBF16, out);
      ASSERT_TRUE(AmxBf16Verdict(w, *hw_).applies) << AmxBf16Verdict(w, *hw_).reason;
      CheckKernels(MatMulAmxBf16Sketch(), w, 4, seed++);                // as searched: B pre-packed
      CheckKernels(MatMulAmxBf16Sketch(), w, 1, seed++, /*pack_b=*/1);  // packed in each task
    }
  }
  ir::Workload w = LowpMatMul(1, 45, 70, 96, DType::kBF16, DType::kBF16, DType::kF32);
  w.inputs.push_back({DType::kF32, {70}});  // bias, then relu
  w.epilogue.push_back(
      {ir::EwOp::kAdd, {{ir::Operand::Kind::kAcc, 0, 0}, {ir::Operand::Kind::kInput, 2, 0}}});
  w.epilogue.push_back({ir::EwOp::kRelu, {{ir::Operand::Kind::kValue, 0, 0}}});
  CheckKernels(MatMulAmxBf16Sketch(), w, 5, 720);
  CheckKernels(MatMulAmxBf16Sketch(),
               LowpMatMul(1, 31, 50, 64, DType::kBF16, DType::kBF16, DType::kF32, 0, 0, true), 5,
               721);
  CheckKernels(MatMulAmxBf16Sketch(),
               LowpMatMul(4, 19, 40, 32, DType::kBF16, DType::kBF16, DType::kF32, 0, 0, false,
                          /*b_batched=*/false),
               5, 722);
}

// K blocks (2, 3 and 4 of them: first, middle and last passes) on M and N tails, per-M-block
// tasks, B packed in each task, bf16 output, an epilogue, and int8 with the row sums a B zero
// point needs (computed in the last pass).
TEST_F(LowpJitTest, AmxKBlockedKernelsMatchTheReference) {
  if (!HostRunsAmx()) GTEST_SKIP() << "host lacks AMX (amx_tile, amx_bf16): " << hw_->Summary();
  uint64_t seed = 900;
  for (const int64_t kc : {32, 64}) {
    for (const Shape& s :
         std::vector<Shape>{{1, 197, 77, 128}, {1, 40, 200, 192}, {2, 33, 48, 64}}) {
      if (s.k / kc < 2 && kc != 32) continue;
      for (DType out : {DType::kF32, DType::kBF16}) {
        const ir::Workload w = LowpMatMul(s.batch, s.m, s.n, s.k, DType::kBF16, DType::kBF16, out);
        CheckKernels(MatMulAmxBf16Sketch(), w, 3, seed++, 0, kc);
        CheckKernels(MatMulAmxBf16Sketch(), w, 2, seed++, 0, kc, /*pf=*/1);
        CheckKernels(MatMulAmxBf16Sketch(), w, 1, seed++, /*pack_b=*/1, kc);
      }
    }
  }
  ir::Workload w = LowpMatMul(1, 45, 70, 96, DType::kBF16, DType::kBF16, DType::kF32);
  w.inputs.push_back({DType::kF32, {70}});  // bias, then relu
  w.epilogue.push_back(
      {ir::EwOp::kAdd, {{ir::Operand::Kind::kAcc, 0, 0}, {ir::Operand::Kind::kInput, 2, 0}}});
  w.epilogue.push_back({ir::EwOp::kRelu, {{ir::Operand::Kind::kValue, 0, 0}}});
  CheckKernels(MatMulAmxBf16Sketch(), w, 4, 950, 0, 32);
  CheckKernels(MatMulAmxBf16Sketch(), w, 2, 951, 0, 96, /*pf=*/1);  // whole K, prefetching
  for (const IntTypes& t : kIntTypes) {
    const ir::Workload q = LowpMatMul(1, 50, 40, 192, t.a, t.b, DType::kI32, t.za, t.zb);
    CheckKernels(MatMulAmxInt8Sketch(), q, 2, seed++, 0, 64);
    CheckKernels(MatMulAmxInt8Sketch(), q, 1, seed++, 0, 64, /*pf=*/1);
  }
}

TEST_F(LowpJitTest, AmxInt8KernelsMatchTheReferenceExactly) {
  if (!HostRunsAmx()) GTEST_SKIP() << "host lacks AMX (amx_tile, amx_int8): " << hw_->Summary();
  // Every signedness pair has its own instruction; the zero points their corrections.
  uint64_t seed = 800;
  for (const IntTypes& t : kIntTypes) {
    for (const Shape& s : kAmxShapes) {
      if (s.k % 64 != 0) continue;
      const ir::Workload w = LowpMatMul(s.batch, s.m, s.n, s.k, t.a, t.b, DType::kI32, t.za, t.zb);
      ASSERT_TRUE(AmxInt8Verdict(w, *hw_).applies) << AmxInt8Verdict(w, *hw_).reason;
      CheckKernels(MatMulAmxInt8Sketch(), w, 1, seed++);
      CheckKernels(MatMulAmxInt8Sketch(), w, 0, seed++, /*pack_b=*/1);
    }
  }
  // ONNX Runtime's dynamic quantization: A's zero point at run time, scales and bias in f32.
  ir::Workload dynamic =
      WithZeroPointInput(LowpMatMul(1, 50, 40, 128, DType::kU8, DType::kI8, DType::kF32, 0, -2));
  dynamic.inputs.push_back({DType::kF32, {40}});
  dynamic.epilogue.push_back(
      {ir::EwOp::kMul, {{ir::Operand::Kind::kAcc, 0, 0}, {ir::Operand::Kind::kInput, 3, 0}}});
  ASSERT_TRUE(dynamic.Validate().ok()) << dynamic.Validate();
  CheckKernels(MatMulAmxInt8Sketch(), dynamic, 4, 850);
  CheckKernels(MatMulAmxInt8Sketch(), dynamic, 2, 853, /*pack_b=*/1);
  CheckKernels(
      MatMulAmxInt8Sketch(),
      WithZeroPointInput(LowpMatMul(2, 21, 40, 64, DType::kI8, DType::kU8, DType::kI32, 0, 131)), 4,
      851);
  CheckKernels(MatMulAmxInt8Sketch(),
               LowpMatMul(1, 19, 45, 128, DType::kI8, DType::kI8, DType::kI32, 1, -1, true), 4,
               852);
}

/// Median seconds of `entry` on `args` over a few runs after a warm-up.
double MedianSeconds(codegen::KernelEntry entry, std::vector<void*>& args) {
  entry(args.data());
  std::vector<double> samples;
  for (int run = 0; run < 15; ++run) {
    const auto start = std::chrono::steady_clock::now();
    entry(args.data());
    samples.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

// Informative only (no assertion on time): GFLOP/s (GOP/s for int8) of the best of a few random
// traces of 512^3 per mapping, next to the fp32 mappings. Run with
// --gtest_also_run_disabled_tests --gtest_filter=*Throughput*.
TEST_F(LowpJitTest, DISABLED_Throughput512) {
  std::vector<ir::Workload> workloads = {
      LowpMatMul(1, 512, 512, 512, DType::kF32, DType::kF32, DType::kF32),
      LowpMatMul(1, 512, 512, 512, DType::kBF16, DType::kBF16, DType::kF32),
      LowpMatMul(1, 512, 512, 512, DType::kU8, DType::kI8, DType::kI32)};
  for (const ir::Workload& w : workloads) {
    absl::StatusOr<std::vector<SearchSpace>> spaces = CreateMappingSpaces(w, *hw_);
    if (!spaces.ok()) {
      std::printf("%-28s no mapping on this host: %s\n", w.Description().c_str(),
                  std::string(spaces.status().message()).c_str());
      continue;
    }
    const std::vector<ir::TypedBuffer> inputs = ir::RandomTypedInputs(w, 5);
    for (const SearchSpace& space : *spaces) {
      std::mt19937_64 rng(17);
      double best = 1e30;
      std::string best_trace;
      for (int sample = 0; sample < 24; ++sample) {
        const Trace trace = sample == 0 ? space.DefaultTrace() : space.Sample(rng);
        absl::StatusOr<ir::LoweredFunc> func = LowerSchedule(w, trace, "kernel");
        ASSERT_TRUE(func.ok()) << func.status();
        absl::StatusOr<std::string> llvm_ir = codegen::EmitLlvmIr(*func);
        ASSERT_TRUE(llvm_ir.ok()) << llvm_ir.status();
        absl::StatusOr<codegen::KernelEntry> entry = jit_->Compile(*llvm_ir, "kernel");
        ASSERT_TRUE(entry.ok()) << entry.status();
        std::vector<ir::TypedBuffer> buffers = inputs;
        ir::TypedBuffer output(w.output.dtype, w.output.NumElements());
        std::vector<void*> args;
        for (ir::TypedBuffer& buffer : buffers) args.push_back(buffer.data());
        args.push_back(output.data());
        const double seconds = MedianSeconds(*entry, args);
        if (seconds < best) {
          best = seconds;
          best_trace = trace.ToString();
        }
      }
      std::printf("%-44s %-12s %8.1f G%s/s  %s\n", w.Description().c_str(), space.mapping().c_str(),
                  w.Flops() / best / 1e9, w.inputs[0].dtype == DType::kU8 ? "OP" : "FLOP",
                  best_trace.c_str());
      ASSERT_TRUE(jit_->Reset().ok());
    }
  }
}

}  // namespace
}  // namespace gtco::kernels
