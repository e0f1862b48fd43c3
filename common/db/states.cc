// Names and parsers of the job, task and candidate states.
#include "common/db/states.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gtco::db {
namespace {

template <typename State>
using NameTable = std::vector<std::pair<State, const char*>>;

const NameTable<JobState>& JobStates() {
  static const auto* const table = new NameTable<JobState>{{JobState::kRunning, "running"},
                                                           {JobState::kDone, "done"},
                                                           {JobState::kFailed, "failed"},
                                                           {JobState::kCancelled, "cancelled"}};
  return *table;
}

const NameTable<TaskState>& TaskStates() {
  static const auto* const table =
      new NameTable<TaskState>{{TaskState::kPending, "pending"},
                               {TaskState::kRunning, "running"},
                               {TaskState::kDone, "done"},
                               {TaskState::kFromDatabase, "from_database"},
                               {TaskState::kCancelled, "cancelled"}};
  return *table;
}

const NameTable<CandidateState>& CandidateStates() {
  static const auto* const table =
      new NameTable<CandidateState>{{CandidateState::kPending, "pending"},
                                    {CandidateState::kLeased, "leased"},
                                    {CandidateState::kMeasured, "measured"}};
  return *table;
}

template <typename State>
const char* NameOf(const NameTable<State>& table, State state) {
  for (const auto& [value, name] : table) {
    if (value == state) return name;
  }
  return "unknown";
}

template <typename State>
absl::StatusOr<State> Parse(const NameTable<State>& table, const char* what,
                            std::string_view name) {
  std::vector<std::string> names;
  for (const auto& [value, value_name] : table) {
    if (name == value_name) return value;
    names.push_back(value_name);
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown ", what, " state '",
                                                 absl::string_view(name.data(), name.size()),
                                                 "' (one of ", absl::StrJoin(names, ", "), ")"));
}

}  // namespace

const char* JobStateName(JobState state) { return NameOf(JobStates(), state); }
const char* TaskStateName(TaskState state) { return NameOf(TaskStates(), state); }
const char* CandidateStateName(CandidateState state) { return NameOf(CandidateStates(), state); }

absl::StatusOr<JobState> ParseJobState(std::string_view name) {
  return Parse(JobStates(), "job", name);
}
absl::StatusOr<TaskState> ParseTaskState(std::string_view name) {
  return Parse(TaskStates(), "task", name);
}
absl::StatusOr<CandidateState> ParseCandidateState(std::string_view name) {
  return Parse(CandidateStates(), "candidate", name);
}

}  // namespace gtco::db
