// Export end to end in one process: real ONNX models (tests/data) exported with default schedules,
// the artifact loaded by the runtime and run; the bad-input outcomes of a load and of a run.
#include "common/export/model_export.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/codegen/cuda/nvrtc.h"
#include "common/codegen/llvm/aot.h"
#include "common/codegen/llvm/llvm_codegen.h"
#include "common/ir/conv.h"
#include "common/kernels/registry.h"
#include "common/onnx/mixed_precision.h"
#include "common/target/target.h"
#include "nlohmann/json.hpp"
#include "onnx/onnx_pb.h"
#include "runtime/artifact.h"
#include "runtime/gtco_runtime.h"
#include "runtime/model.h"
#include "runtime/npy.h"
#include "runtime/parallel.h"
#include "runtime/quantize.h"
#include "tests/unit/codegen_cuda/nvrtc_required.h"
#include "tests/unit/export/export_test_util.h"
#include "tests/unit/export/test_graph.h"
#include "tests/unit/scratch_dir.h"

namespace gtco::exporter {
namespace {

using gtco::testing::TestGraph;

std::string ReadModel(const std::string& name) {
  std::ifstream file(std::string(GTCO_SOURCE_DIR) + "/tests/data/" + name, std::ios::binary);
  std::stringstream buffer;
  buffer << file.rdbuf();
  return buffer.str();
}

std::string WriteTemp(const std::string& name, const std::string& bytes) {
  const std::string path = gtco::testing::ScratchPath(name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

/// tests/data/`model` exported for this host with default schedules, written to `file` (in the
/// test's temporary directory) and loaded by the runtime.
absl::StatusOr<std::unique_ptr<runtime::Model>> ExportedForHost(const std::string& model,
                                                                const std::string& file) {
  absl::StatusOr<ExportResult> result =
      ExportModel(ReadModel(model), {}, HostOptions(), kNoRecords);
  if (!result.ok()) return result.status();
  return runtime::Model::Load(WriteTemp(file, result->artifact));
}

/// ExportedForHost with the environment variable `variable` set while it plans and exports (the
/// farm's ablation switches: GTCO_UNFUSED_ATTENTION, GTCO_KEEP_COPIES).
absl::StatusOr<std::unique_ptr<runtime::Model>> ExportedForHostWith(const char* variable,
                                                                    const std::string& model,
                                                                    const std::string& file) {
  setenv(variable, "1", 1);
  absl::StatusOr<std::unique_ptr<runtime::Model>> exported = ExportedForHost(model, file);
  unsetenv(variable);
  return exported;
}

/// Deterministic inputs for every model input (floats in [-1, 1]).
std::vector<std::vector<float>> Inputs(const runtime::Manifest& m) {
  std::vector<std::vector<float>> values;
  for (int index : m.inputs) {
    std::vector<float> data(m.tensors[index].NumElements());
    for (size_t i = 0; i < data.size(); ++i) data[i] = std::sin(0.37 * i + 0.1 * values.size());
    values.push_back(std::move(data));
  }
  return values;
}

std::vector<runtime::HostTensor> Host(const runtime::Manifest& m,
                                      const std::vector<std::vector<float>>& values) {
  std::vector<runtime::HostTensor> host;
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    host.push_back({runtime::ElemType::kF32, m.tensors[m.inputs[i]].shape, values[i].data()});
  }
  return host;
}

/// Every f32 output of `got` within atol + rtol * |want| of `want`'s (same count, same sizes).
void ExpectOutputsNear(const std::vector<runtime::OutputTensor>& got,
                       const std::vector<runtime::OutputTensor>& want, float atol, float rtol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].bytes.size(), want[i].bytes.size());
    const float* x = reinterpret_cast<const float*>(got[i].bytes.data());
    const float* y = reinterpret_cast<const float*>(want[i].bytes.data());
    for (size_t j = 0; j < got[i].bytes.size() / 4; ++j) {
      ASSERT_NEAR(x[j], y[j], atol + rtol * std::fabs(y[j])) << "output " << i << " element " << j;
    }
  }
}

TEST(ModelExportTest, VitAndMlpExportLoadAndRunDeterministically) {
  for (const char* name : {"vit_tiny.onnx", "mlp.onnx", "transformer_block.onnx"}) {
    SCOPED_TRACE(name);
    std::vector<std::string> progress;
    ExportOptions options = HostOptions();
    options.progress = [&](const std::string& line) { progress.push_back(line); };
    absl::StatusOr<ExportResult> result = ExportModel(ReadModel(name), {}, options, kNoRecords);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_GT(result->kernels, 0);
    EXPECT_EQ(result->tuned, 0);
    ASSERT_EQ(result->warnings.size(), static_cast<size_t>(result->kernels));
    EXPECT_NE(result->warnings[0].find("untuned"), std::string::npos);
    EXPECT_FALSE(progress.empty());
    const std::string path = WriteTemp(std::string(name) + ".gtco", result->artifact);
    absl::StatusOr<std::unique_ptr<runtime::Model>> model = runtime::Model::Load(path);
    ASSERT_TRUE(model.ok()) << model.status();
    const runtime::Manifest& m = (*model)->manifest();
    EXPECT_EQ(m.cpu, result->cpu);
    const auto values = Inputs(m);
    absl::StatusOr<std::vector<runtime::OutputTensor>> first = (*model)->Run(Host(m, values));
    ASSERT_TRUE(first.ok()) << first.status();
    absl::StatusOr<std::vector<runtime::OutputTensor>> second = (*model)->Run(Host(m, values));
    ASSERT_TRUE(second.ok()) << second.status();
    ASSERT_EQ(first->size(), m.outputs.size());
    for (size_t i = 0; i < first->size(); ++i) {
      EXPECT_EQ((*first)[i].bytes, (*second)[i].bytes);
      const float* data = reinterpret_cast<const float*>((*first)[i].bytes.data());
      for (size_t j = 0; j < (*first)[i].bytes.size() / 4; ++j) {
        ASSERT_TRUE(std::isfinite(data[j])) << "output " << i << " element " << j;
      }
    }
  }
}

// An export for this host's kind of CPU is scheduled for it (LLVM's tune-cpu, as the farm's JIT
// compiles the kernels it measures): the instructions stay the level's, only their order and
// choice change, so the artifact loads on any host of the level and computes the same outputs.
/// A 96 x 96 x 96 f32 matmul.
ir::Workload MatMulWorkloadForTest() {
  ir::Workload w;
  w.anchor = ir::AnchorKind::kMatMul;
  w.matmul.batch = 1;
  w.matmul.m = w.matmul.n = w.matmul.k = 96;
  w.inputs = {{ir::DType::kF32, {96, 96}}, {ir::DType::kF32, {96, 96}}};
  w.num_anchor_inputs = 2;
  w.output = {ir::DType::kF32, {96, 96}};
  return w;
}

TEST(ModelExportTest, AnExportForThisHostIsScheduledForItsCpu) {
  ExportOptions generic = HostOptions(), scheduled = HostOptions();
  scheduled.tune_for_host = true;
  absl::StatusOr<ExportResult> plain =
      ExportModel(ReadModel("transformer_block.onnx"), {}, generic, kNoRecords);
  absl::StatusOr<ExportResult> tuned =
      ExportModel(ReadModel("transformer_block.onnx"), {}, scheduled, kNoRecords);
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_TRUE(tuned.ok()) << tuned.status();
  EXPECT_EQ(plain->tune_cpu, "");
  EXPECT_EQ(tuned->tune_cpu, codegen::HostTuneCpu());
  EXPECT_FALSE(tuned->tune_cpu.empty());
  EXPECT_EQ(tuned->cpu, plain->cpu);  // the same instruction set level
  absl::StatusOr<std::unique_ptr<runtime::Model>> a =
      runtime::Model::Load(WriteTemp("generic_schedule.gtco", plain->artifact));
  absl::StatusOr<std::unique_ptr<runtime::Model>> b =
      runtime::Model::Load(WriteTemp("host_schedule.gtco", tuned->artifact));
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ((*a)->manifest().features, (*b)->manifest().features);
  // Whether the host's scheduling model orders these kernels differently from the level's
  // generic one depends on the host (LLVM 15 takes an Emerald Rapids for an Ice Lake client, and
  // the code came out the same): that the tuning reaches the code is checked on one kernel
  // scheduled for Zen 3 and for Skylake-X, two models that differ.
  {
    absl::StatusOr<schedule::SearchSpace> space =
        kernels::CreateSpace(MatMulWorkloadForTest(), target::DetectHostCpu());
    ASSERT_TRUE(space.ok()) << space.status();
    absl::StatusOr<ir::LoweredFunc> func =
        kernels::LowerSchedule(MatMulWorkloadForTest(), space->DefaultTrace(), "k");
    ASSERT_TRUE(func.ok()) << func.status();
    absl::StatusOr<std::string> module = codegen::EmitLlvmBitcode(*func);
    ASSERT_TRUE(module.ok()) << module.status();
    absl::StatusOr<codegen::AotTarget> level =
        codegen::AotTargetFor(target::DetectHostCpu().cpu_features, "");
    ASSERT_TRUE(level.ok()) << level.status();
    codegen::AotTarget zen = *level, skylake = *level;
    zen.tune_cpu = "znver3";
    skylake.tune_cpu = "skylake-avx512";
    absl::StatusOr<std::string> zen_code = codegen::CompileSharedObject({*module}, zen);
    absl::StatusOr<std::string> skylake_code = codegen::CompileSharedObject({*module}, skylake);
    ASSERT_TRUE(zen_code.ok()) << zen_code.status();
    ASSERT_TRUE(skylake_code.ok()) << skylake_code.status();
    EXPECT_NE(*zen_code, *skylake_code);
  }
  const runtime::Manifest& m = (*a)->manifest();
  const auto values = Inputs(m);
  absl::StatusOr<std::vector<runtime::OutputTensor>> first = (*a)->Run(Host(m, values));
  absl::StatusOr<std::vector<runtime::OutputTensor>> second = (*b)->Run(Host(m, values));
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(second.ok()) << second.status();
  ASSERT_NO_FATAL_FAILURE(ExpectOutputsNear(*second, *first, 1e-5f, 1e-5f));
}

