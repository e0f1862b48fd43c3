// libpq connection, parameterized statements, transactions and SQLSTATE conversion.
#include "common/db/postgres_connection.h"

#include <libpq-fe.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/util/status.h"

namespace gtco::db {
namespace {

// Debian's Abseil has its own string_view type; the headers here use std::string_view.
absl::string_view AbslView(std::string_view view) { return {view.data(), view.size()}; }

// libpq messages end in newlines and indent hints with tabs; one line reads better in a Status.
std::string OneLine(std::string_view message) {
  std::string line;
  for (const char c : absl::StripTrailingAsciiWhitespace(AbslView(message))) {
    if (c == '\n' || c == '\t') {
      if (!line.empty() && line.back() != ' ') line.push_back(' ');
    } else {
      line.push_back(c);
    }
  }
  return line;
}

// SQLite's wording for constraint failures, so callers and logs read the same on both backends.
std::string_view ConstraintPhrase(std::string_view sqlstate) {
  if (sqlstate == "23505") return "UNIQUE constraint failed: ";
  if (sqlstate == "23503") return "FOREIGN KEY constraint failed: ";
  if (sqlstate == "23502") return "NOT NULL constraint failed: ";
  if (sqlstate == "23514") return "CHECK constraint failed: ";
  return "";
}

bool IsRetryableOutsideTransaction(const PGresult* result) {
  const char* sqlstate = PQresultErrorField(result, PG_DIAG_SQLSTATE);
  return sqlstate != nullptr &&
         (std::string_view(sqlstate) == "40001" || std::string_view(sqlstate) == "40P01");
}

bool Succeeded(const PGresult* result) {
  const ExecStatusType status = PQresultStatus(result);
  return status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK;
}

// The Status for a failed statement (`result` may be null when libpq ran out of memory).
absl::Status ResultStatus(const PGresult* result, PGconn* handle, const std::string& operation,
                          const std::string& location) {
  const char* sqlstate_field =
      result == nullptr ? nullptr : PQresultErrorField(result, PG_DIAG_SQLSTATE);
  const std::string_view sqlstate = sqlstate_field == nullptr ? "" : sqlstate_field;
  absl::StatusCode code;
  std::string detail;
  if (!sqlstate.empty()) {
    code = CodeForSqlState(sqlstate);
    const char* primary = PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY);
    const char* extra = PQresultErrorField(result, PG_DIAG_MESSAGE_DETAIL);
    detail = absl::StrCat(AbslView(ConstraintPhrase(sqlstate)), primary == nullptr ? "" : primary,
                          extra == nullptr ? "" : absl::StrCat("; ", extra), " (sqlstate ",
                          AbslView(sqlstate), ")");
  } else {
    // Raised by libpq itself (no SQLSTATE): usually the connection is gone.
    const bool connection_lost = PQstatus(handle) != CONNECTION_OK;
    code = connection_lost     ? absl::StatusCode::kUnavailable
           : result == nullptr ? absl::StatusCode::kResourceExhausted
                               : absl::StatusCode::kInternal;
    detail = OneLine(result == nullptr ? PQerrorMessage(handle) : PQresultErrorMessage(result));
    if (detail.empty()) detail = PQresStatus(PQresultStatus(result));
  }
  return absl::Status(code, absl::StrCat("database '", location, "': ", operation, ": ", detail));
}

void IgnoreNotice(void* /*arg*/, const char* /*message*/) {}

}  // namespace

bool IsPostgresUri(std::string_view location) {
  return absl::StartsWith(AbslView(location), "postgresql://") ||
         absl::StartsWith(AbslView(location), "postgres://");
}

std::string RedactPostgresUri(std::string_view uri) {
  const size_t scheme_end = uri.find("://");
  if (scheme_end == std::string_view::npos) return std::string(uri);
  const size_t authority_begin = scheme_end + 3;
  const size_t query_begin = uri.find('?', authority_begin);
  const size_t authority_end =
      std::min(uri.find('/', authority_begin), query_begin);  // npos when absent
  std::string_view authority = uri.substr(authority_begin, authority_end - authority_begin);
  std::string redacted(uri.substr(0, authority_begin));
  const size_t at = authority.rfind('@');
  if (at != std::string_view::npos) {
    const std::string_view user_info = authority.substr(0, at);
    absl::StrAppend(&redacted, AbslView(user_info.substr(0, user_info.find(':'))));
    authority.remove_prefix(at);
  }
  absl::StrAppend(&redacted, AbslView(authority));
  if (authority_end == std::string_view::npos) return redacted;
  absl::StrAppend(&redacted, AbslView(uri.substr(authority_end, query_begin - authority_end)));
  if (query_begin == std::string_view::npos) return redacted;
  std::vector<absl::string_view> kept;
  for (absl::string_view parameter : absl::StrSplit(AbslView(uri.substr(query_begin + 1)), '&')) {
    if (!absl::StartsWith(parameter, "password=")) kept.push_back(parameter);
  }
  if (!kept.empty()) absl::StrAppend(&redacted, "?", absl::StrJoin(kept, "&"));
  return redacted;
}

