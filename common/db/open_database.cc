// Chooses the schedule database backend from its location: a PostgreSQL URI or a SQLite path.
#include "common/db/database.h"
#include "common/db/postgres_connection.h"
#include "common/db/postgres_database.h"
#include "common/util/status.h"

namespace gtco::db {

absl::StatusOr<std::unique_ptr<Database>> OpenPostgresDatabase(const std::string& uri) {
  GTCO_ASSIGN_OR_RETURN(std::unique_ptr<PostgresDatabase> database, PostgresDatabase::Open(uri));
  return std::unique_ptr<Database>(std::move(database));
}

absl::StatusOr<std::unique_ptr<Database>> OpenDatabase(const std::string& location) {
  if (IsPostgresUri(location)) return OpenPostgresDatabase(location);
  return OpenSqliteDatabase(location);
}

}  // namespace gtco::db
