// The lifecycle states of jobs, tasks and candidates as the database stores them: one enum each,
// with the text stored in the `state` columns (and shown to users) and its parser.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"

namespace gtco::db {

/// A job: running until every task is done (or it failed or was cancelled).
enum class JobState { kRunning, kDone, kFailed, kCancelled };
/// A task: pending until its first proposal, running while it spends trials, then done;
/// from_database when a stored record answered it; cancelled with its job.
enum class TaskState { kPending, kRunning, kDone, kFromDatabase, kCancelled };
/// A candidate: pending until a worker leases it, leased until its result is stored, measured.
enum class CandidateState { kPending, kLeased, kMeasured };

/// "running" | "done" | "failed" | "cancelled".
const char* JobStateName(JobState state);
/// "pending" | "running" | "done" | "from_database" | "cancelled".
const char* TaskStateName(TaskState state);
/// "pending" | "leased" | "measured".
const char* CandidateStateName(CandidateState state);

/// The state named `name`; INVALID_ARGUMENT listing the names otherwise.
absl::StatusOr<JobState> ParseJobState(std::string_view name);
absl::StatusOr<TaskState> ParseTaskState(std::string_view name);
absl::StatusOr<CandidateState> ParseCandidateState(std::string_view name);

/// True for a job that will not change any more (done, failed, cancelled).
inline bool IsTerminal(JobState state) { return state != JobState::kRunning; }
/// True for a task that takes no more trials (done, from_database, cancelled).
inline bool IsFinished(TaskState state) {
  return state == TaskState::kDone || state == TaskState::kFromDatabase ||
         state == TaskState::kCancelled;
}

}  // namespace gtco::db