// A loaded model holds its weights in memory of its own (2 MiB pages advised for large ones,
// runtime/model.cc CopyWeights): overwriting or truncating the artifact file afterwards changes
// nothing in its runs (read through the file mapping, truncation would fault on the next run).
TEST(ModelExportTest, LoadedModelsKeepTheirWeightsWhenTheFileChanges) {
  absl::StatusOr<ExportResult> result =
      ExportModel(ReadModel("transformer_block.onnx"), {}, HostOptions(), kNoRecords);
  ASSERT_TRUE(result.ok()) << result.status();
  const std::string path = WriteTemp("weights_copy.gtco", result->artifact);
  absl::StatusOr<std::unique_ptr<runtime::Model>> model = runtime::Model::Load(path);
  ASSERT_TRUE(model.ok()) << model.status();
  const runtime::Manifest& m = (*model)->manifest();
  const auto values = Inputs(m);
  absl::StatusOr<std::vector<runtime::OutputTensor>> before = (*model)->Run(Host(m, values));
  ASSERT_TRUE(before.ok()) << before.status();
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      << std::string(result->artifact.size(), '\0');
  absl::StatusOr<std::vector<runtime::OutputTensor>> overwritten = (*model)->Run(Host(m, values));
  ASSERT_TRUE(overwritten.ok()) << overwritten.status();
  std::ofstream(path, std::ios::binary | std::ios::trunc);  // now empty
  absl::StatusOr<std::vector<runtime::OutputTensor>> truncated = (*model)->Run(Host(m, values));
  ASSERT_TRUE(truncated.ok()) << truncated.status();
  ASSERT_EQ(before->size(), overwritten->size());
  for (size_t i = 0; i < before->size(); ++i) {
    EXPECT_EQ((*before)[i].bytes, (*overwritten)[i].bytes) << "output " << i;
    EXPECT_EQ((*before)[i].bytes, (*truncated)[i].bytes) << "output " << i;
  }
}

// Profiles rate each kernel against the machine: the manifest carries every kernel's operations
// and minimum traffic (from its workload), and each profiled step reports its kernel's.
TEST(ModelExportTest, ProfilesCarryEachKernelsWorkAndTraffic) {
  absl::StatusOr<std::unique_ptr<runtime::Model>> model =
      ExportedForHost("mlp.onnx", "mlp_profile.gtco");
  ASSERT_TRUE(model.ok()) << model.status();
  const runtime::Manifest& m = (*model)->manifest();
  // fc1: 4 x 32 -> 64 with bias and ReLU; fc2: 4 x 64 -> 16 with bias.
  std::vector<int64_t> matmul_flops;
  for (const runtime::KernelSpec& kernel : m.kernels) {
    EXPECT_GT(kernel.min_bytes, 0) << kernel.description;
    if (kernel.description.rfind("matmul", 0) == 0) matmul_flops.push_back(kernel.flops);
  }
  std::sort(matmul_flops.begin(), matmul_flops.end());
  EXPECT_EQ(matmul_flops,
            (std::vector<int64_t>{2 * 4 * 16 * 64 + 4 * 16, 2 * 4 * 64 * 32 + 2 * 4 * 64}));
  std::vector<runtime::StepTime> profile;
  const auto values = Inputs(m);
  ASSERT_TRUE((*model)->Run(Host(m, values), &profile).ok());
  ASSERT_EQ(profile.size(), m.steps.size());
  for (size_t index = 0; index < profile.size(); ++index) {
    const runtime::StepSpec& step = m.steps[index];
    const int64_t flops = step.kernel >= 0 ? m.kernels[step.kernel].flops : 0;
    EXPECT_EQ(profile[index].flops, flops) << step.node;
    EXPECT_EQ(profile[index].min_bytes, step.kernel >= 0 ? m.kernels[step.kernel].min_bytes : 0);
  }
  // They survive the manifest's JSON; a manifest written before them reads as 0.
  absl::StatusOr<runtime::Manifest> again = runtime::ManifestFromJson(runtime::ManifestToJson(m));
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_EQ(again->kernels.size(), m.kernels.size());
  for (size_t index = 0; index < m.kernels.size(); ++index) {
    EXPECT_EQ(again->kernels[index].flops, m.kernels[index].flops);
    EXPECT_EQ(again->kernels[index].min_bytes, m.kernels[index].min_bytes);
  }
  nlohmann::json older = nlohmann::json::parse(runtime::ManifestToJson(m));
  for (nlohmann::json& kernel : older["kernels"]) {
    kernel.erase("flops");
    kernel.erase("min_bytes");
  }
  absl::StatusOr<runtime::Manifest> before = runtime::ManifestFromJson(older.dump());
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_EQ(before->kernels[0].flops, 0);
  EXPECT_EQ(before->kernels[0].min_bytes, 0);
}

// Found in review: every artifact's code was dlopen'ed from the same /proc/self/fd path, so a
// second model loaded while the first was alive got the first one's library (and kernels).
TEST(ModelExportTest, TwoLoadedModelsRunTheirOwnKernels) {
  absl::StatusOr<ExportResult> vit =
      ExportModel(ReadModel("vit_tiny.onnx"), {}, HostOptions(), kNoRecords);
  absl::StatusOr<ExportResult> block =
      ExportModel(ReadModel("transformer_block.onnx"), {}, HostOptions(), kNoRecords);
  ASSERT_TRUE(vit.ok() && block.ok());
  const std::string vit_path = WriteTemp("two_vit.gtco", vit->artifact);
  const std::string block_path = WriteTemp("two_block.gtco", block->artifact);
  std::vector<char> alone;
  {
    auto model = runtime::Model::Load(vit_path);
    ASSERT_TRUE(model.ok()) << model.status();
    auto out = (*model)->Run(Host((*model)->manifest(), Inputs((*model)->manifest())));
    ASSERT_TRUE(out.ok()) << out.status();
    alone = (*out)[0].bytes;
  }
  auto first = runtime::Model::Load(block_path);
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = runtime::Model::Load(vit_path);
  ASSERT_TRUE(second.ok()) << second.status();
  const runtime::Manifest& m = (*second)->manifest();
  auto out = (*second)->Run(Host(m, Inputs(m)));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].bytes, alone);
  const runtime::Manifest& b = (*first)->manifest();
  EXPECT_TRUE((*first)->Run(Host(b, Inputs(b))).ok());
}

TEST(ModelExportTest, RequireTunedNamesTheUntunedWorkloads) {
  ExportOptions options = HostOptions();
  options.require_tuned = true;
  absl::StatusOr<ExportResult> result = ExportModel(ReadModel("mlp.onnx"), {}, options, kNoRecords);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(result.status().message().find("matmul"), std::string::npos) << result.status();
  EXPECT_NE(result.status().message().find("--require-tuned"), std::string::npos);
}

