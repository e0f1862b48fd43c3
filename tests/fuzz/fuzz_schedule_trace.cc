// Fuzz target: schedule-trace text (as stored in the database and sent back by workers).
// Trace::Parse must reject bad text with a status; a parsed trace must reprint and reparse to
// itself; LowerSchedule must either reject the trace for each fixed workload or lower it
// deterministically (the same trace twice gives the same loop-IR text).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/ir/loop_ir.h"
#include "common/kernels/registry.h"
#include "common/schedule/space.h"
#include "common/schedule/trace.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/fuzz_workloads.h"

namespace {

/// Stored traces are short; longer inputs only slow the fuzzer down.
constexpr size_t kMaxTraceBytes = 4096;

void CheckLowering(const gtco::ir::Workload& workload, const gtco::schedule::Trace& trace) {
  absl::StatusOr<gtco::ir::LoweredFunc> lowered =
      gtco::kernels::LowerSchedule(workload, trace, "fuzz_kernel");
  if (!lowered.ok()) {
    FUZZ_CHECK(lowered.status().code() == absl::StatusCode::kInvalidArgument,
               "LowerSchedule(%s) on %s: %s", trace.ToString().c_str(),
               workload.Description().c_str(), lowered.status().ToString().c_str());
    return;
  }
  const std::string text = gtco::ir::ToString(*lowered);
  absl::StatusOr<gtco::ir::LoweredFunc> again =
      gtco::kernels::LowerSchedule(workload, trace, "fuzz_kernel");
  FUZZ_CHECK(again.ok() && gtco::ir::ToString(*again) == text,
             "LowerSchedule(%s) on %s is not deterministic", trace.ToString().c_str(),
             workload.Description().c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > kMaxTraceBytes) return 0;
  static const std::vector<gtco::ir::Workload>* const workloads =
      new std::vector<gtco::ir::Workload>(gtco::fuzz::FixedWorkloads());
  const std::string text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<gtco::schedule::Trace> trace = gtco::schedule::Trace::Parse(text);
  if (!trace.ok()) {
    FUZZ_CHECK(trace.status().code() == absl::StatusCode::kInvalidArgument, "Parse: %s",
               trace.status().ToString().c_str());
    return 0;
  }
  absl::StatusOr<gtco::schedule::Trace> reparsed = gtco::schedule::Trace::Parse(trace->ToString());
  FUZZ_CHECK(reparsed.ok() && *reparsed == *trace, "'%s' does not reparse to itself",
             trace->ToString().c_str());
  for (const auto& decision : trace->decisions) {
    FUZZ_CHECK(trace->Get(decision.first) == decision.second, "Get(%s)", decision.first.c_str());
  }
  for (const gtco::ir::Workload& workload : *workloads) CheckLowering(workload, *trace);
  return 0;
}
