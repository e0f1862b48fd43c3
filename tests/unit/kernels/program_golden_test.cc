// Stored traces replay to the same programs: tests/data/golden_programs.tsv holds, for the tasks
// of the bundled models on CPU and CUDA, each mapping's default trace and one sampled trace with
// a digest of the program generated from it (LLVM IR text for CPU, CUDA C for CUDA). The schedule
// database keeps only traces, so a refactor of a sketch or a generator that changed what an old
// trace produces would silently change every stored record; this test catches it.
//
// After an intended change to generated code, regenerate the file and commit it with the change:
//   GTCO_UPDATE_GOLDEN=1 build/tests/unit/kernels/kernels_program_golden_test
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/codegen/llvm/llvm_codegen.h"
#include "common/kernels/build_program.h"
#include "common/kernels/registry.h"
#include "common/onnx/model_analysis.h"
#include "common/schedule/space.h"
#include "common/target/target.h"
#include "common/util/hash.h"

namespace gtco {
namespace {

constexpr char kGoldenFile[] = "/tests/data/golden_programs.tsv";
constexpr char kKernelName[] = "gtco_kernel";

struct Entry {
  std::string target;    ///< "cpu" | "cuda"
  std::string workload;  ///< ir::Workload::CanonicalString() (C-escaped in the file)
  std::string trace;     ///< schedule::Trace::ToString() (C-escaped in the file)
  std::string digest;    ///< util::HexDigest128 of the generated program
};

std::string ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << file.rdbuf();
  return bytes.str();
}

/// The program `trace` generates for `workload` on `target`, as its digest.
absl::StatusOr<std::string> ProgramDigest(target::Target target, const ir::Workload& workload,
                                          const schedule::Trace& trace) {
  if (target == target::Target::kCuda) {
    absl::StatusOr<kernels::CudaKernel> kernel =
        kernels::GenerateCudaKernel(workload, trace, kKernelName);
    if (!kernel.ok()) return kernel.status();
    return util::HexDigest128(kernel->source);
  }
  absl::StatusOr<ir::LoweredFunc> func = kernels::LowerSchedule(workload, trace, kKernelName);
  if (!func.ok()) return func.status();
  absl::StatusOr<std::string> text = codegen::EmitLlvmIr(*func);
  if (!text.ok()) return text.status();
  return util::HexDigest128(*text);
}

/// The machines the spaces are made for: an AVX-512 host with BF16/VNNI, and sm_80 / sm_90.
std::vector<target::HardwareInfo> Machines() {
  target::HardwareInfo cpu;
  cpu.cores = 8;
  cpu.cpu_features = {"avx", "avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni"};
  return {cpu, target::CudaArchPreset(80), target::CudaArchPreset(90)};
}

/// Samples the entries afresh (used to write the file).
std::vector<Entry> SampleEntries() {
  std::vector<Entry> entries;
  std::mt19937_64 rng(20261125);
  for (const char* model : {"transformer_block.onnx", "mlp.onnx", "matmul_bf16.onnx",
                            "matmul_f16.onnx", "matmul_integer.onnx", "patch_vit.onnx"}) {
    const std::string bytes = ReadFile(std::string(GTCO_SOURCE_DIR) + "/tests/data/" + model);
    for (const target::HardwareInfo& hardware : Machines()) {
      graph::PlanOptions options;
      options.target = hardware.target;
      onnx::ShapeOverrides overrides;
      if (std::string(model) == "patch_vit.onnx") overrides["input"] = {1, 4, 192};
      absl::StatusOr<onnx::ModelAnalysis> analysis =
          onnx::AnalyzeOnnxModel(bytes, overrides, options);
      EXPECT_TRUE(analysis.ok()) << model << ": " << analysis.status();
      if (!analysis.ok()) continue;
      for (const onnx::ModelTask& task : analysis->tasks) {
        absl::StatusOr<std::vector<schedule::SearchSpace>> spaces =
            kernels::CreateMappingSpaces(task.workload, hardware);
        if (!spaces.ok()) continue;  // no mapping on this machine (e.g. int8 on CUDA)
        for (const schedule::SearchSpace& space : *spaces) {
          for (const schedule::Trace& trace : {space.DefaultTrace(), space.Sample(rng)}) {
            absl::StatusOr<std::string> digest =
                ProgramDigest(hardware.target, task.workload, trace);
            EXPECT_TRUE(digest.ok()) << trace.ToString() << ": " << digest.status();
            if (!digest.ok()) continue;
            entries.push_back({target::TargetName(hardware.target), task.workload.CanonicalString(),
                               trace.ToString(), *digest});
          }
        }
      }
    }
  }
  return entries;
}

TEST(ProgramGoldenTest, StoredTracesReplayToTheSamePrograms) {
  const std::string path = std::string(GTCO_SOURCE_DIR) + kGoldenFile;
  if (std::getenv("GTCO_UPDATE_GOLDEN") != nullptr) {
    std::ofstream out(path, std::ios::binary);
    out << "# target\tworkload\ttrace\tprogram digest "
           "(tests/unit/kernels/program_golden_test.cc)\n";
    for (const Entry& entry : SampleEntries()) {
      out << entry.target << '\t' << absl::CEscape(entry.workload) << '\t'
          << absl::CEscape(entry.trace) << '\t' << entry.digest << '\n';
    }
    ASSERT_TRUE(out.good()) << "cannot write " << path;
  }
  std::istringstream lines(ReadFile(path));
  ASSERT_FALSE(lines.str().empty()) << "cannot read " << path;
  int checked = 0, changed = 0;
  std::string targets_seen;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> fields = absl::StrSplit(line, '\t');
    ASSERT_EQ(fields.size(), 4u) << line;
    Entry entry{fields[0], "", "", fields[3]};
    ASSERT_TRUE(absl::CUnescape(fields[1], &entry.workload)) << line;
    ASSERT_TRUE(absl::CUnescape(fields[2], &entry.trace)) << line;
    absl::StatusOr<ir::Workload> workload = ir::ParseWorkload(entry.workload);
    ASSERT_TRUE(workload.ok()) << workload.status() << "\n" << entry.workload;
    absl::StatusOr<schedule::Trace> trace = schedule::Trace::Parse(entry.trace);
    ASSERT_TRUE(trace.ok()) << trace.status() << "\n" << entry.trace;
    absl::StatusOr<target::Target> target = target::ParseTarget(entry.target);
    ASSERT_TRUE(target.ok()) << target.status();
    absl::StatusOr<std::string> digest = ProgramDigest(*target, *workload, *trace);
    ASSERT_TRUE(digest.ok()) << entry.target << " " << entry.trace << ": " << digest.status();
    if (*digest != entry.digest && ++changed <= 5) {
      ADD_FAILURE() << "the stored trace " << entry.trace << " of " << workload->Description()
                    << " on " << entry.target << " now generates a different program; if that is "
                    << "intended, regenerate " << kGoldenFile << " (see the top of this test)";
    }
    if (targets_seen.find(entry.target) == std::string::npos) targets_seen += entry.target + " ";
    ++checked;
  }
  EXPECT_EQ(changed, 0) << changed << " of " << checked << " stored traces changed programs";
  EXPECT_GT(checked, 50);
  EXPECT_NE(targets_seen.find("cpu"), std::string::npos);
  EXPECT_NE(targets_seen.find("cuda"), std::string::npos);
  RecordProperty("traces_replayed", checked);
}

}  // namespace
}  // namespace gtco
