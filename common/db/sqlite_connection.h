// SqlConnection over one sqlite3 connection: cached prepared statements, $N placeholders
// rewritten to SQLite's ?N, and the single place where sqlite3 result codes become absl::Status.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/db/sql_connection.h"

struct sqlite3;
struct sqlite3_stmt;

namespace gtco::db {

/// Converts a sqlite3 result code into a Status whose message names the operation and the
/// database path (and sqlite's own message when `connection` is given). The code mapping:
/// busy/locked, a full disk and I/O errors -> UNAVAILABLE (the database cannot take the write
/// now; the same call succeeds once it can), primary key/unique -> ALREADY_EXISTS, foreign key
/// and other constraints -> FAILED_PRECONDITION, not-a-database -> INVALID_ARGUMENT, corrupt ->
/// DATA_LOSS, cannot open/read-only/permission -> FAILED_PRECONDITION, out of memory ->
/// RESOURCE_EXHAUSTED, everything else -> INTERNAL.
absl::Status SqliteStatus(int result_code, sqlite3* connection, const std::string& operation,
                          const std::string& path);

/// `sql` with every placeholder $N written ?N, SQLite's numbered parameter. (SQLite would read
/// "$1" as a named parameter, numbered by first appearance: "$2 ... $1" would bind backwards.)
/// Text inside string literals, quoted identifiers and comments is left alone.
std::string SqlitePlaceholders(std::string_view sql);

/// One open sqlite3 connection (see SqlConnection). Text compares bytewise under COLLATE "C",
/// which this connection defines, as PostgreSQL's "C" collation does. Values round-trip exactly,
/// but for one SQLite rule: a REAL (DOUBLE PRECISION) column stores -0.0 as the integer 0, so it
/// reads back as +0.0.
class SqliteConnection final : public SqlConnection {
 public:
  /// Opens (creating if needed) the file at `path`, checks that it is a SQLite database, and
  /// configures it: WAL journal, synchronous=NORMAL, foreign keys on. Statements, those first
  /// ones included, wait up to `busy_timeout_ms` for another connection's lock (e.g. one
  /// switching a new file to WAL) before failing with UNAVAILABLE. FAILED_PRECONDITION when the
  /// directory does not exist or the file cannot be opened, INVALID_ARGUMENT when the file is
  /// not a database. ":memory:" opens a private in-memory database.
  static absl::StatusOr<std::unique_ptr<SqliteConnection>> Open(const std::string& path,
                                                                int busy_timeout_ms = 5000);
  ~SqliteConnection() override;
  absl::Status ExecuteScript(std::string_view script, const std::string& operation) override;

 protected:
  absl::StatusOr<SqlResult> Run(const std::string& sql, const SqlParams& params,
                                const std::string& operation) override;
  absl::Status BeginTransaction(const std::string& operation) override;
  absl::Status CommitTransaction(const std::string& operation) override;
  void RollbackTransaction(const std::string& operation) override;

 private:
  SqliteConnection(sqlite3* handle, std::string path)
      : SqlConnection(std::move(path), kDialect), handle_(handle) {}
  /// No row locks and no migration lock: BEGIN IMMEDIATE takes the database's write lock.
  static constexpr SqlDialect kDialect{/*lock_rows=*/"", /*migration_lock=*/""};

  // Runs SQL text as it is (no placeholders), statement by statement.
  absl::Status Exec(const std::string& sql, const std::string& operation);
  // The cached prepared statement for `sql` (keyed by the $N text), prepared on first use.
  absl::StatusOr<sqlite3_stmt*> Prepare(const std::string& sql, const std::string& operation);
  absl::Status Error(int result_code, const std::string& operation) const;

  sqlite3* handle_;
  std::unordered_map<std::string, sqlite3_stmt*> statement_cache_;
};

}  // namespace gtco::db
