// Fuzz target: workload canonical text (stored in the database, sent to workers in every
// candidate). ParseWorkload must reject bad text with a status; whatever it accepts must print
// canonically and reparse to the same text; a workload that passes Validate() must have a key,
// description and cost figures, and the search spaces built for it must hold their own default
// trace and lower it.
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/ir/loop_ir.h"
#include "common/ir/workload.h"
#include "common/kernels/registry.h"
#include "common/schedule/space.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/fuzz_workloads.h"

namespace {

constexpr size_t kMaxTextBytes = 4096;

void CheckSpaces(const gtco::ir::Workload& workload) {
  static const gtco::target::HardwareInfo* const machine =
      new gtco::target::HardwareInfo(gtco::fuzz::FuzzMachine());
  absl::StatusOr<std::vector<gtco::schedule::SearchSpace>> spaces =
      gtco::kernels::CreateMappingSpaces(workload, *machine);
  if (!spaces.ok()) {
    FUZZ_CHECK(spaces.status().code() == absl::StatusCode::kInvalidArgument, "spaces: %s",
               spaces.status().ToString().c_str());
    return;
  }
  std::mt19937_64 rng(1);
  for (const gtco::schedule::SearchSpace& space : *spaces) {
    const gtco::schedule::Trace trace = space.DefaultTrace();
    FUZZ_CHECK(space.Contains(trace), "%s: default trace %s outside its space",
               space.mapping().c_str(), trace.ToString().c_str());
    FUZZ_CHECK(space.Contains(space.Mutate(trace, rng)), "%s: mutation left the space",
               space.mapping().c_str());
    absl::StatusOr<gtco::ir::LoweredFunc> lowered =
        gtco::kernels::LowerSchedule(workload, trace, "fuzz_kernel");
    FUZZ_CHECK(lowered.ok(), "%s: default trace %s does not lower: %s", space.mapping().c_str(),
               trace.ToString().c_str(), lowered.status().ToString().c_str());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > kMaxTextBytes) return 0;
  const std::string text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<gtco::ir::Workload> workload = gtco::ir::ParseWorkload(text);
  if (!workload.ok()) {
    FUZZ_CHECK(workload.status().code() == absl::StatusCode::kInvalidArgument, "Parse: %s",
               workload.status().ToString().c_str());
    return 0;
  }
  const std::string canonical = workload->CanonicalString();
  absl::StatusOr<gtco::ir::Workload> reparsed = gtco::ir::ParseWorkload(canonical);
  FUZZ_CHECK(reparsed.ok(), "canonical text does not parse: %s\n%s",
             reparsed.status().ToString().c_str(), canonical.c_str());
  FUZZ_CHECK(reparsed->CanonicalString() == canonical, "canonical text changed:\n%s\n%s",
             canonical.c_str(), reparsed->CanonicalString().c_str());
  absl::Status valid = workload->Validate();
  FUZZ_CHECK(valid.ok() == reparsed->Validate().ok(), "Validate() changed over a round trip");
  if (!valid.ok()) {
    FUZZ_CHECK(valid.code() == absl::StatusCode::kInvalidArgument, "Validate: %s",
               valid.ToString().c_str());
    return 0;
  }
  FUZZ_CHECK(workload->Key() == reparsed->Key(), "key changed over a round trip");
  FUZZ_CHECK(workload->Flops() >= 0 && workload->MinBytes() > 0, "flops %lld, bytes %lld",
             static_cast<long long>(workload->Flops()),
             static_cast<long long>(workload->MinBytes()));
  (void)workload->Description();
  CheckSpaces(*workload);
  return 0;
}
