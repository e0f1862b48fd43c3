// The one interface the schedule database's SQL runs on: statements written once with $1, $2, ...
// placeholders, materialized results, scoped transactions, and the few dialect differences that
// one SQL text cannot hide. SqliteConnection and PostgresConnection implement it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/db/sql_value.h"

namespace gtco::db {

/// What one statement returned.
struct SqlResult {
  SqlRows rows;
  int64_t affected_rows = 0;  ///< rows inserted, updated or deleted; 0 for a query
};

/// The dialect differences that the shared statements leave to the connection. Everything else
/// (ON CONFLICT upserts, RETURNING, COLLATE "C" for bytewise text order, substr) is written once.
struct SqlDialect {
  /// Appended to a SELECT inside a transaction to lock the rows it returns until the transaction
  /// ends (" FOR UPDATE"); "" where the transaction already holds the whole database.
  std::string_view lock_rows;
  /// Run first in every migration transaction so that processes migrate one at a time; "" where
  /// beginning the transaction already serializes writers.
  std::string_view migration_lock;
};

class SqlTransaction;

/// One connection to a SQL database. Not thread-safe: the owner serializes access.
///
/// Every error is a Status whose message reads "database '<location>': <operation>: <detail>",
/// with the backend's own code mapping (SqliteStatus, CodeForSqlState).
class SqlConnection {
 public:
  /// A connection owns its handle: neither it nor its backends copy.
  SqlConnection(const SqlConnection&) = delete;
  SqlConnection& operator=(const SqlConnection&) = delete;
  virtual ~SqlConnection() = default;

  /// The database path, or the URI without its password, as messages name it.
  const std::string& location() const { return location_; }
  const SqlDialect& dialect() const { return dialect_; }

  /// Runs one statement and returns its rows. `sql` uses $1, $2, ... (in any order, each as
  /// often as needed) for `params`, which are bound, never spliced into the text. `operation`
  /// names what was attempted in error messages. INVALID_ARGUMENT, before anything runs, for a
  /// text parameter with a NUL byte or a NaN double: not every backend can store them.
  absl::StatusOr<SqlRows> Query(const std::string& sql, const SqlParams& params,
                                const std::string& operation);
  /// Query() for a statement whose rows are of no interest; returns the affected row count.
  absl::StatusOr<int64_t> Execute(const std::string& sql, const SqlParams& params,
                                  const std::string& operation);
  /// Runs a script of `;`-separated statements without parameters (the migrations).
  virtual absl::Status ExecuteScript(std::string_view script, const std::string& operation) = 0;

  /// Begins a write transaction: BEGIN IMMEDIATE on SQLite (writers queue on the database lock
  /// up front instead of failing on upgrade), BEGIN (READ COMMITTED) on PostgreSQL. Transactions
  /// do not nest; the returned one must not outlive this connection.
  absl::StatusOr<SqlTransaction> Begin(const std::string& operation);

  /// Called after every statement, begin and commit with its seconds and outcome (metrics).
  void set_observer(std::function<void(double, absl::StatusCode)> observer) {
    observer_ = std::move(observer);
  }

 protected:
  /// `location` and `dialect`: what location() and dialect() return.
  SqlConnection(std::string location, SqlDialect dialect)
      : location_(std::move(location)), dialect_(dialect) {}

  /// Runs one statement whose parameters passed the checks of Query().
  virtual absl::StatusOr<SqlResult> Run(const std::string& sql, const SqlParams& params,
                                        const std::string& operation) = 0;
  virtual absl::Status BeginTransaction(const std::string& operation) = 0;
  virtual absl::Status CommitTransaction(const std::string& operation) = 0;
  /// Best effort: a failed rollback leaves nothing more to do (the next statement reports any
  /// lasting problem).
  virtual void RollbackTransaction(const std::string& operation) = 0;

 private:
  friend class SqlTransaction;
  absl::StatusOr<SqlResult> CheckAndRun(const std::string& sql, const SqlParams& params,
                                        const std::string& operation);
  /// Runs `step` (a statement, a begin or a commit) and reports it to the observer.
  template <typename Step>
  auto Observed(Step step) -> decltype(step());

  const std::string location_;
  const SqlDialect dialect_;
  std::function<void(double, absl::StatusCode)> observer_;
};

/// A scoped transaction from SqlConnection::Begin(). Rolls back on destruction unless Commit()
/// succeeded. Move-only.
class SqlTransaction {
 public:
  SqlTransaction(SqlTransaction&& other) noexcept;
  SqlTransaction& operator=(SqlTransaction&&) = delete;
  SqlTransaction(const SqlTransaction&) = delete;
  ~SqlTransaction();

  /// Commits; on failure the transaction stays open and is rolled back on destruction.
  absl::Status Commit();

 private:
  friend class SqlConnection;
  SqlTransaction(SqlConnection* connection, std::string operation)
      : connection_(connection), operation_(std::move(operation)) {}

  SqlConnection* connection_;  ///< null once committed or moved from
  std::string operation_;
};

}  // namespace gtco::db