TEST(ModelExportTest, BadArtifactsAndBadInputsHaveClearErrors) {
  absl::StatusOr<ExportResult> result =
      ExportModel(ReadModel("mlp.onnx"), {}, HostOptions(), kNoRecords);
  ASSERT_TRUE(result.ok()) << result.status();
  const std::string& bytes = result->artifact;
  // Truncated.
  auto truncated =
      runtime::Model::Load(WriteTemp("truncated.gtco", bytes.substr(0, bytes.size() / 2)));
  ASSERT_FALSE(truncated.ok());
  EXPECT_EQ(truncated.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(truncated.status().message().find("truncated"), std::string::npos)
      << truncated.status();
  // One flipped byte in the weights (the last byte of the file).
  std::string flipped = bytes;
  flipped.back() ^= 0x5a;
  auto corrupt = runtime::Model::Load(WriteTemp("corrupt.gtco", flipped));
  ASSERT_FALSE(corrupt.ok());
  EXPECT_EQ(corrupt.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(corrupt.status().message().find("weights section's checksum"), std::string::npos)
      << corrupt.status();
  // Not an artifact at all.
  auto onnx_file = runtime::Model::Load(WriteTemp("model.onnx", ReadModel("mlp.onnx")));
  ASSERT_FALSE(onnx_file.ok());
  EXPECT_EQ(onnx_file.status().code(), absl::StatusCode::kInvalidArgument);
  // Compiled for an instruction set the host lacks: a feature no CPU has.
  absl::StatusOr<runtime::ArtifactView> view = runtime::ReadArtifact(bytes);
  ASSERT_TRUE(view.ok()) << view.status();
  runtime::Manifest manifest = view->manifest;
  manifest.features.push_back("amx_imaginary");
  const std::string foreign =
      runtime::WriteArtifact(manifest, std::string(view->code), std::string(view->weights));
  auto refused = runtime::Model::Load(WriteTemp("foreign.gtco", foreign));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("amx_imaginary"), std::string::npos)
      << refused.status();
  // Wrong shape, wrong dtype, missing input.
  auto model = runtime::Model::Load(WriteTemp("mlp.gtco", bytes));
  ASSERT_TRUE(model.ok()) << model.status();
  const runtime::Manifest& m = (*model)->manifest();
  const auto values = Inputs(m);
  std::vector<runtime::HostTensor> wrong_shape = Host(m, values);
  wrong_shape[0].shape.back() += 1;
  auto run = (*model)->Run(wrong_shape);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(run.status().message().find("input '" + m.tensors[m.inputs[0]].name + "' must be"),
            std::string::npos)
      << run.status();
  std::vector<runtime::HostTensor> wrong_type = Host(m, values);
  wrong_type[0].dtype = runtime::ElemType::kI32;
  EXPECT_EQ((*model)->Run(wrong_type).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*model)->Run({}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ModelExportTest, CApiDescribesAndRunsFromSeveralThreadsAtOnce) {
  absl::StatusOr<ExportResult> result =
      ExportModel(ReadModel("transformer_block.onnx"), {}, HostOptions(), kNoRecords);
  ASSERT_TRUE(result.ok()) << result.status();
  const std::string path = WriteTemp("block_c_api.gtco", result->artifact);
  gtco_model* model = nullptr;
  ASSERT_EQ(gtco_model_load(path.c_str(), &model), GTCO_OK) << gtco_last_error();
  ASSERT_EQ(gtco_model_num_inputs(model), 1);
  ASSERT_EQ(gtco_model_num_outputs(model), 1);
  gtco_tensor_info in{}, out{};
  ASSERT_EQ(gtco_model_input(model, 0, &in), GTCO_OK);
  ASSERT_EQ(gtco_model_output(model, 0, &out), GTCO_OK);
  EXPECT_EQ(in.dtype, GTCO_F32);
  int64_t in_count = 1, out_count = 1;
  for (int d = 0; d < in.rank; ++d) in_count *= in.shape[d];
  for (int d = 0; d < out.rank; ++d) out_count *= out.shape[d];
  std::vector<float> input(in_count);
  for (int64_t i = 0; i < in_count; ++i) input[i] = std::cos(0.01 * i);
  std::vector<float> expected(out_count);
  const void* inputs[] = {input.data()};
  void* outputs[] = {expected.data()};
  ASSERT_EQ(gtco_model_run(model, inputs, outputs), GTCO_OK) << gtco_last_error();
  // Four threads run the same loaded model at once; each gets the single-threaded answer.
  std::vector<std::vector<float>> results(4, std::vector<float>(out_count));
  std::vector<gtco_status> codes(4, GTCO_INTERNAL);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      void* mine[] = {results[t].data()};
      for (int repeat = 0; repeat < 5; ++repeat) {
        codes[t] = gtco_model_run(model, inputs, mine);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < 4; ++t) {
    EXPECT_EQ(codes[t], GTCO_OK);
    EXPECT_EQ(results[t], expected) << "thread " << t;
  }
  // Errors: a bad index, then a missing file with its message.
  EXPECT_EQ(gtco_model_input(model, 5, &in), GTCO_INVALID_ARGUMENT);
  gtco_model_free(model);
  gtco_model* none = nullptr;
  EXPECT_EQ(gtco_model_load("/nonexistent/model.gtco", &none), GTCO_NOT_FOUND);
  EXPECT_NE(std::string(gtco_last_error()).find("cannot open"), std::string::npos);
}

/// `model` run on tests/data/NAME.input.npy computes tests/data/NAME.ort_output.npy (ONNX
/// Runtime 1.20.1's output) within 1e-4 absolute plus 1e-4 relative.
void ExpectOnnxRuntimeReference(runtime::Model& model, const std::string& name) {
  const std::string data = std::string(GTCO_SOURCE_DIR) + "/tests/data/";
  absl::StatusOr<runtime::NpyArray> x = runtime::ReadNpy(data + name + ".input.npy");
  absl::StatusOr<runtime::NpyArray> want = runtime::ReadNpy(data + name + ".ort_output.npy");
  ASSERT_TRUE(x.ok() && want.ok()) << x.status() << want.status();
  absl::StatusOr<std::vector<runtime::OutputTensor>> got =
      model.Run({{x->dtype, x->shape, x->data.data()}});
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ((*got)[0].bytes.size(), want->data.size());
  const float* a = reinterpret_cast<const float*>((*got)[0].bytes.data());
  const float* b = reinterpret_cast<const float*>(want->data.data());
  for (size_t i = 0; i < want->data.size() / 4; ++i) {
    ASSERT_NEAR(a[i], b[i], 1e-4 + 1e-4 * std::abs(b[i])) << "element " << i;
  }
}

// The bundled block's reference output (tests/data/transformer_block.{input,ort_output}.npy, by
// ONNX Runtime 1.20.1), which the GPU checks compare the CUDA artifact with, is what the CPU
// artifact computes.
TEST(ModelExportTest, BundledBlockMatchesItsOnnxRuntimeReference) {
  absl::StatusOr<std::unique_ptr<runtime::Model>> model =
      ExportedForHost("transformer_block.onnx", "block_reference.gtco");
  ASSERT_TRUE(model.ok()) << model.status();
  ExpectOnnxRuntimeReference(**model, "transformer_block");
}

// torchvision's ViT (tests/data/torchvision_vit_tiny.*, two encoder layers, its
// nn.MultiheadAttention as torch exports it): SimplifyDataMovement leaves no copy for the
// transposes that only move a unit axis (the input's [1, S, D] -> [S, 1, D] and back after the
// out-projection), the residual Add after the out-projection is that Gemm's epilogue, each of
// Q, K, V is one strided copy out of the QKV projection (not a slice and a transpose), and the
// artifact still computes ONNX Runtime's output; a corrupt strided step is refused at load.
TEST(ModelExportTest, TorchvisionVitRunsWithoutItsUnitTransposesAndMatchesOnnxRuntime) {
  absl::StatusOr<std::unique_ptr<runtime::Model>> model =
      ExportedForHost("torchvision_vit_tiny.onnx", "torchvision_vit_tiny.gtco");
  ASSERT_TRUE(model.ok()) << model.status();
  const runtime::Manifest& m = (*model)->manifest();
  int transposes = 0;
  for (const runtime::StepSpec& step : m.steps) {
    if (step.op != "transpose") continue;
    ++transposes;
    for (const char* unit : {"self_attention/Transpose", "self_attention/Transpose_5"}) {
      EXPECT_FALSE(absl::EndsWith(step.node, unit)) << step.node << " still copies";
    }
  }
  // The patch embedding's [1, D, P] -> [1, P, D] and per layer the attention output's head
  // transpose; Q, K and V are each sliced out of the QKV projection, reshaped into heads and
  // transposed by one strided copy (no slice steps).
  EXPECT_EQ(transposes, 1 + 2);
  int strided = 0, slices = 0;
  for (const runtime::StepSpec& step : m.steps) {
    strided += step.op == "strided";
    slices += step.op == "slice";
  }
  EXPECT_EQ(strided, 2 * 3);
  EXPECT_EQ(slices, 0);
  int residual_epilogues = 0;
  for (const runtime::KernelSpec& kernel : m.kernels) {
    residual_epilogues += absl::StartsWith(kernel.description, "matmul 1x5x32x32") &&
                          absl::StrContains(kernel.description, "+add+add");
  }
  EXPECT_GE(residual_epilogues, 1) << "the out-projection's bias and residual in one kernel";
  ExpectOnnxRuntimeReference(**model, "torchvision_vit_tiny");
  // Planned unfused (the ablation switch), the query's scale by 1/8 runs after Q K^T, in that
  // batched matmul's epilogue, not as a kernel of its own.
  absl::StatusOr<std::unique_ptr<runtime::Model>> unfused = ExportedForHostWith(
      "GTCO_UNFUSED_ATTENTION", "torchvision_vit_tiny.onnx", "torchvision_vit_tiny_unfused.gtco");
  ASSERT_TRUE(unfused.ok()) << unfused.status();
  int scaled_scores = 0;
  for (const runtime::KernelSpec& kernel : (*unfused)->manifest().kernels) {
    SCOPED_TRACE(kernel.description);
    EXPECT_FALSE(absl::StartsWith(kernel.description, "elementwise") &&
                 absl::StrContains(kernel.description, "div"));
    scaled_scores += absl::StartsWith(kernel.description, "matmul 2x5x5x16") &&
                     absl::StrContains(kernel.description, "+div");
  }
  EXPECT_EQ(scaled_scores, 1);
  ExpectOnnxRuntimeReference(**unfused, "torchvision_vit_tiny");
  // The ablation switch keeps the copies as torch wrote them: slices, unit transposes, no
  // strided steps; the same output.
  absl::StatusOr<std::unique_ptr<runtime::Model>> kept = ExportedForHostWith(
      "GTCO_KEEP_COPIES", "torchvision_vit_tiny.onnx", "torchvision_vit_tiny_kept.gtco");
  ASSERT_TRUE(kept.ok()) << kept.status();
  int kept_slices = 0, kept_transposes = 0;
  for (const runtime::StepSpec& step : (*kept)->manifest().steps) {
    EXPECT_NE(step.op, "strided");
    kept_slices += step.op == "slice";
    kept_transposes += step.op == "transpose";
  }
  EXPECT_EQ(kept_slices, 2 * 3);
  EXPECT_GT(kept_transposes, transposes + 2 * 3);
  ExpectOnnxRuntimeReference(**kept, "torchvision_vit_tiny");
  // A strided step whose view reaches past its input (base or stride) is refused at load.
  absl::StatusOr<ExportResult> result =
      ExportModel(ReadModel("torchvision_vit_tiny.onnx"), {}, HostOptions(), kNoRecords);
  ASSERT_TRUE(result.ok()) << result.status();
  absl::StatusOr<runtime::ArtifactView> view = runtime::ReadArtifact(result->artifact);
  ASSERT_TRUE(view.ok()) << view.status();
  for (const int field : {0, 1}) {
    runtime::Manifest manifest = view->manifest;
    auto step = std::find_if(manifest.steps.begin(), manifest.steps.end(),
                             [](const runtime::StepSpec& s) { return s.op == "strided"; });
    ASSERT_NE(step, manifest.steps.end());
    step->params[field] += manifest.tensors[step->inputs[0]].NumElements();
    auto refused = runtime::Model::Load(WriteTemp(
        "strided_out_of_bounds.gtco",
        runtime::WriteArtifact(manifest, std::string(view->code), std::string(view->weights))));
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find("(strided): the view leaves the input"),
              std::string::npos)
        << refused.status();
  }
}

// --target cuda: NVRTC compiles every kernel and the data-movement steps to SASS for the
// requested architecture (no GPU needed); the artifact describes their launches, and a host
// without an NVIDIA driver refuses to run it, saying why. (On a GPU, integration.cuda runs one.)
TEST(ModelExportTest, CudaArtifactsCarryCubinsAndNeedAGpu) {
  GTCO_REQUIRE_NVRTC();  // fails where a CUDA build cannot load NVRTC; skips without CUDA
  for (const char* arch : {"sm_80", "sm_90"}) {
    SCOPED_TRACE(arch);
    ExportOptions options;
    options.target = target::Target::kCuda;
    options.cuda_arch = arch;
    absl::StatusOr<ExportResult> result =
        ExportModel(ReadModel("transformer_block.onnx"), {}, options, kNoRecords);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->cpu, arch);
    EXPECT_GT(result->kernels, 0);
    absl::StatusOr<runtime::ArtifactView> view = runtime::ReadArtifact(result->artifact);
    ASSERT_TRUE(view.ok()) << view.status();
    const runtime::Manifest& m = view->manifest;
    EXPECT_EQ(m.target, "cuda");
    EXPECT_EQ(m.cuda_arch, arch);
    auto is_elf = [&](int64_t offset, int64_t bytes) {
      return bytes > 4 && view->code.substr(offset, 4) == std::string_view(
                                                              "\x7f"
                                                              "ELF",
                                                              4);
    };
    EXPECT_TRUE(is_elf(m.data_cubin_offset, m.data_cubin_bytes));
    ASSERT_EQ(m.kernels.size(), static_cast<size_t>(result->kernels));
    for (const runtime::KernelSpec& kernel : m.kernels) {
      SCOPED_TRACE(kernel.description);
      EXPECT_TRUE(is_elf(kernel.cubin_offset, kernel.cubin_bytes));
      EXPECT_GE(kernel.grid[0] * kernel.grid[1] * kernel.grid[2], 1);
      EXPECT_GE(kernel.block[0] * kernel.block[1] * kernel.block[2], 32);
    }
    // The manifest round-trips through its JSON with the launches intact.
    absl::StatusOr<runtime::Manifest> again = runtime::ManifestFromJson(runtime::ManifestToJson(m));
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(again->kernels[0].grid, m.kernels[0].grid);
    EXPECT_EQ(again->kernels[0].cubin_bytes, m.kernels[0].cubin_bytes);
    // Without a GPU, or on one of another architecture, loading says what is missing.
    const std::string path = WriteTemp(std::string("block_") + arch + ".gtco", result->artifact);
    absl::StatusOr<std::unique_ptr<runtime::Model>> model = runtime::Model::Load(path);
    if (model.ok()) continue;  // a GPU that runs it: integration.cuda checks its outputs
    EXPECT_EQ(model.status().code(), absl::StatusCode::kFailedPrecondition) << model.status();
    const std::string message(model.status().message());
    EXPECT_TRUE(message.find("NVIDIA GPU") != std::string::npos ||
                message.find("export it for sm_") != std::string::npos)
        << model.status();
  }
  // An architecture GTCO does not compile for is refused before any work.
  ExportOptions old;
  old.target = target::Target::kCuda;
  old.cuda_arch = "sm_70";
  absl::StatusOr<ExportResult> refused =
      ExportModel(ReadModel("transformer_block.onnx"), {}, old, kNoRecords);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << refused.status();
}

