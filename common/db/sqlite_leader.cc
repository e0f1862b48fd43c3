// The leader lease on SQLite (servers sharing one database file on one machine).
#include "absl/strings/str_cat.h"
#include "common/db/sqlite_database.h"
#include "common/util/status.h"

namespace gtco::db {

absl::StatusOr<LeaderRow> SqliteDatabase::ClaimLeadership(const std::string& holder,
                                                          const std::string& address,
                                                          int64_t now_unix_ms, int64_t lease_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(
      SqliteStatement claim,
      connection_->Prepare(
          "INSERT INTO leader (id, holder, address, expires_unix_ms) VALUES (1, ?1, ?2, ?3) "
          "ON CONFLICT (id) DO UPDATE SET holder = excluded.holder, address = excluded.address, "
          "expires_unix_ms = excluded.expires_unix_ms "
          "WHERE leader.holder = excluded.holder OR leader.expires_unix_ms < ?4",
          "claim the leader lease"));
  GTCO_RETURN_IF_ERROR(claim.BindAll(holder, address, now_unix_ms + lease_ms, now_unix_ms).Run());
  GTCO_ASSIGN_OR_RETURN(SqliteStatement read,
                        connection_->Prepare(
                            "SELECT holder, address, expires_unix_ms FROM leader WHERE id = 1",
                            "read the leader lease"));
  GTCO_ASSIGN_OR_RETURN(const bool has_row, read.Step());
  LeaderRow leader;
  if (has_row) {
    leader.holder = read.ColumnText(0);
    leader.address = read.ColumnText(1);
    leader.expires_unix_ms = read.ColumnInt64(2);
  }
  return leader;
}

absl::Status SqliteDatabase::ReleaseLeadership(const std::string& holder) {
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(SqliteStatement release,
                        connection_->Prepare(
                            "UPDATE leader SET expires_unix_ms = 0 WHERE holder = ?1",
                            "release the leader lease"));
  return release.BindAll(holder).Run();
}

}  // namespace gtco::db
