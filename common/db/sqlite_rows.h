// The backend-neutral row readers bound to SqliteStatement, and stepping a statement to the end.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/db/database.h"
#include "common/db/row_mapping.h"
#include "common/db/sqlite_connection.h"

namespace gtco::db::sqlite_rows {

using rows::kCandidateColumns;
using rows::kJobColumns;
using rows::kMeasurementColumns;
using rows::kTaskColumns;
using rows::kTeamColumns;
using rows::kTokenColumns;
using rows::kWorkerColumns;
using rows::kWorkloadColumns;

/// Readers of the statement's current row (see row_mapping.h for the column orders).
inline WorkloadRow ReadWorkload(const SqliteStatement& statement) {
  return rows::ReadWorkload(statement);
}
inline WorkerRow ReadWorker(const SqliteStatement& statement) {
  return rows::ReadWorker(statement);
}
inline JobRow ReadJob(const SqliteStatement& statement) { return rows::ReadJob(statement); }
inline TaskRow ReadTask(const SqliteStatement& statement) { return rows::ReadTask(statement); }
inline CandidateRow ReadCandidate(const SqliteStatement& statement) {
  return rows::ReadCandidate(statement);
}
inline MeasurementRow ReadMeasurement(const SqliteStatement& statement) {
  return rows::ReadMeasurement(statement);
}

inline TeamRow ReadTeam(const SqliteStatement& statement) { return rows::ReadTeam(statement); }
inline TokenRow ReadToken(const SqliteStatement& statement) { return rows::ReadToken(statement); }

/// Steps `statement` to the end and reads every row with `read_row`.
template <typename Row>
absl::StatusOr<std::vector<Row>> ReadAll(SqliteStatement& statement,
                                         Row (*read_row)(const SqliteStatement&)) {
  std::vector<Row> rows;
  while (true) {
    absl::StatusOr<bool> has_row = statement.Step();
    if (!has_row.ok()) return has_row.status();
    if (!*has_row) return rows;
    rows.push_back(read_row(statement));
  }
}

}  // namespace gtco::db::sqlite_rows