/// A small ResNet-like model built with the ONNX protobuf API (opset 17): a 7x7 s2 p3 stem conv
/// with bias and ReLU, a 3x3 s2 p1 max pool, a basic block (two 3x3 convs, the residual add,
/// ReLU), a depthwise 3x3 conv, a strided 1x1 downsample conv, an average pool, global average
/// pool, Flatten and a Gemm classifier. Weights are deterministic.
std::string ResNetLikeModel() {
  TestGraph g("resnet_like");
  g.Input("image", {1, 3, 40, 40});
  g.Conv("stem", "image", "stem_c", 3, 16, 7, 2, 3);
  g.Node("Relu", "stem_relu", {"stem_c"}, "stem_r");
  ::onnx::NodeProto* pool = g.Node("MaxPool", "pool", {"stem_r"}, "pool");
  TestGraph::Ints(pool, "kernel_shape", {3, 3});
  TestGraph::Ints(pool, "strides", {2, 2});
  TestGraph::Ints(pool, "pads", {1, 1, 1, 1});
  g.Conv("a1", "pool", "a1_c", 16, 16, 3, 1, 1);
  g.Node("Relu", "a1_relu", {"a1_c"}, "a1_r");
  g.Conv("a2", "a1_r", "a2_c", 16, 16, 3, 1, 1);
  g.Node("Add", "a_add", {"a2_c", "pool"}, "a_sum");
  g.Node("Relu", "a_relu", {"a_sum"}, "a");
  g.Conv("dw", "a", "dw_c", 16, 16, 3, 1, 1, /*group=*/16);
  g.Conv("down", "dw_c", "down_c", 16, 32, 1, 2, 0);
  ::onnx::NodeProto* average = g.Node("AveragePool", "avg", {"down_c"}, "avg");
  TestGraph::Ints(average, "kernel_shape", {2, 2});
  TestGraph::Ints(average, "strides", {1, 1});
  g.Node("GlobalAveragePool", "gap", {"avg"}, "gap");
  g.Node("Flatten", "flatten", {"gap"}, "flat");
  g.Weight("fc_w", {10, 32});
  g.Weight("fc_b", {10});
  ::onnx::NodeProto* fc = g.Node("Gemm", "fc", {"flat", "fc_w", "fc_b"}, "logits");
  ::onnx::AttributeProto* trans_b = fc->add_attribute();
  trans_b->set_name("transB");
  trans_b->set_type(::onnx::AttributeProto::INT);
  trans_b->set_i(1);
  g.Output("logits", {1, 10});
  return g.Bytes();
}

// A channel-vectorized conv schedule (output channels in the vector lanes) reads its weights
// pre-packed: the exporter stores each conv's constant weights in the trace's panels, and the
// model computes what the default (pixel-vectorized) schedules compute. Where a weight is not
// one kernel's own constant (here two convs share one), those kernels pack it at run time
// (pack_b=1) and compute the same.
TEST(ModelExportTest, ChannelVectorizedConvsReadPrepackedOrRuntimePackedWeights) {
  const target::HardwareInfo host = target::DetectHostCpu();
  if (!host.HasFeature("avx2") || !host.HasFeature("fma")) {
    GTEST_SKIP() << "the channel-vectorized conv needs avx2+fma: " << host.Summary();
  }
  const std::string mapping =
      host.HasFeature("avx512f") ? "avx512_fma_channels" : "avx2_fma_channels";
  const ScheduleLookup channels =
      [&](const ir::Workload& w,
          const std::string&) -> absl::StatusOr<std::optional<ChosenSchedule>> {
    absl::StatusOr<schedule::SearchSpace> space = kernels::CreateSpaceForMapping(w, host, mapping);
    if (!space.ok()) return std::nullopt;  // depthwise, pools, the classifier
    ChosenSchedule chosen;
    chosen.trace = space->DefaultTrace();
    chosen.mapping = mapping;
    return chosen;
  };
  for (const bool shared : {false, true}) {
    SCOPED_TRACE(shared ? "the block's two convs share a weight" : "one weight per conv");
    std::string bytes = ResNetLikeModel();
    if (shared) {
      ::onnx::ModelProto model;
      ASSERT_TRUE(model.ParseFromString(bytes));
      for (::onnx::NodeProto& node : *model.mutable_graph()->mutable_node()) {
        if (node.name() == "a2") node.set_input(1, "a1_w");
      }
      bytes = model.SerializeAsString();
    }
    absl::StatusOr<ExportResult> plain = ExportModel(bytes, {}, HostOptions(), kNoRecords);
    ASSERT_TRUE(plain.ok()) << plain.status();
    absl::StatusOr<ExportResult> packed = ExportModel(bytes, {}, HostOptions(), channels);
    ASSERT_TRUE(packed.ok()) << packed.status();
    const std::string tag = shared ? "shared" : "own";
    absl::StatusOr<std::unique_ptr<runtime::Model>> reference =
        runtime::Model::Load(WriteTemp("plain_" + tag + ".gtco", plain->artifact));
    ASSERT_TRUE(reference.ok()) << reference.status();
    absl::StatusOr<std::unique_ptr<runtime::Model>> model =
        runtime::Model::Load(WriteTemp("channels_" + tag + ".gtco", packed->artifact));
    ASSERT_TRUE(model.ok()) << model.status();
    int prepacked = 0, packed_at_run_time = 0;
    for (const runtime::KernelSpec& kernel : (*model)->manifest().kernels) {
      if (kernel.mapping != mapping) continue;
      prepacked += kernel.trace.find("pack_b=2") != std::string::npos ? 1 : 0;
      packed_at_run_time += kernel.trace.find("pack_b=1") != std::string::npos ? 1 : 0;
    }
    // The stem, the block's two 3x3 convs, the downsample.
    EXPECT_EQ(prepacked, shared ? 2 : 4);
    EXPECT_EQ(packed_at_run_time, shared ? 2 : 0);
    const runtime::Manifest& m = (*model)->manifest();
    ASSERT_EQ(m.inputs.size(), (*reference)->manifest().inputs.size());
    const auto values = Inputs(m);
    absl::StatusOr<std::vector<runtime::OutputTensor>> expected =
        (*reference)->Run(Host((*reference)->manifest(), values));
    ASSERT_TRUE(expected.ok()) << expected.status();
    absl::StatusOr<std::vector<runtime::OutputTensor>> actual = (*model)->Run(Host(m, values));
    ASSERT_TRUE(actual.ok()) << actual.status();
    const auto* want = reinterpret_cast<const float*>((*expected)[0].bytes.data());
    const auto* got = reinterpret_cast<const float*>((*actual)[0].bytes.data());
    ASSERT_EQ((*expected)[0].bytes.size(), (*actual)[0].bytes.size());
    for (size_t i = 0; i < (*actual)[0].bytes.size() / 4; ++i) {
      EXPECT_NEAR(got[i], want[i], 1e-4 * (1.0 + std::fabs(want[i]))) << "logit " << i;
    }
  }
}

