// libpq connection: text parameters, typed results, reconnection, SQLSTATE conversion.
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
#include "common/db/migrations.h"
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

// The cells of a result, typed by their column: integers and doubles parsed from PostgreSQL's
// text form (doubles print with every bit since PostgreSQL 12), anything else as text.
SqlRows ReadRows(const PGresult* result) {
  constexpr Oid kInt8 = 20, kInt2 = 21, kInt4 = 23, kFloat4 = 700, kFloat8 = 701;
  const int row_count = PQntuples(result);
  const int column_count = PQnfields(result);
  SqlRows rows;
  rows.reserve(static_cast<size_t>(row_count));
  for (int row_index = 0; row_index < row_count; ++row_index) {
    std::vector<SqlValue> cells;
    cells.reserve(static_cast<size_t>(column_count));
    for (int column = 0; column < column_count; ++column) {
      if (PQgetisnull(result, row_index, column) != 0) {
        cells.emplace_back();
        continue;
      }
      std::string text(PQgetvalue(result, row_index, column),
                       static_cast<size_t>(PQgetlength(result, row_index, column)));
      const Oid type = PQftype(result, column);
      int64_t integer = 0;
      if ((type == kInt8 || type == kInt4 || type == kInt2) && absl::SimpleAtoi(text, &integer)) {
        cells.emplace_back(integer);
      } else if (type == kFloat8 || type == kFloat4) {
        cells.emplace_back(std::strtod(text.c_str(), nullptr));  // "Infinity" and "NaN" too
      } else {
        cells.emplace_back(std::move(text));
      }
    }
    rows.emplace_back(std::move(cells));
  }
  return rows;
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
  if (sqlstate_class == "53") return absl::StatusCode::kUnavailable;
  if (sqlstate_class == "22" || sqlstate_class == "54") return absl::StatusCode::kInvalidArgument;
  if (sqlstate_class == "28") return absl::StatusCode::kPermissionDenied;
  return absl::StatusCode::kInternal;
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

absl::Status PostgresConnection::ExecuteScript(std::string_view script,
                                               const std::string& operation) {
  // libpq runs a parameterless multi-statement string too, but then names no failing statement.
  const std::vector<std::string_view> statements = SplitSqlStatements(script);
  for (size_t index = 0; index < statements.size(); ++index) {
    GTCO_RETURN_IF_ERROR(Execute(std::string(statements[index]), {},
                                 absl::StrCat(operation, ", statement ", index + 1))
                             .status());
  }
  return absl::OkStatus();
}

absl::Status PostgresConnection::EnsureConnected(const std::string& operation) {
  if (PQstatus(handle_) == CONNECTION_OK) return absl::OkStatus();
  if (in_transaction_) {
    // The server rolled the transaction back; resetting here would run the rest of it alone.
    return absl::UnavailableError(absl::StrCat("database '", location(), "': ", operation,
                                               ": lost the connection inside a transaction"));
  }
  PQreset(handle_);
  if (PQstatus(handle_) == CONNECTION_OK) {
    PQsetNoticeProcessor(handle_, &IgnoreNotice, nullptr);
    return absl::OkStatus();
  }
  return absl::UnavailableError(absl::StrCat(
      "database '", location(), "': ", operation,
      ": lost the connection and could not reconnect: ", OneLine(PQerrorMessage(handle_))));
}

PGresult* PostgresConnection::Send(const std::string& sql, const std::vector<const char*>& values) {
  return PQexecParams(handle_, sql.c_str(), static_cast<int>(values.size()),
                      /*paramTypes=*/nullptr, values.data(), /*paramLengths=*/nullptr,
                      /*paramFormats=*/nullptr, /*resultFormat=*/0);
}

absl::StatusOr<SqlResult> PostgresConnection::Run(const std::string& sql, const SqlParams& params,
                                                  const std::string& operation) {
  // Text parameters; PostgreSQL parses each by the type its place in the statement calls for.
  std::vector<std::string> texts;
  texts.reserve(params.size());
  for (const SqlValue& param : params) texts.push_back(param.AsText());
  std::vector<const char*> values;
  values.reserve(params.size());
  for (size_t index = 0; index < params.size(); ++index) {
    values.push_back(params[index].is_null() ? nullptr : texts[index].c_str());
  }
  GTCO_RETURN_IF_ERROR(EnsureConnected(operation));
  PGresult* raw_result = Send(sql, values);
  if (!in_transaction_ && !Succeeded(raw_result)) {
    const bool dropped = PQstatus(handle_) != CONNECTION_OK;
    if (dropped || IsRetryableOutsideTransaction(raw_result)) {
      PQclear(raw_result);
      raw_result = nullptr;
      if (dropped) GTCO_RETURN_IF_ERROR(EnsureConnected(operation));
      raw_result = Send(sql, values);
    }
  }
  const std::unique_ptr<PGresult, void (*)(PGresult*)> owned(raw_result, &PQclear);
  if (!Succeeded(raw_result)) return ResultStatus(raw_result, handle_, operation, location());
  SqlResult result;
  result.rows = ReadRows(raw_result);
  // PQcmdTuples counts the rows of a SELECT too, and is "" for BEGIN and other commands.
  if (absl::StartsWith(PQcmdStatus(raw_result), "SELECT") ||
      !absl::SimpleAtoi(PQcmdTuples(raw_result), &result.affected_rows)) {
    result.affected_rows = 0;
  }
  return result;
}

absl::Status PostgresConnection::BeginTransaction(const std::string& operation) {
  GTCO_CHECK(!in_transaction_, "nested transaction for ", operation);
  GTCO_RETURN_IF_ERROR(Execute("BEGIN", {}, operation).status());
  in_transaction_ = true;
  return absl::OkStatus();
}

absl::Status PostgresConnection::CommitTransaction(const std::string& operation) {
  GTCO_RETURN_IF_ERROR(Execute("COMMIT", {}, operation).status());
  in_transaction_ = false;
  return absl::OkStatus();
}

void PostgresConnection::RollbackTransaction(const std::string& operation) {
  // Best effort: on a broken connection the server has already rolled back, and the next
  // statement resets the connection.
  Execute("ROLLBACK", {}, operation).IgnoreError();
  in_transaction_ = false;  // also after a lost connection: the next call resets
}

}  // namespace gtco::db
