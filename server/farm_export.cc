// FarmCore::ExportModel: record selection by hardware and the ahead-of-time export.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/kernels/registry.h"
#include "common/target/target.h"
#include "common/util/status.h"
#include "server/farm_core.h"
#ifdef GTCO_HAVE_EXPORT
#include "common/export/model_export.h"
#include "runtime/npy.h"
#include "runtime/reference_step.h"
#endif

namespace gtco::server {

#ifdef GTCO_HAVE_EXPORT
namespace {

/// Whether the record with trace `text` can run on `hw`: its sketch belongs to a mapping that
/// applies to `w` there (so it needs no instruction `hw` lacks).
bool RunsOn(const ir::Workload& w, const std::string& text, const target::HardwareInfo& hw) {
  absl::StatusOr<schedule::Trace> trace = schedule::Trace::Parse(text);
  if (!trace.ok() || !kernels::ResolveTrace(w, *trace).ok()) return false;
  for (const schedule::MappingSketch* mapping : kernels::MappingRegistry()) {
    if (mapping->sketch().Name() != trace->sketch || !schedule::MappingConsiders(*mapping, w, hw)) {
      continue;
    }
    return mapping->Explain(w, hw).applies;
  }
  return false;
}

}  // namespace

std::string FarmCore::CudaWorkersArch(const std::function<void(const std::string&)>& progress) {
  for (const WorkerSnapshot& snapshot : Workers()) {
    const target::HardwareInfo& hardware = snapshot.worker->hardware;
    if (hardware.target != target::Target::kCuda) continue;
    const std::string arch = absl::StrCat("sm_", hardware.SmVersion());
    if (progress) progress(absl::StrCat("compiling for ", arch, ", the farm's CUDA workers'"));
    return arch;
  }
  if (progress) progress("no CUDA worker has registered: compiling for sm_90 (--arch picks)");
  return "sm_90";
}
#endif

absl::StatusOr<ExportOutcome> FarmCore::ExportModel(
    const JobSpec& spec, const ExportTarget& export_target, const std::string& model_bytes,
    const std::function<void(const std::string&)>& progress) {
#ifndef GTCO_HAVE_EXPORT
  return absl::FailedPreconditionError("this gtco-server was built without the exporter");
#else
  exporter::ExportOptions options;
  options.target = spec.target;
  if (spec.target == target::Target::kCuda) {
    options.cuda_arch = export_target.cuda_arch;
    if (options.cuda_arch.empty()) options.cuda_arch = CudaWorkersArch(progress);
  }
  options.cpu_features = export_target.cpu_features;
  options.cpu_model = export_target.cpu_model;
  options.cores = export_target.cores;
  options.isa = export_target.isa;
  // An export for this server's kind of CPU (the client's, sent with its features when no --isa
  // is given) is scheduled for it as the workers' JIT scheduled what they measured.
  static const std::string host_cpu_model = target::DetectHostCpu().cpu_model;
  options.tune_for_host = spec.target == target::Target::kCpu && export_target.isa.empty() &&
                          !export_target.cpu_model.empty() &&
                          export_target.cpu_model == host_cpu_model;
  options.require_tuned = export_target.require_tuned;
  options.progress = progress;
  options.verify = export_target.verify;
  if (!export_target.verify_inputs.empty()) {
    verify::ValueMap set;
    for (const auto& [name, npy] : export_target.verify_inputs) {
      absl::StatusOr<runtime::NpyArray> array =
          runtime::ParseNpy(npy, absl::StrCat("--verify-input ", name));
      if (!array.ok()) return array.status();
      runtime::TensorSpec spec{name, array->dtype, array->shape};
      if (static_cast<int64_t>(array->data.size()) != spec.Bytes()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--verify-input ", name, ": the file holds ", array->data.size(),
                         " bytes of data for ", spec.Bytes()));
      }
      set[name] = runtime::ValueFromBytes(spec, array->data.data());
    }
    options.verify_options.user_sets.push_back(std::move(set));
  }
  GTCO_ASSIGN_OR_RETURN(const target::HardwareInfo hw, exporter::ExportHardware(options));
  // CPU: the same CPU first; CUDA: a GPU of the same architecture first ("(sm_90, ..." in the
  // hardware summary of the records' workers).
  const bool cuda = spec.target == target::Target::kCuda;
  const std::string same_hardware = hw.Summary();
  const std::string same_arch = absl::StrCat("(", options.cuda_arch, ",");
  auto same = [&](const std::string& hardware) {
    return cuda ? hardware.find(same_arch) != std::string::npos : hardware == same_hardware;
  };
  exporter::ScheduleLookup lookup = [&](const ir::Workload& w, const std::string& key)
      -> absl::StatusOr<std::optional<exporter::ChosenSchedule>> {
    std::vector<db::MeasurementRow> rows;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      GTCO_ASSIGN_OR_RETURN(rows, db_->TopMeasurements(key, spec.target, 64));
    }
    const db::MeasurementRow* chosen = nullptr;
    for (const db::MeasurementRow& row : rows) {  // lowest median first
      if (same(row.hardware) && RunsOn(w, row.trace, hw)) {
        chosen = &row;
        break;
      }
    }
    for (size_t i = 0; chosen == nullptr && i < rows.size(); ++i) {
      if (RunsOn(w, rows[i].trace, hw)) chosen = &rows[i];
    }
    if (chosen == nullptr) return std::optional<exporter::ChosenSchedule>();
    GTCO_ASSIGN_OR_RETURN(schedule::Trace trace, schedule::Trace::Parse(chosen->trace));
    GTCO_ASSIGN_OR_RETURN(kernels::ResolvedTrace resolved, kernels::ResolveTrace(w, trace));
    std::string mapping;
    for (const schedule::MappingSketch* candidate : kernels::MappingRegistry()) {
      if (&candidate->sketch() == resolved.sketch) mapping = candidate->Name();
    }
    return std::optional<exporter::ChosenSchedule>(exporter::ChosenSchedule{
        trace, mapping, chosen->hardware, chosen->worker_id, chosen->median_seconds});
  };
  if (progress) {
    progress(absl::StrCat("planning ", spec.model_name, " for ",
                          cuda ? options.cuda_arch : same_hardware));
  }
  GTCO_ASSIGN_OR_RETURN(exporter::ExportResult result,
                        exporter::ExportModel(model_bytes, spec.shapes, options, lookup));
  ExportOutcome outcome;
  outcome.artifact = std::move(result.artifact);
  outcome.kernels = result.kernels;
  outcome.tuned = result.tuned;
  outcome.warnings = std::move(result.warnings);
  outcome.cpu = result.cpu;
  outcome.tune_cpu = result.tune_cpu;
  outcome.estimated_latency_seconds = result.estimated_seconds;
  outcome.verification = result.verification.spec;
  outcome.run_seconds = result.verification.run_seconds;
  for (const graph::FallbackNode& node : result.fallbacks) {
    ExportedFallback fallback{node.op_type, node.node, node.reason, 0};
    for (const verify::FallbackTime& time : result.verification.fallbacks) {
      if (time.node == node.node) fallback.seconds = time.seconds;
    }
    outcome.fallbacks.push_back(std::move(fallback));
  }
  return outcome;
#endif
}

}  // namespace gtco::server
