// BuildProgram: trace replay through the kernel family into LLVM bitcode or CUDA C, with the
// program's buffers, launch and cost-model features.
#include "common/kernels/build_program.h"

#include "absl/strings/str_cat.h"
#include "common/costmodel/cuda_features.h"
#include "common/costmodel/features.h"
#include "common/kernels/registry.h"
#include "common/util/status.h"
#ifdef GTCO_KERNELS_HAVE_LLVM
#include "common/codegen/llvm/llvm_codegen.h"
#endif

namespace gtco::kernels {
namespace {

std::vector<ir::TensorDesc> Buffers(const ir::Workload& w) {
  std::vector<ir::TensorDesc> buffers = w.inputs;
  buffers.push_back(w.output);
  return buffers;
}

/// INVALID_ARGUMENT unless `t` names a sketch of `target`.
absl::Status CheckTraceTarget(const schedule::Trace& t, target::Target target) {
  const schedule::Sketch* sketch = SketchByName(t.sketch);
  if (sketch == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("unknown schedule sketch '", t.sketch, "'"));
  }
  const bool cuda_sketch = dynamic_cast<const schedule::CudaSketch*>(sketch) != nullptr;
  if (cuda_sketch != (target == target::Target::kCuda)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sketch ", t.sketch, " is not a '", target::TargetName(target), "' schedule sketch"));
  }
  return absl::OkStatus();
}

}  // namespace

bool CanBuildFor(target::Target target) {
#ifdef GTCO_KERNELS_HAVE_LLVM
  return true;
#else
  return target == target::Target::kCuda;
#endif
}

absl::StatusOr<CudaKernel> GenerateCudaKernel(const ir::Workload& w, const schedule::Trace& t,
                                              const std::string& entry) {
  GTCO_RETURN_IF_ERROR(w.Validate());
  const auto* sketch = dynamic_cast<const schedule::CudaSketch*>(SketchByName(t.sketch));
  if (sketch == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", t.sketch, "' is not a CUDA schedule sketch"));
  }
  GTCO_ASSIGN_OR_RETURN(const ResolvedTrace resolved, ResolveTrace(w, t));
  CudaKernel kernel;
  kernel.entry = entry;
  kernel.plan = sketch->Plan(w, resolved.values);
  GTCO_ASSIGN_OR_RETURN(kernel.source, sketch->Generator()(w, resolved.values, kernel.plan, entry));
  return kernel;
}

absl::StatusOr<Program> BuildCode(const ir::Workload& w, const schedule::Trace& t,
                                  target::Target target, const std::string& entry) {
  GTCO_RETURN_IF_ERROR(CheckTraceTarget(t, target));
  Program program;
  program.target = target;
  program.entry = entry;
  program.buffers = Buffers(w);
  if (target == target::Target::kCuda) {
    GTCO_ASSIGN_OR_RETURN(CudaKernel kernel, GenerateCudaKernel(w, t, entry));
    program.language = "cuda-c";
    program.code = std::move(kernel.source);
    program.launch = kernel.plan;
    return program;
  }
#ifdef GTCO_KERNELS_HAVE_LLVM
  GTCO_ASSIGN_OR_RETURN(program.loop_func, LowerSchedule(w, t, entry));
  GTCO_ASSIGN_OR_RETURN(program.code, codegen::EmitLlvmBitcode(*program.loop_func));
  program.language = "llvm-bc";
  return program;
#else
  return absl::FailedPreconditionError(
      "this build has no LLVM code generator (GTCO_WITH_LLVM=OFF): it builds CUDA programs only");
#endif
}

absl::StatusOr<Program> BuildProgram(const ir::Workload& w, const schedule::Trace& t,
                                     const target::HardwareInfo& hw, const std::string& entry) {
  GTCO_ASSIGN_OR_RETURN(Program program, BuildCode(w, t, hw.target, entry));
  if (program.target == target::Target::kCuda) {
    program.features = costmodel::ExtractCudaFeatures(w, program.launch, hw);
  } else {
    program.features = costmodel::ExtractFeatures(*program.loop_func, hw);
  }
  program.loop_func.reset();
  return program;
}

absl::StatusOr<costmodel::Features> ProgramFeatures(const ir::Workload& w, const schedule::Trace& t,
                                                    const target::HardwareInfo& hw) {
  GTCO_RETURN_IF_ERROR(CheckTraceTarget(t, hw.target));
  if (hw.target == target::Target::kCuda) {
    GTCO_ASSIGN_OR_RETURN(schedule::CudaPlan plan, PlanCudaSchedule(w, t));
    return costmodel::ExtractCudaFeatures(w, plan, hw);
  }
  GTCO_ASSIGN_OR_RETURN(ir::LoweredFunc func, LowerSchedule(w, t, kDefaultEntry));
  return costmodel::ExtractFeatures(func, hw);
}

}  // namespace gtco::kernels
