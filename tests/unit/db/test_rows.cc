// Row builders shared by the database tests.
#include "tests/unit/db/test_rows.h"

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"

namespace gtco::db::testing {

JobRow MakeJob(const std::string& job_id, const std::string& team, int64_t created_unix_ms) {
  JobRow job;
  job.job_id = job_id;
  job.team = team;
  job.model_name = "resnet";
  job.model_sha = "abc123";
  job.target = target::Target::kCpu;
  job.state = JobState::kRunning;
  job.budget = 1000;
  job.options = R"({"batch": 1})";
  job.created_unix_ms = created_unix_ms;
  job.updated_unix_ms = created_unix_ms;
  return job;
}

TaskRow MakeTask(const std::string& job_id, int ordinal, const std::string& workload_key) {
  TaskRow task;
  task.task_id = absl::StrCat(job_id, ".t", ordinal);
  task.job_id = job_id;
  task.ordinal = ordinal;
  task.workload_key = workload_key;
  task.target = target::Target::kCpu;
  task.weight = ordinal + 1;
  task.trials_allotted = 64;
  task.state = TaskState::kPending;
  return task;
}

CandidateRow MakeCandidate(const std::string& candidate_id, const std::string& task_id,
                           int64_t created_unix_ms) {
  CandidateRow candidate;
  candidate.candidate_id = candidate_id;
  candidate.task_id = task_id;
  candidate.workload_key = "wk";
  candidate.target = target::Target::kCpu;
  candidate.trace = "split(i, 32)";
  candidate.program_hash = "h" + candidate_id;
  candidate.state = CandidateState::kPending;
  candidate.created_unix_ms = created_unix_ms;
  return candidate;
}

MeasurementRow MakeMeasurement(const std::string& candidate_id, const std::string& task_id, bool ok,
                               double median_seconds) {
  MeasurementRow row;
  row.candidate_id = candidate_id;
  row.task_id = task_id;
  row.workload_key = "wk";
  row.target = target::Target::kCpu;
  row.trace = "trace of " + candidate_id;
  row.program_hash = "h" + candidate_id;
  row.ok = ok;
  row.error_kind = ok ? "" : "runtime";
  row.error = ok ? "" : "segfault";
  row.median_seconds = median_seconds;
  row.min_seconds = median_seconds * 0.9;
  row.max_seconds = median_seconds * 1.1;
  row.stddev_seconds = 1e-6;
  row.repeats = 10;
  row.compile_seconds = 0.25;
  row.worker_id = "worker-1";
  row.hardware = R"({"cores": 8})";
  row.measured_unix_ms = 1000;
  return row;
}

void CreateTwoTaskJob(Database& database) {
  const absl::Status status = database.CreateJob(MakeJob("j", "team-a", 100),
                                                 {MakeTask("j", 0, "wk"), MakeTask("j", 1, "wk2")});
  ASSERT_TRUE(status.ok()) << status;
}

}  // namespace gtco::db::testing