// Convolutional models export for CUDA: every conv (stem, 3x3, depthwise, downsample, the ViTs'
// patch embeddings) and pool gets a CUDA kernel compiled to a cubin with its launch in the
// manifest. Where a GPU runs the artifact, its logits match the CPU artifact's.
TEST(ModelExportTest, ConvolutionalModelsExportForCuda) {
  GTCO_REQUIRE_NVRTC();  // fails where a CUDA build cannot load NVRTC; skips without CUDA
  const std::string resnet = ResNetLikeModel();
  for (const auto& [name, bytes] : std::vector<std::pair<std::string, std::string>>{
           {"resnet_like", resnet},
           {"vit_tiny", ReadModel("vit_tiny.onnx")},
           {"torchvision_vit_tiny", ReadModel("torchvision_vit_tiny.onnx")}}) {
    for (const char* arch : {"sm_80", "sm_90"}) {
      SCOPED_TRACE(name + " " + arch);
      ExportOptions options;
      options.target = target::Target::kCuda;
      options.cuda_arch = arch;
      absl::StatusOr<ExportResult> result = ExportModel(bytes, {}, options, kNoRecords);
      ASSERT_TRUE(result.ok()) << result.status();
      absl::StatusOr<runtime::ArtifactView> view = runtime::ReadArtifact(result->artifact);
      ASSERT_TRUE(view.ok()) << view.status();
      const runtime::Manifest& m = view->manifest;
      int convs = 0, pools = 0;
      for (const runtime::KernelSpec& kernel : m.kernels) {
        SCOPED_TRACE(kernel.description);
        EXPECT_GT(kernel.cubin_bytes, 4);
        EXPECT_EQ(view->code.substr(kernel.cubin_offset, 4), std::string_view("\x7f"
                                                                              "ELF",
                                                                              4));
        EXPECT_GE(kernel.grid[0] * kernel.grid[1] * kernel.grid[2], 1);
        EXPECT_GE(kernel.block[0] * kernel.block[1] * kernel.block[2], 32);
        if (kernel.description.rfind("conv", 0) == 0) ++convs;
        if (kernel.description.find("pool ") != std::string::npos) ++pools;
      }
      if (name == "resnet_like") {
        EXPECT_EQ(convs, 5);  // stem, a1, a2, depthwise, downsample (subsampled, then 1x1)
        EXPECT_EQ(pools, 2);  // max and average
      } else {
        EXPECT_GE(convs, 1);  // the patch embedding
      }
      const std::string path = WriteTemp(name + "_" + arch + ".gtco", result->artifact);
      absl::StatusOr<std::unique_ptr<runtime::Model>> gpu = runtime::Model::Load(path);
      if (!gpu.ok()) {
        EXPECT_EQ(gpu.status().code(), absl::StatusCode::kFailedPrecondition) << gpu.status();
        continue;  // no GPU here (or not this architecture): compiled is all that is checked
      }
      // On a GPU: the same inputs through the CPU artifact give the same outputs.
      absl::StatusOr<ExportResult> cpu = ExportModel(bytes, {}, HostOptions(), kNoRecords);
      ASSERT_TRUE(cpu.ok()) << cpu.status();
      absl::StatusOr<std::unique_ptr<runtime::Model>> host =
          runtime::Model::Load(WriteTemp(name + "_cpu.gtco", cpu->artifact));
      ASSERT_TRUE(host.ok()) << host.status();
      const auto values = Inputs((*host)->manifest());
      absl::StatusOr<std::vector<runtime::OutputTensor>> expected =
          (*host)->Run(Host((*host)->manifest(), values));
      absl::StatusOr<std::vector<runtime::OutputTensor>> actual =
          (*gpu)->Run(Host((*gpu)->manifest(), values));
      ASSERT_TRUE(expected.ok()) << expected.status();
      ASSERT_TRUE(actual.ok()) << actual.status();
      // TF32 tensor cores (the default conv mapping) keep 10 mantissa bits.
      ASSERT_NO_FATAL_FAILURE(ExpectOutputsNear(*actual, *expected, 2e-2f, 2e-2f));
      // The first run recorded the steps as a CUDA graph; later runs replay it. Replays of new
      // inputs must give what launching step by step (GTCO_CUDA_GRAPHS=0) gives, bit for bit.
      auto shifted = values;
      for (auto& input : shifted) {
        for (float& value : input) value = 0.5f * value + 0.25f;
      }
      absl::StatusOr<std::vector<runtime::OutputTensor>> replayed =
          (*gpu)->Run(Host((*gpu)->manifest(), shifted));
      ASSERT_TRUE(replayed.ok()) << replayed.status();
      absl::StatusOr<std::vector<runtime::OutputTensor>> again =
          (*gpu)->Run(Host((*gpu)->manifest(), values));
      ASSERT_TRUE(again.ok()) << again.status();
      ::setenv("GTCO_CUDA_GRAPHS", "0", 1);
      absl::StatusOr<std::unique_ptr<runtime::Model>> stepwise = runtime::Model::Load(path);
      ASSERT_TRUE(stepwise.ok()) << stepwise.status();
      absl::StatusOr<std::vector<runtime::OutputTensor>> direct =
          (*stepwise)->Run(Host((*stepwise)->manifest(), shifted));
      ::unsetenv("GTCO_CUDA_GRAPHS");
      ASSERT_TRUE(direct.ok()) << direct.status();
      for (size_t i = 0; i < actual->size(); ++i) {
        EXPECT_EQ((*again)[i].bytes, (*actual)[i].bytes) << "output " << i;
        EXPECT_EQ((*replayed)[i].bytes, (*direct)[i].bytes) << "output " << i;
        EXPECT_NE((*replayed)[i].bytes, (*actual)[i].bytes) << "output " << i;
      }
    }
  }
}

// The runtime's f32 -> bf16 cast: nearest, ties to even, NaN kept quiet, infinities kept; a
// tensor split over threads gives what one thread gives; the bf16 -> f32 cast back is exact.
TEST(ModelExportTest, CastToBf16RoundsToNearestEven) {
  auto f = [](uint32_t bits) {
    float value;
    std::memcpy(&value, &bits, 4);
    return value;
  };
  const std::vector<float> x = {1.0f,          f(0x3f808000), f(0x3f818000), f(0x3f808001), -2.5f,
                                f(0x7f800000), f(0xff800000), f(0x7f800001), f(0x7f7fffff), 0.0f};
  std::vector<uint16_t> y(x.size());
  runtime::CastF32ToBf16(x.data(), static_cast<int64_t>(x.size()), y.data());
  EXPECT_EQ(y, (std::vector<uint16_t>{0x3f80, 0x3f80, 0x3f82, 0x3f81, 0xc020, 0x7f80, 0xff80,
                                      0x7fc0, 0x7f80, 0x0000}))
      << "ties go to even (0x3f808000 down, 0x3f818000 up); the largest float rounds to inf";
  std::vector<float> big(100003);
  for (size_t i = 0; i < big.size(); ++i) big[i] = std::sin(0.001f * i) * 7.0f;
  std::vector<uint16_t> one(big.size()), two(big.size());
  runtime::SetParallelThreads(1);
  runtime::CastF32ToBf16(big.data(), static_cast<int64_t>(big.size()), one.data());
  runtime::SetParallelThreads(2);
  runtime::CastF32ToBf16(big.data(), static_cast<int64_t>(big.size()), two.data());
  runtime::SetParallelThreads(0);
  EXPECT_EQ(one, two);
  // And back: bf16 -> f32 is exact (the bits become the high half), over threads too.
  std::vector<float> back_f32(one.size());
  runtime::CastBf16ToF32(one.data(), static_cast<int64_t>(one.size()), back_f32.data());
  for (size_t i = 0; i < one.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &back_f32[i], 4);
    ASSERT_EQ(bits, static_cast<uint32_t>(one[i]) << 16) << i;
  }
  std::vector<float> odd(y.size());
  runtime::CastBf16ToF32(y.data(), static_cast<int64_t>(y.size()), odd.data());
  EXPECT_EQ(odd[0], 1.0f);
  EXPECT_EQ(odd[4], -2.5f);
  EXPECT_TRUE(std::isinf(odd[5]) && odd[5] > 0);
  EXPECT_TRUE(std::isnan(odd[7]));
  for (size_t i = 0; i < big.size(); i += 997) {
    uint32_t bits = static_cast<uint32_t>(one[i]) << 16;
    float back;
    std::memcpy(&back, &bits, 4);
    EXPECT_LE(std::fabs(back - big[i]), std::fabs(big[i]) * (1.0f / 256)) << i;
  }
}

// The runtime's bf16x3 split: per row [hi | lo | hi], hi and lo exactly what the rewrite's
// literal nodes compute (Cast, Cast back, Sub, Cast) for finite values; where hi is inf or NaN
// lo is +0 (the literal lo would be NaN); rows split over threads as one thread splits them.
TEST(ModelExportTest, SplitToBf16x3IsTheRewritesCastsAndSubInOnePass) {
  auto f = [](uint32_t bits) {
    float value;
    std::memcpy(&value, &bits, 4);
    return value;
  };
  auto literal = [](float x, uint16_t* high, uint16_t* low) {
    runtime::CastF32ToBf16(&x, 1, high);
    const uint32_t bits = static_cast<uint32_t>(*high) << 16;
    float back;
    std::memcpy(&back, &bits, 4);
    const float rest = x - back;
    runtime::CastF32ToBf16(&rest, 1, low);
  };
  const std::vector<float> row = {1.0f, f(0x3f808001), -2.718281f, 1e-30f, 3.0e38f, 0.1f};
  std::vector<uint16_t> split(3 * row.size());
  runtime::SplitF32ToBf16x3(row.data(), 1, static_cast<int64_t>(row.size()), split.data());
  const size_t k = row.size();
  for (size_t i = 0; i < k; ++i) {
    uint16_t high = 0, low = 0;
    literal(row[i], &high, &low);
    EXPECT_EQ(split[i], high) << i;
    EXPECT_EQ(split[k + i], low) << i;
    EXPECT_EQ(split[2 * k + i], high) << i;
  }
  EXPECT_NE(split[k + 2], 0) << "-e's residual is not representable in one bf16";
  const std::vector<float> odd = {f(0x7f800000), f(0xff800000), f(0x7f800001), f(0x7f7fffff)};
  std::vector<uint16_t> odd_split(3 * odd.size());
  runtime::SplitF32ToBf16x3(odd.data(), 1, static_cast<int64_t>(odd.size()), odd_split.data());
  EXPECT_EQ(odd_split, (std::vector<uint16_t>{0x7f80, 0xff80, 0x7fc0, 0x7f80, 0, 0, 0, 0, 0x7f80,
                                              0xff80, 0x7fc0, 0x7f80}))
      << "inf, -inf, NaN and the largest float (rounded to inf) keep their high part alone";
  // 197 rows of 768: several chunks on two threads.
  const int64_t rows = 197, width = 768;
  std::vector<float> big(rows * width);
  for (size_t i = 0; i < big.size(); ++i) big[i] = std::sin(0.001f * i) * 7.0f;
  std::vector<uint16_t> one(3 * big.size()), two(3 * big.size());
  runtime::SetParallelThreads(1);
  runtime::SplitF32ToBf16x3(big.data(), rows, width, one.data());
  runtime::SetParallelThreads(2);
  runtime::SplitF32ToBf16x3(big.data(), rows, width, two.data());
  runtime::SetParallelThreads(0);
  EXPECT_EQ(one, two);
  for (int64_t r = 0; r < rows; r += 17) {
    for (int64_t c = 0; c < width; c += 31) {
      uint16_t high = 0, low = 0;
      literal(big[r * width + c], &high, &low);
      ASSERT_EQ(one[r * 3 * width + c], high) << r << "," << c;
      ASSERT_EQ(one[r * 3 * width + width + c], low) << r << "," << c;
      ASSERT_EQ(one[r * 3 * width + 2 * width + c], high) << r << "," << c;
    }
  }
}

