// The SQL schedule database: the leader lease (an active server and its standbys sharing one
// database).
#include "absl/strings/str_cat.h"
#include "common/db/sql_database.h"
#include "common/util/status.h"

namespace gtco::db {

absl::StatusOr<LeaderRow> SqlDatabase::ClaimLeadership(const std::string& holder,
                                                       const std::string& address,
                                                       int64_t now_unix_ms, int64_t lease_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  // One statement, so the claim is atomic across servers: it inserts the lease, or takes it
  // over when it is the holder's own or has expired, or changes nothing.
  GTCO_RETURN_IF_ERROR(
      connection_
          ->Execute("INSERT INTO leader (id, holder, address, expires_unix_ms) "
                    "VALUES (1, $1, $2, $3) ON CONFLICT (id) DO UPDATE SET "
                    "holder = excluded.holder, address = excluded.address, "
                    "expires_unix_ms = excluded.expires_unix_ms "
                    "WHERE leader.holder = excluded.holder OR leader.expires_unix_ms < $4",
                    {holder, address, now_unix_ms + lease_ms, now_unix_ms},
                    "claim the leader lease")
          .status());
  GTCO_ASSIGN_OR_RETURN(
      const SqlRows result,
      connection_->Query("SELECT holder, address, expires_unix_ms FROM leader WHERE id = 1", {},
                         "read the leader lease"));
  LeaderRow leader;
  if (!result.empty()) {
    leader.holder = result.front().ColumnText(0);
    leader.address = result.front().ColumnText(1);
    leader.expires_unix_ms = result.front().ColumnInt64(2);
  }
  return leader;
}

absl::Status SqlDatabase::ReleaseLeadership(const std::string& holder) {
  std::lock_guard<std::mutex> lock(mu_);
  return connection_
      ->Execute("UPDATE leader SET expires_unix_ms = 0 WHERE holder = $1", {holder},
                "release the leader lease")
      .status();
}

}  // namespace gtco::db
