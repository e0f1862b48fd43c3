// The backend-independent part of SqlConnection: parameter checks, queries and transactions.
#include "common/db/sql_connection.h"

#include <chrono>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/util/status.h"

namespace gtco::db {
namespace {

absl::StatusCode CodeOf(const absl::Status& status) { return status.code(); }
template <typename T>
absl::StatusCode CodeOf(const absl::StatusOr<T>& result) {
  return result.status().code();
}

}  // namespace

template <typename Step>
auto SqlConnection::Observed(Step step) -> decltype(step()) {
  if (!observer_) return step();
  const auto start = std::chrono::steady_clock::now();
  auto outcome = step();
  observer_(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
            CodeOf(outcome));
  return outcome;
}

absl::StatusOr<SqlResult> SqlConnection::CheckAndRun(const std::string& sql,
                                                     const SqlParams& params,
                                                     const std::string& operation) {
  for (size_t index = 0; index < params.size(); ++index) {
    const SqlValue::Storage& value = params[index].storage();
    const std::string* text = std::get_if<std::string>(&value);
    const double* number = std::get_if<double>(&value);
    const char* problem = nullptr;
    if (text != nullptr && text->find('\0') != std::string::npos) {
      problem = " contains a NUL byte, which database text cannot hold";
    } else if (number != nullptr && std::isnan(*number)) {
      problem = " is NaN, which the database cannot store (SQLite reads it back as NULL)";
    }
    if (problem != nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("database '", location(), "': ", operation,
                                                     ": parameter $", index + 1, problem));
    }
  }
  return Observed([&] { return Run(sql, params, operation); });
}

absl::StatusOr<SqlRows> SqlConnection::Query(const std::string& sql, const SqlParams& params,
                                             const std::string& operation) {
  GTCO_ASSIGN_OR_RETURN(SqlResult result, CheckAndRun(sql, params, operation));
  return std::move(result.rows);
}

absl::StatusOr<int64_t> SqlConnection::Execute(const std::string& sql, const SqlParams& params,
                                               const std::string& operation) {
  GTCO_ASSIGN_OR_RETURN(const SqlResult result, CheckAndRun(sql, params, operation));
  return result.affected_rows;
}

absl::StatusOr<SqlTransaction> SqlConnection::Begin(const std::string& operation) {
  GTCO_RETURN_IF_ERROR(
      Observed([&] { return BeginTransaction(absl::StrCat(operation, " (begin transaction)")); }));
  return SqlTransaction(this, operation);
}

SqlTransaction::SqlTransaction(SqlTransaction&& other) noexcept
    : connection_(std::exchange(other.connection_, nullptr)),
      operation_(std::move(other.operation_)) {}

SqlTransaction::~SqlTransaction() {
  if (connection_ != nullptr) connection_->RollbackTransaction(operation_);
}

absl::Status SqlTransaction::Commit() {
  GTCO_CHECK(connection_ != nullptr, "Commit() on a finished transaction");
  GTCO_RETURN_IF_ERROR(connection_->Observed(
      [&] { return connection_->CommitTransaction(absl::StrCat(operation_, " (commit)")); }));
  connection_ = nullptr;
  return absl::OkStatus();
}

}  // namespace gtco::db
