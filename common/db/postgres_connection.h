// A thin RAII layer over one libpq connection: parameterized statements, results, transactions,
// reconnection, and the single place where libpq errors (SQLSTATE codes) become absl::Status.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

struct pg_conn;
struct pg_result;

namespace gtco::db {

/// True when `location` is a PostgreSQL connection URI ("postgresql://..." or "postgres://...").
bool IsPostgresUri(std::string_view location);

/// `uri` with any password removed (the "user:password@" part and a "password=" query
/// parameter), for error messages and logs.
std::string RedactPostgresUri(std::string_view uri);

/// The Status code for a PostgreSQL SQLSTATE: 23505 unique violation -> ALREADY_EXISTS, other
/// integrity violations (23xxx: foreign key, not null, check) -> FAILED_PRECONDITION,
/// 40001 serialization failure / 40P01 deadlock -> ABORTED (retry the operation), connection
/// and shutdown errors (08xxx, 57P01..57P03) and 55P03 lock timeout -> UNAVAILABLE, 53xxx
/// -> RESOURCE_EXHAUSTED, 22xxx data exceptions and 54xxx limits -> INVALID_ARGUMENT,
/// 28P01 bad password -> UNAUTHENTICATED, 28xxx / 42501 -> PERMISSION_DENIED, 3D000 unknown
/// database -> FAILED_PRECONDITION, 57014 -> CANCELLED, XX001/XX002 -> DATA_LOSS, else INTERNAL.
absl::StatusCode CodeForSqlState(std::string_view sqlstate);

/// Text form of statement parameters (PostgreSQL parses them by the column's type). Doubles
/// keep every bit (17 significant digits; NaN and infinities by name); bools are 1 / 0 to
/// match INTEGER flag columns.
std::string ToSqlParam(std::string_view value);
inline std::string ToSqlParam(const std::string& value) { return std::string(value); }
inline std::string ToSqlParam(const char* value) { return std::string(value); }
std::string ToSqlParam(int64_t value);
inline std::string ToSqlParam(int value) { return ToSqlParam(static_cast<int64_t>(value)); }
inline std::string ToSqlParam(bool value) { return value ? "1" : "0"; }
std::string ToSqlParam(double value);

/// The parameters $1, $2, ... of a statement, in order.
template <typename... Values>
std::vector<std::string> SqlParams(const Values&... values) {
  return {ToSqlParam(values)...};
}

/// One row of a PostgresResult, read as text and converted. Valid while its result lives.
class PostgresRow {
 public:
  PostgresRow(const pg_result* result, int row_index) : result_(result), row_index_(row_index) {}

  std::string ColumnText(int column) const;  ///< "" for NULL
  int64_t ColumnInt64(int column) const;     ///< 0 for NULL
  double ColumnDouble(int column) const;     ///< 0 for NULL
  bool ColumnIsNull(int column) const;

 private:
  const pg_result* result_;
  int row_index_;
};

/// An owned, successful libpq result. Move-only.
class PostgresResult {
 public:
  explicit PostgresResult(pg_result* result) : result_(result) {}
  PostgresResult(PostgresResult&& other) noexcept;
  PostgresResult& operator=(PostgresResult&& other) noexcept;
  PostgresResult(const PostgresResult&) = delete;
  PostgresResult& operator=(const PostgresResult&) = delete;
  ~PostgresResult();

  int row_count() const;
  PostgresRow row(int row_index) const { return PostgresRow(result_, row_index); }
  /// Rows inserted, updated or deleted by the statement (PQcmdTuples), 0 for others.
  int64_t affected_rows() const;

  /// Every row read with `read_row`.
  template <typename Row>
  std::vector<Row> ReadAll(Row (*read_row)(const PostgresRow&)) const {
    std::vector<Row> rows;
    rows.reserve(row_count());
    for (int row_index = 0; row_index < row_count(); ++row_index) {
      rows.push_back(read_row(row(row_index)));
    }
    return rows;
  }

 private:
  pg_result* result_;
};

/// One libpq connection. Not thread-safe: the owner serializes access.
///
/// A connection found broken (server restart, idle timeout, terminated backend) is reset
/// before the next statement; a statement outside a transaction that fails because the
/// connection dropped is re-sent once after the reset (every such statement GTCO sends is
/// idempotent: upserts and state updates). Inside a transaction the error is returned.
class PostgresConnection {
 public:
  /// Connects to `uri` (a libpq connection URI). UNAVAILABLE, naming the redacted URI and what
  /// to check (server reachable, database exists, credentials), when that fails.
  static absl::StatusOr<std::unique_ptr<PostgresConnection>> Open(const std::string& uri);
  ~PostgresConnection();
  PostgresConnection(const PostgresConnection&) = delete;
  PostgresConnection& operator=(const PostgresConnection&) = delete;

  /// The URI without its password.
  const std::string& location() const { return location_; }

  /// Runs one statement with `params` bound to $1, $2, ... (never spliced into the text).
  /// `operation` names what was attempted in error messages.
  absl::StatusOr<PostgresResult> Execute(const std::string& sql,
                                         const std::vector<std::string>& params,
                                         const std::string& operation);

 private:
  friend class PostgresTransaction;
  PostgresConnection(pg_conn* handle, std::string location)
      : handle_(handle), location_(std::move(location)) {}

  // Resets a connection that libpq reports as broken. UNAVAILABLE when it stays broken.
  absl::Status EnsureConnected(const std::string& operation);
  // Sends the statement once; nullptr only when libpq could not even allocate a result.
  pg_result* Send(const std::string& sql, const std::vector<std::string>& params);

  pg_conn* handle_;
  std::string location_;
  bool in_transaction_ = false;  ///< between a successful BEGIN and its COMMIT / ROLLBACK
};

/// Scoped transaction (BEGIN; READ COMMITTED). Rolls back on destruction unless Commit()
/// succeeded.
class PostgresTransaction {
 public:
  static absl::StatusOr<PostgresTransaction> Begin(PostgresConnection* connection,
                                                   const std::string& operation);
  PostgresTransaction(PostgresTransaction&& other) noexcept;
  PostgresTransaction& operator=(PostgresTransaction&&) = delete;
  ~PostgresTransaction();

  absl::Status Commit();

 private:
  PostgresTransaction(PostgresConnection* connection, const std::string& operation)
      : connection_(connection), operation_(operation) {}

  PostgresConnection* connection_;  ///< null once committed, rolled back or moved from
  std::string operation_;
};

}  // namespace gtco::db