absl::StatusCode CodeForSqlState(std::string_view sqlstate) {
  if (sqlstate == "23505") return absl::StatusCode::kAlreadyExists;
  if (sqlstate == "40001" || sqlstate == "40P01") return absl::StatusCode::kAborted;
  if (sqlstate == "57014") return absl::StatusCode::kCancelled;
  if (sqlstate == "55P03" || sqlstate == "57P01" || sqlstate == "57P02" || sqlstate == "57P03") {
    return absl::StatusCode::kUnavailable;
  }
  if (sqlstate == "28P01") return absl::StatusCode::kUnauthenticated;
  if (sqlstate == "42501") return absl::StatusCode::kPermissionDenied;
  if (sqlstate == "3D000") return absl::StatusCode::kFailedPrecondition;
  if (sqlstate == "XX001" || sqlstate == "XX002") return absl::StatusCode::kDataLoss;
  const std::string_view sqlstate_class = sqlstate.substr(0, 2);
  if (sqlstate_class == "23") return absl::StatusCode::kFailedPrecondition;
  if (sqlstate_class == "08") return absl::StatusCode::kUnavailable;
  if (sqlstate_class == "53") return absl::StatusCode::kResourceExhausted;
  if (sqlstate_class == "22" || sqlstate_class == "54") return absl::StatusCode::kInvalidArgument;
  if (sqlstate_class == "28") return absl::StatusCode::kPermissionDenied;
  return absl::StatusCode::kInternal;
}

std::string ToSqlParam(std::string_view value) { return std::string(value); }

std::string ToSqlParam(int64_t value) { return absl::StrCat(value); }

std::string ToSqlParam(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  char text[32];
  std::snprintf(text, sizeof(text), "%.17g", value);
  return text;
}

// ---------------------------------------------------------------------------------------------
// PostgresRow and PostgresResult

std::string PostgresRow::ColumnText(int column) const {
  return std::string(PQgetvalue(result_, row_index_, column),
                     static_cast<size_t>(PQgetlength(result_, row_index_, column)));
}

int64_t PostgresRow::ColumnInt64(int column) const {
  int64_t value = 0;
  if (!absl::SimpleAtoi(PQgetvalue(result_, row_index_, column), &value)) return 0;
  return value;
}

double PostgresRow::ColumnDouble(int column) const {
  // strtod reads every form PostgreSQL prints, "Infinity" and "NaN" included.
  return std::strtod(PQgetvalue(result_, row_index_, column), nullptr);
}

bool PostgresRow::ColumnIsNull(int column) const {
  return PQgetisnull(result_, row_index_, column) != 0;
}

PostgresResult::PostgresResult(PostgresResult&& other) noexcept
    : result_(std::exchange(other.result_, nullptr)) {}

PostgresResult& PostgresResult::operator=(PostgresResult&& other) noexcept {
  if (this != &other) {
    PQclear(result_);
    result_ = std::exchange(other.result_, nullptr);
  }
  return *this;
}

PostgresResult::~PostgresResult() { PQclear(result_); }

int PostgresResult::row_count() const { return PQntuples(result_); }

int64_t PostgresResult::affected_rows() const {
  int64_t rows = 0;
  if (!absl::SimpleAtoi(PQcmdTuples(result_), &rows)) return 0;  // "" for non-DML statements
  return rows;
}

// ---------------------------------------------------------------------------------------------
// PostgresConnection

absl::StatusOr<std::unique_ptr<PostgresConnection>> PostgresConnection::Open(
    const std::string& uri) {
  const std::string location = RedactPostgresUri(uri);
  // Settings before "dbname" are defaults the URI may override; those after it are enforced.
  const char* const keywords[] = {"application_name", "connect_timeout", "dbname",
                                  "client_encoding", nullptr};
  const char* const values[] = {"gtco", "10", uri.c_str(), "UTF8", nullptr};
  PGconn* handle = PQconnectdbParams(keywords, values, /*expand_dbname=*/1);
  if (handle == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("database '", location, "': cannot connect: out of memory"));
  }
  if (PQstatus(handle) != CONNECTION_OK) {
    absl::Status status = absl::UnavailableError(absl::StrCat(
        "database '", location,
        "': cannot connect to PostgreSQL: ", OneLine(PQerrorMessage(handle)),
        ". Check that the server is running and reachable at that host and port, that the "
        "database exists (createdb), and that the user name and password are right"));
    PQfinish(handle);
    return status;
  }
  // CREATE ... IF NOT EXISTS and friends send NOTICEs that libpq would print to stderr.
  PQsetNoticeProcessor(handle, &IgnoreNotice, nullptr);
  return std::unique_ptr<PostgresConnection>(new PostgresConnection(handle, location));
}

