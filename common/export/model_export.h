// Model export: an ONNX model's plan, with the best schedule known for each workload, compiled
// ahead of time into one runtime artifact (runtime/artifact.h): the kernels in a shared object
// for the target's instruction set, the data-movement steps, a static memory plan (one arena,
// storages shared by liveness, reshapes aliased) and the weights in their kernels' layout.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/ir/workload.h"
#include "common/onnx/onnx_import.h"
#include "common/schedule/trace.h"
#include "common/graph/fallback.h"
#include "common/target/target.h"
#include "common/verify/model_verification.h"

namespace gtco::exporter {

/// The schedule chosen for one workload, with where it came from.
struct ChosenSchedule {
  schedule::Trace trace;
  std::string mapping;
  std::string hardware;  ///< the hardware the record was measured on
  std::string worker;
  double median_seconds = 0.0;
};

/// The best verified record for a workload (by key) on hardware compatible with the export
/// target, or nullopt (the default schedule is used and the workload named in a warning).
using ScheduleLookup =
    std::function<absl::StatusOr<std::optional<ChosenSchedule>>(const ir::Workload& workload,
                                                                const std::string& key)>;

struct ExportOptions {
  /// kCpu: a shared object for an x86-64 level (the fields below); kCuda: cubins for
  /// `cuda_arch` plus the data-movement kernels (runtime/cuda_steps.h).
  target::Target target = target::Target::kCpu;
  std::string cuda_arch = "sm_90";  ///< CUDA: "sm_80", "sm_90", ... (SASS for exactly it)
  /// The CPU features (cpuinfo spellings) of the hardware to export for; the code targets the
  /// highest x86-64 level they all allow, capped by `isa`. Empty: the features of level `isa`.
  std::vector<std::string> cpu_features;
  std::string cpu_model;  ///< of the hardware to export for ("" when unknown)
  int cores = 1;          ///< for the default schedules of untuned workloads
  std::string isa;        ///< "" or x86-64-v2 | x86-64-v3 (avx2) | x86-64-v4 (avx512)
  /// Schedules the code for this process's host CPU (codegen::HostTuneCpu) instead of the
  /// level's generic tuning; the instructions it may use stay the level's. Set it when the
  /// export is for the kind of machine the exporter runs on: the farm's workers measured their
  /// kernels tuned that way (their JIT compiles for the host CPU), and ResNet-50's 3x3
  /// convolutions ran about 20 % slower in an artifact with the generic tuning than the farm had
  /// measured them (AMD Zen 3, 2 threads; bench/results/tune_cpu_avx2.md).
  bool tune_for_host = false;
  bool require_tuned = false;
  /// Runs the artifact and the reference interpreter of the ONNX graph on the same inputs before
  /// returning it (common/verify/model_verification.h); a mismatch fails the export. false:
  /// the manifest records the check as skipped at the user's request.
  bool verify = true;
  verify::VerifyOptions verify_options;
  /// Progress messages ("compiling 18 kernels"), may be empty.
  std::function<void(const std::string&)> progress;
};

struct ExportResult {
  std::string artifact;               ///< the .gtco file's bytes
  double estimated_seconds = 0.0;     ///< sum over kernel steps of their records' medians
  int kernels = 0, tuned = 0;         ///< distinct kernels, and those from records
  std::vector<std::string> warnings;  ///< untuned workloads, by description and key
  std::string cpu;                    ///< the x86-64 level compiled for (CUDA: the sm_ arch)
  std::string tune_cpu;  ///< CPU: what the code is scheduled for (tune_for_host), else ""
  /// The whole-model check (also in the artifact's manifest), and the fallback steps' measured
  /// times (empty when it was skipped).
  verify::VerifyReport verification;
  /// The nodes that run as fallback steps, and why.
  std::vector<graph::FallbackNode> fallbacks;
};

/// The hardware the export compiles for: the features of the x86-64 level `options` select
/// (cpu_features capped by isa), plus the low-precision flags (avx512_bf16, avx512_vnni, and
/// the AMX ones amx_tile, amx_bf16, amx_int8) of
/// cpu_features when that level is x86-64-v4; cpu_model and cores from `options`. Records whose
/// mapping does not apply to it are never chosen. INVALID_ARGUMENT for an unknown isa,
/// FAILED_PRECONDITION below x86-64-v2.
/// CUDA: the published limits of the architecture's data-center GPU (target::CudaArchPreset);
/// INVALID_ARGUMENT for an arch that is not "sm_XY".
absl::StatusOr<target::HardwareInfo> ExportHardware(const ExportOptions& options);

/// Exports `model_bytes` (with `overrides` as at submit). Errors: those of the import and the
/// planner; UNIMPLEMENTED naming the node for a data op the runtime cannot run;
/// FAILED_PRECONDITION naming every untuned workload when `require_tuned`; the lookup's errors;
/// with `verify`, FAILED_PRECONDITION when the artifact's outputs differ from the reference
/// interpreter's, naming the output and the first node whose value diverges (no artifact is
/// returned), and the errors of the check itself (an op the reference cannot run).
absl::StatusOr<ExportResult> ExportModel(std::string_view model_bytes,
                                         const onnx::ShapeOverrides& overrides,
                                         const ExportOptions& options,
                                         const ScheduleLookup& lookup);

}  // namespace gtco::exporter
