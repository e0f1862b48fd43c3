// SqlConnection over one libpq connection: parameters sent as text, results materialized,
// reconnection, and the single place where libpq errors (SQLSTATE codes) become absl::Status.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/db/sql_connection.h"

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
/// and shutdown errors (08xxx, 57P01..57P03), 55P03 lock timeout and insufficient resources
/// on the database server (53xxx: disk full, out of memory, too many connections) ->
/// UNAVAILABLE, 22xxx data exceptions and 54xxx limits -> INVALID_ARGUMENT,
/// 28P01 bad password -> UNAUTHENTICATED, 28xxx / 42501 -> PERMISSION_DENIED, 3D000 unknown
/// database -> FAILED_PRECONDITION, 57014 -> CANCELLED, XX001/XX002 -> DATA_LOSS, else INTERNAL.
absl::StatusCode CodeForSqlState(std::string_view sqlstate);

/// One libpq connection (see SqlConnection).
///
/// A connection found broken (server restart, idle timeout, terminated backend) is reset
/// before the next statement; a statement outside a transaction that fails because the
/// connection dropped, or with a serialization failure or deadlock, is re-sent once (after the
/// reset; every such statement GTCO sends is idempotent: upserts and state updates). Inside a
/// transaction the error is returned.
class PostgresConnection final : public SqlConnection {
 public:
  /// Connects to `uri` (a libpq connection URI). UNAVAILABLE, naming the redacted URI and what
  /// to check (server reachable, database exists, credentials), when that fails.
  static absl::StatusOr<std::unique_ptr<PostgresConnection>> Open(const std::string& uri);
  ~PostgresConnection() override;
  absl::Status ExecuteScript(std::string_view script, const std::string& operation) override;

 protected:
  absl::StatusOr<SqlResult> Run(const std::string& sql, const SqlParams& params,
                                const std::string& operation) override;
  absl::Status BeginTransaction(const std::string& operation) override;
  absl::Status CommitTransaction(const std::string& operation) override;
  void RollbackTransaction(const std::string& operation) override;

 private:
  PostgresConnection(pg_conn* handle, std::string location)
      : SqlConnection(std::move(location), kDialect), handle_(handle) {}
  /// Rows locked with FOR UPDATE; migrations serialized by a transaction-scoped advisory lock
  /// (its key spells "gtco_mig").
  static constexpr SqlDialect kDialect{
      /*lock_rows=*/" FOR UPDATE",
      /*migration_lock=*/"SELECT pg_advisory_xact_lock(7454692613198539111)"};

  // Resets a connection that libpq reports as broken. UNAVAILABLE when it stays broken.
  absl::Status EnsureConnected(const std::string& operation);
  // Sends the statement once; nullptr only when libpq could not even allocate a result.
  pg_result* Send(const std::string& sql, const std::vector<const char*>& values);

  pg_conn* handle_;
  bool in_transaction_ = false;  ///< between a successful BEGIN and its COMMIT / ROLLBACK
};

}  // namespace gtco::db