PostgresConnection::~PostgresConnection() { PQfinish(handle_); }

absl::Status PostgresConnection::EnsureConnected(const std::string& operation) {
  if (PQstatus(handle_) == CONNECTION_OK) return absl::OkStatus();
  if (in_transaction_) {
    // The server rolled the transaction back; resetting here would run the rest of it alone.
    return absl::UnavailableError(absl::StrCat("database '", location_, "': ", operation,
                                               ": lost the connection inside a transaction"));
  }
  PQreset(handle_);
  if (PQstatus(handle_) == CONNECTION_OK) {
    PQsetNoticeProcessor(handle_, &IgnoreNotice, nullptr);
    return absl::OkStatus();
  }
  return absl::UnavailableError(absl::StrCat(
      "database '", location_, "': ", operation,
      ": lost the connection and could not reconnect: ", OneLine(PQerrorMessage(handle_))));
}

PGresult* PostgresConnection::Send(const std::string& sql, const std::vector<std::string>& params) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const std::string& param : params) values.push_back(param.c_str());
  return PQexecParams(handle_, sql.c_str(), static_cast<int>(params.size()),
                      /*paramTypes=*/nullptr, values.data(), /*paramLengths=*/nullptr,
                      /*paramFormats=*/nullptr, /*resultFormat=*/0);
}

absl::StatusOr<PostgresResult> PostgresConnection::Execute(const std::string& sql,
                                                           const std::vector<std::string>& params,
                                                           const std::string& operation) {
  for (size_t index = 0; index < params.size(); ++index) {
    if (params[index].find('\0') != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("database '", location_, "': ", operation, ": parameter $", index + 1,
                       " contains a NUL byte, which PostgreSQL text cannot store"));
    }
  }
  GTCO_RETURN_IF_ERROR(EnsureConnected(operation));
  PGresult* raw_result = Send(sql, params);
  if (!in_transaction_ && !Succeeded(raw_result)) {
    const bool dropped = PQstatus(handle_) != CONNECTION_OK;
    if (dropped || IsRetryableOutsideTransaction(raw_result)) {
      PQclear(raw_result);
      raw_result = nullptr;
      if (dropped) GTCO_RETURN_IF_ERROR(EnsureConnected(operation));
      raw_result = Send(sql, params);
    }
  }
  PostgresResult result(raw_result);  // owns it from here on
  if (!Succeeded(raw_result)) return ResultStatus(raw_result, handle_, operation, location_);
  return result;
}

// ---------------------------------------------------------------------------------------------
// PostgresTransaction

absl::StatusOr<PostgresTransaction> PostgresTransaction::Begin(PostgresConnection* connection,
                                                               const std::string& operation) {
  GTCO_CHECK(!connection->in_transaction_, "nested PostgresTransaction for ", operation);
  GTCO_RETURN_IF_ERROR(
      connection->Execute("BEGIN", {}, absl::StrCat(operation, " (begin transaction)")).status());
  connection->in_transaction_ = true;
  return PostgresTransaction(connection, operation);
}

PostgresTransaction::PostgresTransaction(PostgresTransaction&& other) noexcept
    : connection_(std::exchange(other.connection_, nullptr)),
      operation_(std::move(other.operation_)) {}

PostgresTransaction::~PostgresTransaction() {
  if (connection_ == nullptr) return;
  // Best effort: on a broken connection the server has already rolled back, and the next
  // statement resets the connection.
  connection_->Execute("ROLLBACK", {}, operation_).IgnoreError();
  connection_->in_transaction_ = false;  // also after a lost connection: the next call resets
}

absl::Status PostgresTransaction::Commit() {
  GTCO_CHECK(connection_ != nullptr, "Commit() on a finished transaction");
  absl::Status status =
      connection_->Execute("COMMIT", {}, absl::StrCat(operation_, " (commit)")).status();
  if (status.ok()) {
    connection_->in_transaction_ = false;
    connection_ = nullptr;
  }
  return status;
}

}  // namespace gtco::db
