// A thin RAII layer over one sqlite3 connection: cached prepared statements, transactions,
// and the single place where sqlite3 result codes become absl::Status.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

struct sqlite3;
struct sqlite3_stmt;

namespace gtco::db {

/// Converts a sqlite3 result code into a Status whose message names the operation and the
/// database path (and sqlite's own message when `connection` is given). The code mapping:
/// busy/locked -> UNAVAILABLE, primary key/unique -> ALREADY_EXISTS, foreign key and other
/// constraints -> FAILED_PRECONDITION, not-a-database -> INVALID_ARGUMENT, corrupt ->
/// DATA_LOSS, cannot open/read-only/permission -> FAILED_PRECONDITION, full/nomem ->
/// RESOURCE_EXHAUSTED, everything else -> INTERNAL.
absl::Status SqliteStatus(int result_code, sqlite3* connection, const std::string& operation,
                          const std::string& path);

class SqliteConnection;

/// A borrowed, cached prepared statement. Resets itself and clears its bindings when
/// destroyed, so the cache can hand it out again. Move-only; must not outlive its connection.
class SqliteStatement {
 public:
  SqliteStatement(SqliteStatement&& other) noexcept;
  SqliteStatement& operator=(SqliteStatement&&) = delete;
  SqliteStatement(const SqliteStatement&) = delete;
  ~SqliteStatement();

  /// Binds parameters ?1, ?2, ... in order. A bind failure is remembered and reported by the
  /// next Step().
  template <typename... Values>
  SqliteStatement& BindAll(const Values&... values) {
    int index = 1;
    (Bind(index++, values), ...);
    return *this;
  }
  void Bind(int index, std::string_view value);
  void Bind(int index, const std::string& value) { Bind(index, std::string_view(value)); }
  void Bind(int index, const char* value) { Bind(index, std::string_view(value)); }
  void Bind(int index, int64_t value);
  void Bind(int index, int value) { Bind(index, static_cast<int64_t>(value)); }
  void Bind(int index, bool value) { Bind(index, static_cast<int64_t>(value ? 1 : 0)); }
  void Bind(int index, double value);

  /// Advances: true when a row is available, false when the statement is done.
  absl::StatusOr<bool> Step();
  /// Steps until done (for statements that return no rows).
  absl::Status Run();

  std::string ColumnText(int column) const;
  int64_t ColumnInt64(int column) const;
  double ColumnDouble(int column) const;
  bool ColumnIsNull(int column) const;

 private:
  friend class SqliteConnection;
  SqliteStatement(SqliteConnection* connection, sqlite3_stmt* statement,
                  const std::string& operation);

  SqliteConnection* connection_;
  sqlite3_stmt* statement_;
  std::string operation_;
  int bind_error_code_ = 0;  ///< first failed sqlite3_bind_* result, 0 when none
};

/// One open sqlite3 connection. Not thread-safe: the owner serializes access.
class SqliteConnection {
 public:
  /// Opens (creating if needed) the file at `path` and checks that it is a SQLite database.
  /// Statements, that first check included, wait up to `busy_timeout_ms` for another
  /// connection's lock (e.g. one switching a new file to WAL) before failing with UNAVAILABLE.
  /// FAILED_PRECONDITION when the directory does not exist or the file cannot be opened,
  /// INVALID_ARGUMENT when the file is not a database.
  static absl::StatusOr<std::unique_ptr<SqliteConnection>> Open(const std::string& path,
                                                                int busy_timeout_ms = 5000);
  ~SqliteConnection();
  SqliteConnection(const SqliteConnection&) = delete;
  SqliteConnection& operator=(const SqliteConnection&) = delete;

  const std::string& path() const { return path_; }

  /// Runs a script of one or more statements that return no rows of interest.
  absl::Status Exec(const std::string& sql, const std::string& operation);
  /// Returns the cached prepared statement for `sql`, preparing it on first use.
  absl::StatusOr<SqliteStatement> Prepare(const std::string& sql, const std::string& operation);
  /// Rows changed by the most recent INSERT/UPDATE/DELETE.
  int64_t ChangedRows() const;
  /// Builds the Status for a failed call on this connection.
  absl::Status Error(int result_code, const std::string& operation) const;

 private:
  SqliteConnection(sqlite3* handle, std::string path) : handle_(handle), path_(std::move(path)) {}

  friend class SqliteStatement;
  sqlite3* handle_;
  std::string path_;
  std::unordered_map<std::string, sqlite3_stmt*> statement_cache_;
};

/// Scoped write transaction (BEGIN IMMEDIATE, so writers queue on the lock up front instead of
/// failing on upgrade). Rolls back on destruction unless Commit() succeeded.
class SqliteTransaction {
 public:
  static absl::StatusOr<SqliteTransaction> Begin(SqliteConnection* connection,
                                                 const std::string& operation);
  SqliteTransaction(SqliteTransaction&& other) noexcept;
  SqliteTransaction& operator=(SqliteTransaction&&) = delete;
  ~SqliteTransaction();

  absl::Status Commit();

 private:
  SqliteTransaction(SqliteConnection* connection, const std::string& operation)
      : connection_(connection), operation_(operation) {}

  SqliteConnection* connection_;  ///< null once committed, rolled back or moved from
  std::string operation_;
};

}  // namespace gtco::db
