// The leader lease on PostgreSQL (an active server and its standbys on one shared database).
#include "absl/strings/str_cat.h"
#include "common/db/postgres_database.h"
#include "common/util/status.h"

namespace gtco::db {

absl::StatusOr<LeaderRow> PostgresDatabase::ClaimLeadership(const std::string& holder,
                                                            const std::string& address,
                                                            int64_t now_unix_ms, int64_t lease_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_RETURN_IF_ERROR(
      connection_
          ->Execute("INSERT INTO leader (id, holder, address, expires_unix_ms) "
                    "VALUES (1, $1, $2, $3) ON CONFLICT (id) DO UPDATE SET "
                    "holder = excluded.holder, address = excluded.address, "
                    "expires_unix_ms = excluded.expires_unix_ms "
                    "WHERE leader.holder = excluded.holder OR leader.expires_unix_ms < $4",
                    SqlParams(holder, address, now_unix_ms + lease_ms, now_unix_ms),
                    "claim the leader lease")
          .status());
  GTCO_ASSIGN_OR_RETURN(
      PostgresResult result,
      connection_->Execute("SELECT holder, address, expires_unix_ms FROM leader WHERE id = 1",
                           SqlParams(), "read the leader lease"));
  LeaderRow leader;
  if (result.row_count() > 0) {
    leader.holder = result.row(0).ColumnText(0);
    leader.address = result.row(0).ColumnText(1);
    leader.expires_unix_ms = result.row(0).ColumnInt64(2);
  }
  return leader;
}

absl::Status PostgresDatabase::ReleaseLeadership(const std::string& holder) {
  std::lock_guard<std::mutex> lock(mu_);
  return connection_
      ->Execute("UPDATE leader SET expires_unix_ms = 0 WHERE holder = $1", SqlParams(holder),
                "release the leader lease")
      .status();
}

}  // namespace gtco::db
