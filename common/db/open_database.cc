// Opens the schedule database: a SqlDatabase over a SQLite or a PostgreSQL connection, chosen
// from the location (a PostgreSQL URI or a SQLite path).
#include <chrono>
#include <thread>

#include "common/db/database.h"
#include "common/db/postgres_connection.h"
#include "common/db/sql_database.h"
#include "common/db/sqlite_connection.h"
#include "common/util/status.h"

namespace gtco::db {
namespace {

absl::StatusOr<std::unique_ptr<Database>> OpenSqliteOnce(const std::string& path) {
  GTCO_ASSIGN_OR_RETURN(std::unique_ptr<SqliteConnection> connection, SqliteConnection::Open(path));
  GTCO_ASSIGN_OR_RETURN(std::unique_ptr<SqlDatabase> database,
                        SqlDatabase::Open(std::move(connection)));
  return std::unique_ptr<Database>(std::move(database));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Database>> OpenSqliteDatabase(const std::string& path) {
  // Several processes opening a new file at once race on the switch to WAL and the first
  // migration; SQLite can answer BUSY there without waiting (a lock upgrade it cannot wait
  // for), so an open that lost the race starts again on a fresh connection.
  constexpr int kAttempts = 5;
  absl::StatusOr<std::unique_ptr<Database>> database;
  for (int attempt = 1; attempt <= kAttempts; ++attempt) {
    database = OpenSqliteOnce(path);
    if (database.ok() || database.status().code() != absl::StatusCode::kUnavailable) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50 * attempt));
  }
  return database;
}

absl::StatusOr<std::unique_ptr<Database>> OpenPostgresDatabase(const std::string& uri) {
  GTCO_ASSIGN_OR_RETURN(std::unique_ptr<PostgresConnection> connection,
                        PostgresConnection::Open(uri));
  GTCO_ASSIGN_OR_RETURN(std::unique_ptr<SqlDatabase> database,
                        SqlDatabase::Open(std::move(connection)));
  return std::unique_ptr<Database>(std::move(database));
}

absl::StatusOr<std::unique_ptr<Database>> OpenDatabase(const std::string& location) {
  if (IsPostgresUri(location)) return OpenPostgresDatabase(location);
  return OpenSqliteDatabase(location);
}

}  // namespace gtco::db
