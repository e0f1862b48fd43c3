// Row builders shared by the database tests.
#pragma once

#include <cstdint>
#include <string>

#include "common/db/database.h"

namespace gtco::db::testing {

/// A running job of `team` with model "resnet", budget 1000 and JSON options.
JobRow MakeJob(const std::string& job_id, const std::string& team, int64_t created_unix_ms);
/// A pending cpu task "<job_id>.t<ordinal>" with weight ordinal + 1 and 64 trials.
TaskRow MakeTask(const std::string& job_id, int ordinal, const std::string& workload_key);
/// A pending cpu candidate of workload "wk".
CandidateRow MakeCandidate(const std::string& candidate_id, const std::string& task_id,
                           int64_t created_unix_ms);
/// A cpu measurement of workload "wk" by "worker-1" at t=1000 (failed ones are "runtime").
MeasurementRow MakeMeasurement(const std::string& candidate_id, const std::string& task_id, bool ok,
                               double median_seconds);
/// Creates job "j" of "team-a" with tasks "j.t0" (workload "wk") and "j.t1" ("wk2").
void CreateTwoTaskJob(Database& database);

}  // namespace gtco::db::testing