// --precision bf16x3 exported (default schedules) and run: each activation split in one step, no
// casts, and the bundled block within 3e-5 of ONNX Runtime's largest fp32 output (1.4e-6 on an
// Emerald Rapids), where one bf16 product (--precision bf16: 6.7e-4 there) is not.
TEST(ModelExportTest, Bf16x3ExportRunsNearOnnxRuntimesFp32Output) {
  const target::HardwareInfo host = target::DetectHostCpu();
  if (std::find(host.cpu_features.begin(), host.cpu_features.end(), "avx512_bf16") ==
      host.cpu_features.end()) {
    GTEST_SKIP() << "the bf16 matmul kernels need avx512_bf16";
  }
  const std::string data = std::string(GTCO_SOURCE_DIR) + "/tests/data/";
  absl::StatusOr<runtime::NpyArray> x = runtime::ReadNpy(data + "transformer_block.input.npy");
  absl::StatusOr<runtime::NpyArray> want =
      runtime::ReadNpy(data + "transformer_block.ort_output.npy");
  ASSERT_TRUE(x.ok() && want.ok()) << x.status() << want.status();
  const float* b = reinterpret_cast<const float*>(want->data.data());
  const size_t count = want->data.size() / 4;
  float largest = 0;
  for (size_t i = 0; i < count; ++i) largest = std::max(largest, std::fabs(b[i]));
  double worst[2] = {0, 0};
  for (const onnx::Bf16Precision precision :
       {onnx::Bf16Precision::kBf16x3, onnx::Bf16Precision::kBf16}) {
    SCOPED_TRACE(onnx::Bf16PrecisionName(precision));
    absl::StatusOr<onnx::Bf16Rewrite> rewritten =
        onnx::RewriteMatMulsToBf16(ReadModel("transformer_block.onnx"), precision);
    ASSERT_TRUE(rewritten.ok()) << rewritten.status();
    absl::StatusOr<ExportResult> result =
        ExportModel(rewritten->model_bytes, {}, HostOptions(), kNoRecords);
    ASSERT_TRUE(result.ok()) << result.status();
    absl::StatusOr<std::unique_ptr<runtime::Model>> model = runtime::Model::Load(WriteTemp(
        absl::StrCat("block_", onnx::Bf16PrecisionName(precision), ".gtco"), result->artifact));
    ASSERT_TRUE(model.ok()) << model.status();
    int splits = 0, casts = 0;
    for (const runtime::StepSpec& step : (*model)->manifest().steps) {
      splits += step.op == "split_bf16x3";
      casts += step.op == "cast";
    }
    if (precision == onnx::Bf16Precision::kBf16x3) {
      EXPECT_GE(splits, 2);
      EXPECT_EQ(casts, 0);
      // A corrupt artifact whose split writes an f32 tensor: refused at load, naming the step.
      absl::StatusOr<runtime::ArtifactView> view = runtime::ReadArtifact(result->artifact);
      ASSERT_TRUE(view.ok()) << view.status();
      runtime::Manifest manifest = view->manifest;
      for (runtime::StepSpec& step : manifest.steps) {
        if (step.op == "split_bf16x3") {
          step.outputs = step.inputs;
          break;
        }
      }
      absl::StatusOr<std::unique_ptr<runtime::Model>> bad = runtime::Model::Load(WriteTemp(
          "block_bad_split.gtco",
          runtime::WriteArtifact(manifest, std::string(view->code), std::string(view->weights))));
      ASSERT_FALSE(bad.ok());
      EXPECT_NE(bad.status().message().find("split_bf16x3): needs one f32 input"),
                std::string::npos)
          << bad.status();
    }
    absl::StatusOr<std::vector<runtime::OutputTensor>> got =
        (*model)->Run({{x->dtype, x->shape, x->data.data()}});
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ((*got)[0].bytes.size(), want->data.size());
    const float* a = reinterpret_cast<const float*>((*got)[0].bytes.data());
    double& off = worst[precision == onnx::Bf16Precision::kBf16x3 ? 0 : 1];
    for (size_t i = 0; i < count; ++i) off = std::max<double>(off, std::fabs(a[i] - b[i]));
  }
  EXPECT_LE(worst[0], 3e-5 * largest) << "bf16x3";
  EXPECT_GT(worst[1], 3e-5 * largest) << "one bf16 product would pass the same bound";
  // No CUDA step for the split: the export says so.
  absl::StatusOr<onnx::Bf16Rewrite> split =
      onnx::RewriteMatMulsToBf16(ReadModel("transformer_block.onnx"), onnx::Bf16Precision::kBf16x3);
  ASSERT_TRUE(split.ok());
  ExportOptions cuda;
  cuda.target = target::Target::kCuda;
  absl::StatusOr<ExportResult> refused = ExportModel(split->model_bytes, {}, cuda, kNoRecords);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(refused.status().message().find("bf16x3 is for CPUs with AMX"), std::string::npos)
      << refused.status();
}

/// A bottleneck-like model for --precision bf16x3's convs (opset 17): x [1, 32, 10, 9]; a =
/// Relu(Conv3x3 p1 (x) + bias), b = Conv1x1 (a) [64], d = Conv1x1 (x) [64] (x split twice: its
/// two readers pad differently), y = Relu(b + d), out = Conv3x3 s2 p1 (y) [32] (strided: y split
/// as its four stride phases) + Conv1x1 s2 (y) [32] (the conv of y subsampled).
std::string Bf16x3ConvModel() {
  TestGraph g("bf16x3_convs");
  g.Input("x", {1, 32, 10, 9});
  g.Conv("a", "x", "a_c", 32, 32, 3, 1, 1);
  g.Node("Relu", "a_relu", {"a_c"}, "a");
  g.Conv("b", "a", "b", 32, 64, 1, 1, 0);
  g.Conv("d", "x", "d", 32, 64, 1, 1, 0);
  g.Node("Add", "bd", {"b", "d"}, "bd");
  g.Node("Relu", "y_relu", {"bd"}, "y");
  g.Conv("e", "y", "e", 64, 32, 3, 2, 1);
  g.Conv("s", "y", "s", 64, 32, 1, 2, 0);
  g.Node("Add", "es", {"e", "s"}, "out");
  g.Output("out", {1, 32, 5, 5});
  return g.Bytes();
}

// --precision bf16x3 (bf16) on convolutions: each conv's input split (cast) once per (tensor,
// pads, strides) straight into the pair layout, the convs on AMX tiles or AVX-512 BF16 vectors
// with their bias, residual and ReLU fused, the strided 1x1 on the subsampled image, the strided
// 3x3 on y's stride phases; the output within `bound` of the f32 export's largest (bf16x3:
// 3e-5; bf16: 1e-2, one bf16 product per term). Where the host has neither AMX nor AVX-512 BF16
// the export says the convs need them. A corrupt artifact whose pair step's planes cannot hold
// the padded image, or whose stride is out of range, is refused at load.
void ExpectPairConvsRun(onnx::Bf16Precision precision, double bound) {
  const bool split3 = precision == onnx::Bf16Precision::kBf16x3;
  const std::string pair_op = split3 ? "split_bf16x3_pairs" : "cast_bf16_pairs";
  const std::string bytes = Bf16x3ConvModel();
  absl::StatusOr<onnx::Bf16Rewrite> rewritten = onnx::RewriteMatMulsToBf16(bytes, precision);
  ASSERT_TRUE(rewritten.ok()) << rewritten.status();
  EXPECT_EQ(rewritten->convs, 5) << "a, b, d, e and s";
  EXPECT_EQ(rewritten->matmuls, 0);
  absl::StatusOr<ExportResult> split =
      ExportModel(rewritten->model_bytes, {}, HostOptions(), kNoRecords);
  const target::HardwareInfo host = target::DetectHostCpu();
  if ((!host.HasFeature("amx_tile") || !host.HasFeature("amx_bf16")) &&
      !host.HasFeature("avx512_bf16")) {
    ASSERT_FALSE(split.ok());
    EXPECT_NE(split.status().message().find("avx512_bf16"), std::string::npos) << split.status();
    GTEST_SKIP() << "the bf16 convs need AMX or AVX-512 BF16: " << host.Summary();
  }
  ASSERT_TRUE(split.ok()) << split.status();
  absl::StatusOr<ExportResult> plain = ExportModel(bytes, {}, HostOptions(), kNoRecords);
  ASSERT_TRUE(plain.ok()) << plain.status();
  absl::StatusOr<std::unique_ptr<runtime::Model>> reference =
      runtime::Model::Load(WriteTemp("convs_f32.gtco", plain->artifact));
  absl::StatusOr<std::unique_ptr<runtime::Model>> model =
      runtime::Model::Load(WriteTemp("convs_pairs.gtco", split->artifact));
  ASSERT_TRUE(reference.ok() && model.ok()) << reference.status() << model.status();
  const runtime::Manifest& m = (*model)->manifest();
  int pair_steps = 0, phase_steps = 0, pair_convs = 0, f32_convs = 0, casts = 0, slices = 0;
  for (const runtime::StepSpec& step : m.steps) {
    pair_steps += step.op == pair_op;
    if (step.op == pair_op && step.params.size() == 6) {
      ++phase_steps;
      EXPECT_EQ(step.params, (std::vector<int64_t>{1, 1, 1, 1, 2, 2})) << "pads, then strides";
    }
    casts += step.op == "cast";
    slices += step.op == "slice";
  }
  for (const runtime::KernelSpec& kernel : m.kernels) {
    if (kernel.description.rfind("conv", 0) != 0) continue;
    SCOPED_TRACE(kernel.description);
    if (kernel.mapping == "amx_bf16" || kernel.mapping == "avx512_bf16" ||
        kernel.mapping == "avx512_bf16_channels") {
      ++pair_convs;
      EXPECT_NE(kernel.description.find("pairs"), std::string::npos);
      EXPECT_NE(kernel.trace.find("pack_b=2"), std::string::npos) << "weights pre-packed";
      EXPECT_NE(kernel.description.find("+add"), std::string::npos) << "the bias fused";
    } else {
      ++f32_convs;
    }
  }
  EXPECT_EQ(pair_steps, 5)
      << "x for a (pads 1) and for d (pads 0), a for b, y for e (phases), y subsampled for s";
  EXPECT_EQ(phase_steps, 1);
  EXPECT_EQ(slices, 1) << "y subsampled for s";
  EXPECT_EQ(casts, 0);
  EXPECT_EQ(pair_convs, 5);
  EXPECT_EQ(f32_convs, 0);
  const auto values = Inputs(m);
  absl::StatusOr<std::vector<runtime::OutputTensor>> want =
      (*reference)->Run(Host((*reference)->manifest(), values));
  absl::StatusOr<std::vector<runtime::OutputTensor>> got = (*model)->Run(Host(m, values));
  ASSERT_TRUE(want.ok() && got.ok()) << want.status() << got.status();
  ASSERT_EQ((*want)[0].bytes.size(), (*got)[0].bytes.size());
  const auto* a = reinterpret_cast<const float*>((*got)[0].bytes.data());
  const auto* b = reinterpret_cast<const float*>((*want)[0].bytes.data());
  const size_t count = (*want)[0].bytes.size() / 4;
  double largest = 0, worst = 0;
  for (size_t i = 0; i < count; ++i) {
    largest = std::max<double>(largest, std::fabs(b[i]));
    worst = std::max<double>(worst, std::fabs(a[i] - b[i]));
  }
  EXPECT_GT(largest, 0.0);
  EXPECT_LE(worst, bound * largest);
  EXPECT_GT(worst, 0.0) << "bf16 operands round";
  absl::StatusOr<runtime::ArtifactView> view = runtime::ReadArtifact(split->artifact);
  ASSERT_TRUE(view.ok()) << view.status();
  for (size_t param : {size_t{0}, size_t{4}}) {
    runtime::Manifest manifest = view->manifest;
    for (runtime::StepSpec& step : manifest.steps) {
      if (step.op == pair_op && step.params.size() > param) {
        step.params[param] = param == 0 ? 1000 : 9;
        break;
      }
    }
    absl::StatusOr<std::unique_ptr<runtime::Model>> bad = runtime::Model::Load(WriteTemp(
        "convs_bad_split.gtco",
        runtime::WriteArtifact(manifest, std::string(view->code), std::string(view->weights))));
    ASSERT_FALSE(bad.ok()) << "param " << param;
    EXPECT_NE(bad.status().message().find(pair_op + "): needs one f32 image"), std::string::npos)
        << bad.status();
  }
}

