// The schema's tables as the row structs of database.h see them.
#include "common/db/row_mapping.h"

#include <algorithm>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/util/status.h"

namespace gtco::db::rows {

template <typename Row>
Table<Row>::Table(const char* name, std::string_view columns, std::vector<Member> members)
    : name_(name),
      columns_(absl::StrSplit(absl::string_view(columns.data(), columns.size()), ", ")),
      members_(std::move(members)),
      column_list_(columns) {
  GTCO_CHECK(columns_.size() == members_.size(), "table ", name_, ": ", columns_.size(),
             " columns for ", members_.size(), " members");
  std::string placeholders;
  for (size_t index = 0; index < columns_.size(); ++index) {
    absl::StrAppend(&placeholders, index == 0 ? "$" : ", $", index + 1);
  }
  select_sql_ = absl::StrCat("SELECT ", column_list_, " FROM ", name_);
  insert_sql_ =
      absl::StrCat("INSERT INTO ", name_, " (", column_list_, ") VALUES (", placeholders, ")");
}

template <typename Row>
std::string Table<Row>::UpsertSql(std::initializer_list<std::string_view> kept) const {
  std::string sql =
      absl::StrCat(insert_sql_, " ON CONFLICT (", columns_.front(), ") DO UPDATE SET ");
  const char* separator = "";
  for (size_t index = 1; index < columns_.size(); ++index) {
    const std::string& column = columns_[index];
    if (std::find(kept.begin(), kept.end(), std::string_view(column)) != kept.end()) continue;
    absl::StrAppend(&sql, separator, column, " = excluded.", column);
    separator = ", ";
  }
  return sql;
}

namespace {

SqlValue ToSql(JobState state) { return SqlValue(JobStateName(state)); }
SqlValue ToSql(TaskState state) { return SqlValue(TaskStateName(state)); }
SqlValue ToSql(CandidateState state) { return SqlValue(CandidateStateName(state)); }
SqlValue ToSql(target::Target target) { return SqlValue(target::TargetName(target)); }
template <typename Value>
SqlValue ToSql(const Value& value) {
  return SqlValue(value);
}

absl::StatusOr<JobState> ParseState(std::string_view text, JobState*) {
  return ParseJobState(text);
}
absl::StatusOr<TaskState> ParseState(std::string_view text, TaskState*) {
  return ParseTaskState(text);
}
absl::StatusOr<CandidateState> ParseState(std::string_view text, CandidateState*) {
  return ParseCandidateState(text);
}
absl::StatusOr<target::Target> ParseState(std::string_view text, target::Target*) {
  return target::ParseTarget(text);
}

}  // namespace

template <typename Row>
SqlParams Table<Row>::Params(const Row& row) const {
  SqlParams params;
  params.reserve(members_.size());
  for (const Member& member : members_) {
    std::visit([&](auto pointer) { params.push_back(ToSql(row.*pointer)); }, member);
  }
  return params;
}

template <typename Row>
absl::StatusOr<Row> Table<Row>::Read(const SqlRow& cells) const {
  Row row;
  absl::Status status;
  for (size_t index = 0; index < members_.size() && status.ok(); ++index) {
    const int column = static_cast<int>(index);
    std::visit(
        [&](auto member) {
          using Value = std::remove_reference_t<decltype(row.*member)>;
          if constexpr (std::is_same_v<Value, std::string>) {
            row.*member = cells.ColumnText(column);
          } else if constexpr (std::is_same_v<Value, double>) {
            row.*member = cells.ColumnDouble(column);
          } else if constexpr (std::is_same_v<Value, bool>) {
            row.*member = cells.ColumnInt64(column) != 0;
          } else if constexpr (std::is_enum_v<Value>) {
            absl::StatusOr<Value> state =
                ParseState(cells.ColumnText(column), static_cast<Value*>(nullptr));
            if (state.ok()) {
              row.*member = *state;
            } else {
              status = absl::DataLossError(absl::StrCat(
                  "table ", name_, ", column ", columns_[index], ": ", state.status().message()));
            }
          } else {
            row.*member = static_cast<Value>(cells.ColumnInt64(column));
          }
        },
        members_[index]);
  }
  if (!status.ok()) return status;
  return row;
}

template <typename Row>
absl::StatusOr<std::vector<Row>> Table<Row>::ReadAll(const SqlRows& result) const {
  std::vector<Row> rows;
  rows.reserve(result.size());
  for (const SqlRow& cells : result) {
    GTCO_ASSIGN_OR_RETURN(Row row, Read(cells));
    rows.push_back(std::move(row));
  }
  return rows;
}

template class Table<WorkloadRow>;
template class Table<WorkerRow>;
template class Table<JobRow>;
template class Table<TaskRow>;
template class Table<CandidateRow>;
template class Table<MeasurementRow>;
template class Table<TeamRow>;
template class Table<TokenRow>;

namespace {

// Every table, column orders as in the migrations' CREATE TABLE statements.
struct Schema {
  using W = WorkloadRow;
  using K = WorkerRow;
  using J = JobRow;
  using T = TaskRow;
  using C = CandidateRow;
  using M = MeasurementRow;
  Table<W> workloads{"workloads",
                     "workload_key, kind, canonical, description, flops",
                     {&W::key, &W::kind, &W::canonical, &W::description, &W::flops}};
  Table<K> workers{"workers",
                   "worker_id, target, hostname, hardware, registered_unix_ms, last_seen_unix_ms",
                   {&K::worker_id, &K::target, &K::hostname, &K::hardware, &K::registered_unix_ms,
                    &K::last_seen_unix_ms}};
  Table<J> jobs{"jobs",
                "job_id, team, model_name, model_sha, target, state, error, budget, options, "
                "created_unix_ms, updated_unix_ms",
                {&J::job_id, &J::team, &J::model_name, &J::model_sha, &J::target, &J::state,
                 &J::error, &J::budget, &J::options, &J::created_unix_ms, &J::updated_unix_ms}};
  Table<T> tasks{"tasks",
                 "task_id, job_id, ordinal, workload_key, target, weight, trials_allotted, state",
                 {&T::task_id, &T::job_id, &T::ordinal, &T::workload_key, &T::target, &T::weight,
                  &T::trials_allotted, &T::state}};
  Table<C> candidates{
      "candidates",
      "candidate_id, task_id, workload_key, target, trace, program_hash, state, "
      "worker_id, lease_deadline_unix_ms, created_unix_ms",
      {&C::candidate_id, &C::task_id, &C::workload_key, &C::target, &C::trace, &C::program_hash,
       &C::state, &C::worker_id, &C::lease_deadline_unix_ms, &C::created_unix_ms}};
  Table<M> measurements{
      "measurements",
      "candidate_id, task_id, workload_key, target, trace, program_hash, ok, error_kind, error, "
      "median_seconds, min_seconds, max_seconds, stddev_seconds, repeats, compile_seconds, "
      "worker_id, hardware, measured_unix_ms",
      {&M::candidate_id, &M::task_id, &M::workload_key, &M::target, &M::trace, &M::program_hash,
       &M::ok, &M::error_kind, &M::error, &M::median_seconds, &M::min_seconds, &M::max_seconds,
       &M::stddev_seconds, &M::repeats, &M::compile_seconds, &M::worker_id, &M::hardware,
       &M::measured_unix_ms}};
  Table<TeamRow> teams{"teams",
                       "name, max_concurrent_jobs, max_trials_per_day, share, created_unix_ms",
                       {&TeamRow::name, &TeamRow::max_concurrent_jobs, &TeamRow::max_trials_per_day,
                        &TeamRow::share, &TeamRow::created_unix_ms}};
  Table<TokenRow> tokens{"tokens",
                         "token_id, team, role, salt, hash, created_unix_ms, revoked_unix_ms",
                         {&TokenRow::token_id, &TokenRow::team, &TokenRow::role, &TokenRow::salt,
                          &TokenRow::hash, &TokenRow::created_unix_ms, &TokenRow::revoked_unix_ms}};
};

const Schema& TheSchema() {
  static const Schema* const kSchema = new Schema;
  return *kSchema;
}

}  // namespace

const Table<WorkloadRow>& Workloads() { return TheSchema().workloads; }
const Table<WorkerRow>& Workers() { return TheSchema().workers; }
const Table<JobRow>& Jobs() { return TheSchema().jobs; }
const Table<TaskRow>& Tasks() { return TheSchema().tasks; }
const Table<CandidateRow>& Candidates() { return TheSchema().candidates; }
const Table<MeasurementRow>& Measurements() { return TheSchema().measurements; }
const Table<TeamRow>& Teams() { return TheSchema().teams; }
const Table<TokenRow>& Tokens() { return TheSchema().tokens; }

}  // namespace gtco::db::rows
