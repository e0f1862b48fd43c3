// Trace replay into CUDA C: finds the sketch's generator (generators.def) and its plan.
#include "common/codegen/cuda/cuda_codegen.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "common/codegen/cuda/generators.h"
#include "common/schedule/space.h"
#include "common/util/status.h"

namespace gtco::codegen {
namespace {

const std::map<std::string, cuda::Generator>& GeneratorTable() {
  static const std::map<std::string, cuda::Generator>* const table =
      new std::map<std::string, cuda::Generator>{
#define GTCO_CUDA_GENERATOR(sketch_name, function) {sketch_name, &cuda::function},
#include "common/codegen/cuda/generators.def"
#undef GTCO_CUDA_GENERATOR
      };
  return *table;
}

}  // namespace

absl::StatusOr<CudaKernel> GenerateCudaKernel(const ir::Workload& w, const schedule::Trace& t,
                                              const std::string& entry) {
  GTCO_RETURN_IF_ERROR(w.Validate());
  auto found = GeneratorTable().find(t.sketch);
  if (found == GeneratorTable().end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("no CUDA code generator for schedule sketch '", t.sketch, "'"));
  }
  GTCO_ASSIGN_OR_RETURN(schedule::CudaPlan plan, schedule::PlanCudaSchedule(w, t));
  schedule::KnobValues values;
  for (const auto& decision : t.decisions) values.push_back(decision.second);
  CudaKernel kernel;
  kernel.entry = entry;
  kernel.plan = plan;
  GTCO_ASSIGN_OR_RETURN(kernel.source, found->second(w, values, plan, entry));
  return kernel;
}

}  // namespace gtco::codegen