TEST(ModelExportTest, Bf16x3ConvsRunFromThePairLayout) {
  ExpectPairConvsRun(onnx::Bf16Precision::kBf16x3, 3e-5);
}

TEST(ModelExportTest, Bf16ConvsRunFromThePairLayout) {
  ExpectPairConvsRun(onnx::Bf16Precision::kBf16, 1e-2);
}

// --precision bf16 on a 3-channel stem (7x7, stride 2, as ResNet's) and the conv after it: the
// stem's input gets a zero channel (a Concat step) before its cast into the pair layout, its
// weights a zero channel; both convs run on the bf16 pair convs, the output within 1e-2 of the
// f32 export's largest.
TEST(ModelExportTest, Bf16StemOfThreeChannelsRunsWithAZeroChannel) {
  TestGraph g("bf16_stem");
  g.Input("x", {1, 3, 20, 18});
  g.Conv("stem", "x", "s", 3, 16, 7, 2, 3);
  g.Node("Relu", "s_relu", {"s"}, "r");
  g.Conv("next", "r", "y", 16, 8, 3, 1, 1);
  g.Output("y", {1, 8, 10, 9});
  const std::string bytes = g.Bytes();
  absl::StatusOr<onnx::Bf16Rewrite> rewritten = onnx::RewriteMatMulsToBf16(bytes);
  ASSERT_TRUE(rewritten.ok()) << rewritten.status();
  EXPECT_EQ(rewritten->convs, 2);
  const target::HardwareInfo host = target::DetectHostCpu();
  if ((!host.HasFeature("amx_tile") || !host.HasFeature("amx_bf16")) &&
      !host.HasFeature("avx512_bf16")) {
    GTEST_SKIP() << "the bf16 convs need AMX or AVX-512 BF16: " << host.Summary();
  }
  absl::StatusOr<ExportResult> half =
      ExportModel(rewritten->model_bytes, {}, HostOptions(), kNoRecords);
  ASSERT_TRUE(half.ok()) << half.status();
  absl::StatusOr<ExportResult> plain = ExportModel(bytes, {}, HostOptions(), kNoRecords);
  ASSERT_TRUE(plain.ok()) << plain.status();
  absl::StatusOr<std::unique_ptr<runtime::Model>> reference =
      runtime::Model::Load(WriteTemp("stem_f32.gtco", plain->artifact));
  absl::StatusOr<std::unique_ptr<runtime::Model>> model =
      runtime::Model::Load(WriteTemp("stem_bf16.gtco", half->artifact));
  ASSERT_TRUE(reference.ok() && model.ok()) << reference.status() << model.status();
  const runtime::Manifest& m = (*model)->manifest();
  int concats = 0, pair_casts = 0, pair_convs = 0, stems = 0;
  for (const runtime::StepSpec& step : m.steps) {
    concats += step.op == "concat";
    pair_casts += step.op == "cast_bf16_pairs";
  }
  for (const runtime::KernelSpec& kernel : m.kernels) {
    pair_convs += kernel.description.find("pairs") != std::string::npos;
    // The stem convolves four channels, the last zero.
    stems += kernel.description.rfind("conv 1x4x20x18 k16 7x7", 0) == 0;
  }
  EXPECT_EQ(concats, 1);
  EXPECT_EQ(pair_casts, 2);
  EXPECT_EQ(pair_convs, 2);
  EXPECT_EQ(stems, 1);
  const auto values = Inputs(m);
  absl::StatusOr<std::vector<runtime::OutputTensor>> want =
      (*reference)->Run(Host((*reference)->manifest(), values));
  absl::StatusOr<std::vector<runtime::OutputTensor>> got = (*model)->Run(Host(m, values));
  ASSERT_TRUE(want.ok() && got.ok()) << want.status() << got.status();
  const auto* a = reinterpret_cast<const float*>((*got)[0].bytes.data());
  const auto* b = reinterpret_cast<const float*>((*want)[0].bytes.data());
  double largest = 0, worst = 0;
  for (size_t i = 0; i < (*want)[0].bytes.size() / 4; ++i) {
    largest = std::max<double>(largest, std::fabs(b[i]));
    worst = std::max<double>(worst, std::fabs(a[i] - b[i]));
  }
  EXPECT_GT(largest, 0.0);
  EXPECT_LE(worst, 1e-2 * largest);
}

// The runtime's split into the pair layout: each value's hi and lo as the row split computes
// them, channel pairs interleaved, [hi, lo, hi] along the channels, the padding and the tails
// zero even over a buffer that held other values; threads split it as one thread does. With
// pads or none, unit strides and the stride phases of strided convs (odd and even sizes).
// The same for --precision bf16's cast (one part: the values rounded to bf16).
TEST(ModelExportTest, SplitToBf16x3PairsWritesThePaddedPairLayout) {
  struct Case {
    int64_t h, w, pads[4], strides[2];
  };
  for (const bool split : {true, false})
    for (const Case& layout : {Case{5, 7, {1, 2, 0, 1}, {1, 1}}, Case{4, 6, {0, 0, 0, 0}, {1, 1}},
                               Case{6, 6, {1, 1, 1, 1}, {2, 2}}, Case{5, 7, {1, 2, 0, 1}, {2, 3}},
                               Case{7, 5, {0, 0, 0, 0}, {2, 2}}}) {
      SCOPED_TRACE(absl::StrCat(split ? "split " : "cast ", layout.h, "x", layout.w, " pads ",
                                absl::StrJoin(layout.pads, ","), " strides ",
                                absl::StrJoin(layout.strides, ",")));
      const int parts = split ? 3 : 1;
      ir::ConvParams p;
      p.batch = 2;
      p.in_channels = parts * 4;  // the split's (or the cast's) channels
      p.in_h = layout.h;
      p.in_w = layout.w;
      p.pad_top = layout.pads[0];
      p.pad_left = layout.pads[1];
      p.pad_bottom = layout.pads[2];
      p.pad_right = layout.pads[3];
      p.stride_h = layout.strides[0];
      p.stride_w = layout.strides[1];
      p.kernel_h = p.kernel_w = 3;
      p.x_pairs = true;
      const int64_t c = 4, image = p.in_h * p.in_w;
      std::vector<float> x(p.batch * c * image);
      for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i)) * 3.0f;
      const std::vector<int64_t> shape = ir::ConvXShape(p);
      const int64_t planes = shape[1], plane = shape[2];
      std::vector<uint16_t> one(p.batch * planes * plane * 2, 0xbeef), two(one.size(), 0x1234);
      runtime::SetParallelThreads(1);
      runtime::ConvertF32ToBf16Pairs(x.data(), p.batch, c, p.in_h, p.in_w, layout.pads,
                                     layout.strides, split, planes, plane, one.data());
      runtime::SetParallelThreads(2);
      runtime::ConvertF32ToBf16Pairs(x.data(), p.batch, c, p.in_h, p.in_w, layout.pads,
                                     layout.strides, split, planes, plane, two.data());
      runtime::SetParallelThreads(0);
      EXPECT_EQ(one, two);
      // The expected layout: the row split of each image's pixels, placed by ir::ConvPairIndex.
      std::vector<uint16_t> want(one.size(), 0);
      for (int64_t n = 0; n < p.batch; ++n) {
        for (int64_t ch = 0; ch < c; ++ch) {
          for (int64_t pixel = 0; pixel < image; ++pixel) {
            const float value = x[(n * c + ch) * image + pixel];
            uint16_t halves[3];
            runtime::SplitF32ToBf16x3(&value, 1, 1, halves);
            for (int part = 0; part < parts; ++part) {
              want[ir::ConvPairIndex(p, n, part * c + ch, pixel / p.in_w, pixel % p.in_w)] =
                  halves[part];
            }
          }
        }
      }
      EXPECT_EQ(one, want);
    }
}

