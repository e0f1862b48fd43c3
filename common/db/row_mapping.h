// Backend-neutral row mapping: each table's columns and the row-struct members they hold, written
// once; the column lists, INSERT and upsert statements, statement parameters and row readers
// all follow from it.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "common/db/database.h"
#include "common/db/sql_connection.h"
#include "common/db/sql_value.h"

namespace gtco::db::rows {

/// A table of the schema as the row struct `Row` sees it: its name and its columns, the primary
/// key first. Immutable; the tables below live for the whole program.
template <typename Row>
class Table {
 public:
  /// The member of `Row` a column holds. A bool member is an INTEGER 1 / 0 column, an int
  /// member an INTEGER one, a state or a target a TEXT one holding its name (states.h,
  /// target::TargetName).
  using Member =
      std::variant<std::string Row::*, int64_t Row::*, int Row::*, bool Row::*, double Row::*,
                   JobState Row::*, TaskState Row::*, CandidateState Row::*, target::Target Row::*>;

  /// `columns` names the columns, separated by ", ", in the order of `members`; the counts must
  /// agree.
  Table(const char* name, std::string_view columns, std::vector<Member> members);

  const std::string& name() const { return name_; }
  /// "a, b, c": every column, in order.
  const std::string& column_list() const { return column_list_; }
  /// "SELECT <column_list> FROM <name>", for a WHERE / ORDER BY clause to follow.
  const std::string& select_sql() const { return select_sql_; }
  /// "INSERT INTO <name> (<column_list>) VALUES ($1, ..., $n)": Params() fill it.
  const std::string& insert_sql() const { return insert_sql_; }
  /// insert_sql() with "ON CONFLICT (<key>) DO UPDATE SET c = excluded.c, ..." for every column
  /// but the key and those in `kept` (which keep the stored row's values).
  std::string UpsertSql(std::initializer_list<std::string_view> kept = {}) const;

  /// The row's members in column order.
  SqlParams Params(const Row& row) const;
  /// Reads a result row whose cells are the columns in order (a select_sql() row). DATA_LOSS
  /// when a state or target column holds a name none has (a corrupt or newer database).
  absl::StatusOr<Row> Read(const SqlRow& cells) const;
  absl::StatusOr<std::vector<Row>> ReadAll(const SqlRows& result) const;

 private:
  std::string name_;
  std::vector<std::string> columns_;
  std::vector<Member> members_;
  std::string column_list_;
  std::string select_sql_;
  std::string insert_sql_;
};

/// The schema's tables, columns in the order of the migrations' CREATE TABLE statements.
const Table<WorkloadRow>& Workloads();
const Table<WorkerRow>& Workers();
const Table<JobRow>& Jobs();
const Table<TaskRow>& Tasks();
const Table<CandidateRow>& Candidates();
const Table<MeasurementRow>& Measurements();
const Table<TeamRow>& Teams();
const Table<TokenRow>& Tokens();

/// Runs `table.select_sql() + clauses` ("WHERE ... ORDER BY ...") and reads every row.
template <typename Row>
absl::StatusOr<std::vector<Row>> Select(SqlConnection& connection, const Table<Row>& table,
                                        std::string_view clauses, const SqlParams& params,
                                        const std::string& operation) {
  absl::StatusOr<SqlRows> result =
      connection.Query(table.select_sql() + " " + std::string(clauses), params, operation);
  if (!result.ok()) return result.status();
  return table.ReadAll(*result);
}

/// Select() for at most one row (a primary-key lookup): the first, or nullopt.
template <typename Row>
absl::StatusOr<std::optional<Row>> SelectFirst(SqlConnection& connection, const Table<Row>& table,
                                               std::string_view clauses, const SqlParams& params,
                                               const std::string& operation) {
  absl::StatusOr<std::vector<Row>> rows = Select(connection, table, clauses, params, operation);
  if (!rows.ok()) return rows.status();
  if (rows->empty()) return std::optional<Row>();
  return std::optional<Row>(std::move(rows->front()));
}

extern template class Table<WorkloadRow>;
extern template class Table<WorkerRow>;
extern template class Table<JobRow>;
extern template class Table<TaskRow>;
extern template class Table<CandidateRow>;
extern template class Table<MeasurementRow>;
extern template class Table<TeamRow>;
extern template class Table<TokenRow>;

}  // namespace gtco::db::rows