// The runtime's quantization steps against ONNX's own DynamicQuantizeLinear example and hand
// values of DequantizeLinear.
TEST(ModelExportTest, QuantizeStepsComputeAsOnnxSpecifies) {
  const std::vector<float> x = {0.0f, 2.0f, -3.0f, -2.5f, 1.34f, 0.5f};
  std::vector<uint8_t> y(x.size());
  float scale = 0.0f;
  uint8_t zero_point = 0;
  runtime::DynamicQuantizeU8(x.data(), static_cast<int64_t>(x.size()), y.data(), &scale,
                             &zero_point);
  EXPECT_FLOAT_EQ(scale, 0.019607844f);
  EXPECT_EQ(zero_point, 153);
  EXPECT_EQ(y, (std::vector<uint8_t>{153, 255, 0, 26, 221, 179}));
  // Positive values only: the range still starts at 0. Longer than one 16-lane block.
  std::vector<float> positive(37);
  for (size_t i = 0; i < positive.size(); ++i) positive[i] = 0.5f + static_cast<float>(i);
  y.assign(positive.size(), 7);
  runtime::DynamicQuantizeU8(positive.data(), 37, y.data(), &scale, &zero_point);
  EXPECT_FLOAT_EQ(scale, 36.5f / 255.0f);
  EXPECT_EQ(zero_point, 0);
  EXPECT_EQ(y.back(), 255);
  EXPECT_EQ(y[0], 3);  // 0.5 / 0.1431 = 3.49 -> 3
  // All zeros: scale 1 as ONNX Runtime gives, everything (and the zero point) 0.
  std::vector<float> zeros(5, 0.0f);
  y.assign(5, 9);
  runtime::DynamicQuantizeU8(zeros.data(), 5, y.data(), &scale, &zero_point);
  EXPECT_EQ(scale, 1.0f);
  EXPECT_EQ(zero_point, 0);
  EXPECT_EQ(y, std::vector<uint8_t>(5, 0));

  // DequantizeLinear per axis 1 of a [2, 2, 2] i8 tensor, and per tensor without a zero point.
  const std::vector<int8_t> q = {1, 2, 3, 4, -1, -2, -3, -4};
  const std::vector<float> scales = {0.5f, 2.0f};
  const std::vector<int8_t> zeros_of_axis = {1, -1};
  std::vector<float> out(8);
  runtime::Dequantize(q.data(), runtime::ElemType::kI8, 2, 2, 2, scales.data(),
                      zeros_of_axis.data(), out.data());
  EXPECT_EQ(out, (std::vector<float>{0.0f, 0.5f, 8.0f, 10.0f, -1.0f, -1.5f, -4.0f, -6.0f}));
  // QuantizeLinear to i8 per axis 1 (scales 0.5 and 2, zero points 1 and -1), saturating and
  // rounding half to even.
  const std::vector<float> values = {0.25f, 0.75f, 100.0f, -3.0f, -1.0f, 5.0f, -400.0f, 2.0f};
  std::vector<int8_t> quantized(8);
  runtime::Quantize(values.data(), runtime::ElemType::kI8, 2, 2, 2, scales.data(),
                    zeros_of_axis.data(), quantized.data());
  EXPECT_EQ(quantized, (std::vector<int8_t>{1, 3, 49, -3, -1, 11, -128, 0}));
  std::vector<uint8_t> unsigned_out(8);
  runtime::Quantize(values.data(), runtime::ElemType::kU8, 1, 1, 8, scales.data(), nullptr,
                    unsigned_out.data());
  EXPECT_EQ(unsigned_out, (std::vector<uint8_t>{0, 2, 200, 0, 0, 10, 0, 4}));

  // QuantizeLinear then DequantizeLinear in one step: the value on the grid, saturated.
  std::vector<float> faked(8);
  runtime::FakeQuantize(values.data(), runtime::ElemType::kI8, 2, 2, 2, scales.data(),
                        zeros_of_axis.data(), faked.data());
  EXPECT_EQ(faked, (std::vector<float>{0.0f, 1.0f, 100.0f, -4.0f, -1.0f, 5.0f, -254.0f, 2.0f}));

  // Tensors large enough to be split over threads give what one thread gives.
  std::vector<float> big(200003);
  for (size_t i = 0; i < big.size(); ++i) big[i] = std::sin(0.001f * i) * 7.0f - 1.0f;
  std::vector<uint8_t> one(big.size()), two(big.size());
  float scale_one = 0, scale_two = 0;
  uint8_t zero_one = 0, zero_two = 0;
  runtime::SetParallelThreads(1);
  runtime::DynamicQuantizeU8(big.data(), static_cast<int64_t>(big.size()), one.data(), &scale_one,
                             &zero_one);
  std::vector<float> faked_one(big.size()), faked_two(big.size());
  runtime::FakeQuantize(big.data(), runtime::ElemType::kU8, 1, 1, static_cast<int64_t>(big.size()),
                        &scale_one, &zero_one, faked_one.data());
  runtime::SetParallelThreads(2);
  runtime::DynamicQuantizeU8(big.data(), static_cast<int64_t>(big.size()), two.data(), &scale_two,
                             &zero_two);
  runtime::FakeQuantize(big.data(), runtime::ElemType::kU8, 1, 1, static_cast<int64_t>(big.size()),
                        &scale_one, &zero_one, faked_two.data());
  runtime::SetParallelThreads(0);
  EXPECT_EQ(scale_one, scale_two);
  EXPECT_EQ(zero_one, zero_two);
  EXPECT_EQ(one, two);
  EXPECT_EQ(faked_one, faked_two);
  EXPECT_FLOAT_EQ(scale_one, 14.0f / 255.0f);  // the range is [-8, 6]

  const std::vector<uint8_t> u = {0, 255};
  const float one_scale = 0.25f;
  runtime::Dequantize(u.data(), runtime::ElemType::kU8, 1, 1, 2, &one_scale, nullptr, out.data());
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[1], 63.75f);
}

// ONNX Runtime's quantize_dynamic of a small BERT exports with its DynamicQuantizeLinear steps
// and integer kernels (no Cast of an i32 tensor left); a manifest whose quantize step lost an
// output is refused by name; CUDA has no integer kernels and says so.
TEST(ModelExportTest, DynamicallyQuantizedBertExportsQuantizeStepsAndIntegerKernels) {
  ExportOptions cuda;
  cuda.target = target::Target::kCuda;
  cuda.cuda_arch = "sm_90";
  absl::StatusOr<ExportResult> on_cuda =
      ExportModel(ReadModel("bert_tiny_int8.onnx"), {}, cuda, kNoRecords);
  ASSERT_FALSE(on_cuda.ok());
  EXPECT_EQ(on_cuda.status().code(), absl::StatusCode::kUnimplemented) << on_cuda.status();
  EXPECT_NE(on_cuda.status().message().find("has no CUDA step"), std::string::npos)
      << on_cuda.status();

  const target::HardwareInfo host = target::DetectHostCpu();
  auto has = [&](const char* feature) {
    return std::find(host.cpu_features.begin(), host.cpu_features.end(), feature) !=
           host.cpu_features.end();
  };
  if (!has("avx2")) GTEST_SKIP() << "the integer kernels need avx2: " << host.Summary();
  // Untuned, each integer matmul takes the first mapping that applies: AMX where the host has
  // it and the shape fits the tiles, else AVX-512 VNNI where the host has it, else the AVX2
  // fallback.
  const std::string vector_mapping = has("avx512_vnni") ? "avx512_vnni" : "avx2_int8";
  const bool amx = has("amx_tile") && has("amx_int8");
  int amx_kernels = 0;
  absl::StatusOr<std::unique_ptr<runtime::Model>> model =
      ExportedForHost("bert_tiny_int8.onnx", "bert_tiny_int8.gtco");
  ASSERT_TRUE(model.ok()) << model.status();
  const runtime::Manifest& m = (*model)->manifest();
  int quantize_steps = 0, integer_kernels = 0;
  for (const runtime::StepSpec& step : m.steps) {
    if (step.op == "dynamic_quantize") {
      ++quantize_steps;
      EXPECT_EQ(step.outputs.size(), 3u);
    }
    EXPECT_FALSE(step.op == "cast" && m.tensors[step.inputs[0]].dtype == runtime::ElemType::kI32)
        << step.node;
  }
  for (const runtime::KernelSpec& kernel : m.kernels) {
    if (kernel.description.find("u8*i8->f32") != std::string::npos) {
      ++integer_kernels;
      if (amx && kernel.mapping == "amx_int8") {
        ++amx_kernels;
      } else {
        EXPECT_EQ(kernel.mapping, vector_mapping) << kernel.description;
      }
    }
  }
  EXPECT_EQ(quantize_steps, 2 * 4 + 1);  // per layer: Q/K/V, attention out, FFN 1 and 2; pooler
  EXPECT_GE(integer_kernels, 4);
  if (amx) EXPECT_GT(amx_kernels, 0);

  // Exported for x86-64-v3 (AVX2, no VNNI) it runs the AVX2 fallback: the same integers, so the
  // same outputs up to the f32 epilogue's rounding.
  ExportOptions v3 = HostOptions();
  v3.isa = "x86-64-v3";
  absl::StatusOr<ExportResult> avx2 =
      ExportModel(ReadModel("bert_tiny_int8.onnx"), {}, v3, kNoRecords);
  ASSERT_TRUE(avx2.ok()) << avx2.status();
  absl::StatusOr<std::unique_ptr<runtime::Model>> fallback =
      runtime::Model::Load(WriteTemp("bert_tiny_int8_v3.gtco", avx2->artifact));
  ASSERT_TRUE(fallback.ok()) << fallback.status();
  for (const runtime::KernelSpec& kernel : (*fallback)->manifest().kernels) {
    if (kernel.description.find("u8*i8->f32") != std::string::npos) {
      EXPECT_EQ(kernel.mapping, "avx2_int8");
    }
  }
  std::vector<int64_t> ids(16), mask(16, 1);
  for (int64_t i = 0; i < 16; ++i) ids[i] = (i * 37 + 11) % 512;
  const std::vector<runtime::HostTensor> tokens = {{runtime::ElemType::kI64, {1, 16}, ids.data()},
                                                   {runtime::ElemType::kI64, {1, 16}, mask.data()}};
  absl::StatusOr<std::vector<runtime::OutputTensor>> want = (*model)->Run(tokens);
  absl::StatusOr<std::vector<runtime::OutputTensor>> got = (*fallback)->Run(tokens);
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(want->size(), got->size());
  for (size_t o = 0; o < want->size(); ++o) {
    const auto* w = reinterpret_cast<const float*>((*want)[o].bytes.data());
    const auto* g = reinterpret_cast<const float*>((*got)[o].bytes.data());
    const size_t count = (*want)[o].bytes.size() / sizeof(float);
    float largest = 0.0f, worst = 0.0f;
    for (size_t i = 0; i < count; ++i) {
      largest = std::max(largest, std::fabs(w[i]));
      worst = std::max(worst, std::fabs(w[i] - g[i]));
    }
    EXPECT_LE(worst, 1e-3f * largest) << (*want)[o].name;
  }

  nlohmann::json broken = nlohmann::json::parse(runtime::ManifestToJson(m));
  for (nlohmann::json& step : broken["steps"]) {
    if (step["op"] == "dynamic_quantize") {
      step["outputs"].erase(2);
      break;
    }
  }
  absl::StatusOr<runtime::Manifest> refused = runtime::ManifestFromJson(broken.dump());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("(dynamic_quantize): takes 1 input and writes 3"),
            std::string::npos)
      << refused.status();
}

// What still has no CUDA kernel (integer matmuls) is refused naming the node and the workload.
TEST(ModelExportTest, WorkloadsWithoutACudaKernelAreRefusedByNode) {
  ExportOptions options;
  options.target = target::Target::kCuda;
  options.cuda_arch = "sm_90";
  absl::StatusOr<ExportResult> result =
      ExportModel(ReadModel("matmul_integer.onnx"), {}, options, kNoRecords);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kUnimplemented) << result.status();
  EXPECT_NE(result.status().message().find("node '"), std::string::npos) << result.status();
  EXPECT_NE(result.status().message().find("has no 'cuda' kernel"), std::string::npos)
      << result.status();
}

}  // namespace
}  // namespace gtco::exporter
