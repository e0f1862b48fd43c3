// PostgreSQL schedule database: teams, access tokens, and the counts behind team quotas.
#include "absl/strings/str_cat.h"
#include "common/db/postgres_database.h"
#include "common/db/row_mapping.h"
#include "common/db/team_checks.h"
#include "common/util/status.h"

namespace gtco::db {
namespace {

using rows::kTeamColumns;
using rows::kTokenColumns;

int64_t ReadCount(const PostgresResult& result) {
  return result.row_count() > 0 ? result.row(0).ColumnInt64(0) : 0;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Teams

absl::Status PostgresDatabase::PutTeam(const TeamRow& row) {
  GTCO_RETURN_IF_ERROR(CheckTeamRow(row));
  std::lock_guard<std::mutex> lock(mu_);
  return connection_
      ->Execute(absl::StrCat("INSERT INTO teams (", kTeamColumns,
                             ") VALUES ($1, $2, $3, $4, $5) ON CONFLICT (name) DO UPDATE SET "
                             "max_concurrent_jobs = excluded.max_concurrent_jobs, "
                             "max_trials_per_day = excluded.max_trials_per_day, "
                             "share = excluded.share"),
                SqlParams(row.name, row.max_concurrent_jobs, row.max_trials_per_day, row.share,
                          row.created_unix_ms),
                absl::StrCat("put team '", row.name, "'"))
      .status();
}

absl::StatusOr<TeamRow> PostgresDatabase::GetTeam(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(
      PostgresResult result,
      connection_->Execute(absl::StrCat("SELECT ", kTeamColumns, " FROM teams WHERE name = $1"),
                           SqlParams(name), absl::StrCat("get team '", name, "'")));
  if (result.row_count() == 0) {
    return absl::NotFoundError(absl::StrCat("team '", name, "' not found"));
  }
  return rows::ReadTeam(result.row(0));
}

absl::StatusOr<std::vector<TeamRow>> PostgresDatabase::ListTeams() {
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(
      PostgresResult result,
      connection_->Execute(
          absl::StrCat("SELECT ", kTeamColumns, " FROM teams ORDER BY name COLLATE \"C\""), {},
          "list teams"));
  return result.ReadAll(&rows::ReadTeam<PostgresRow>);
}

// ---------------------------------------------------------------------------------------------
// Tokens

absl::Status PostgresDatabase::PutToken(const TokenRow& row) {
  GTCO_RETURN_IF_ERROR(CheckTokenRow(row));
  std::lock_guard<std::mutex> lock(mu_);
  const std::string operation = absl::StrCat("put token '", row.token_id, "'");
  // Teams are never deleted, so the team found here still exists when the token is inserted.
  if (!row.team.empty()) {
    GTCO_ASSIGN_OR_RETURN(PostgresResult team_lookup,
                          connection_->Execute("SELECT 1 FROM teams WHERE name = $1",
                                               SqlParams(row.team), operation));
    if (team_lookup.row_count() == 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "token '", row.token_id, "': team '", row.team, "' does not exist; create it first"));
    }
  }
  const absl::Status status =
      connection_
          ->Execute(absl::StrCat("INSERT INTO tokens (", kTokenColumns,
                                 ") VALUES ($1, $2, $3, $4, $5, $6, $7)"),
                    SqlParams(row.token_id, row.team, row.role, row.salt, row.hash,
                              row.created_unix_ms, row.revoked_unix_ms),
                    operation)
          .status();
  if (absl::IsAlreadyExists(status)) {
    return absl::AlreadyExistsError(absl::StrCat("token '", row.token_id, "' already exists"));
  }
  return status;
}

absl::StatusOr<std::optional<TokenRow>> PostgresDatabase::GetToken(const std::string& token_id) {
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(
      PostgresResult result,
      connection_->Execute(
          absl::StrCat("SELECT ", kTokenColumns, " FROM tokens WHERE token_id = $1"),
          SqlParams(token_id), absl::StrCat("get token '", token_id, "'")));
  if (result.row_count() == 0) return std::optional<TokenRow>();
  return std::optional<TokenRow>(rows::ReadToken(result.row(0)));
}

absl::StatusOr<std::vector<TokenRow>> PostgresDatabase::ListTokens(const std::string& team) {
  const std::string where = team.empty() ? "" : " WHERE team = $1";
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(
      PostgresResult result,
      connection_->Execute(absl::StrCat("SELECT ", kTokenColumns, " FROM tokens", where,
                                        " ORDER BY created_unix_ms, token_id COLLATE \"C\""),
                           team.empty() ? std::vector<std::string>() : SqlParams(team),
                           team.empty() ? std::string("list tokens")
                                        : absl::StrCat("list tokens of team '", team, "'")));
  return result.ReadAll(&rows::ReadToken<PostgresRow>);
}

absl::StatusOr<int64_t> PostgresDatabase::RevokeTokens(const std::string& prefix,
                                                       int64_t now_unix_ms) {
  GTCO_RETURN_IF_ERROR(CheckRevokePrefix(prefix));
  std::lock_guard<std::mutex> lock(mu_);
  // substr() instead of LIKE: token ids contain '_', a LIKE wildcard.
  GTCO_ASSIGN_OR_RETURN(
      PostgresResult result,
      connection_->Execute("UPDATE tokens SET revoked_unix_ms = $1 "
                           "WHERE substr(token_id, 1, $2) = $3 AND revoked_unix_ms = 0",
                           SqlParams(now_unix_ms, static_cast<int64_t>(prefix.size()), prefix),
                           absl::StrCat("revoke tokens '", prefix, "...'")));
  return result.affected_rows();
}

// ---------------------------------------------------------------------------------------------
// Quota counts

absl::StatusOr<int64_t> PostgresDatabase::CountRunningJobs(const std::string& team) {
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(
      PostgresResult result,
      connection_->Execute("SELECT COUNT(*) FROM jobs WHERE team = $1 AND state = 'running'",
                           SqlParams(team),
                           absl::StrCat("count running jobs of team '", team, "'")));
  return ReadCount(result);
}

absl::StatusOr<int64_t> PostgresDatabase::CountTrialsSince(const std::string& team,
                                                           int64_t since_unix_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(
      PostgresResult result,
      connection_->Execute("SELECT COUNT(*) FROM jobs "
                           "JOIN tasks ON tasks.job_id = jobs.job_id "
                           "JOIN measurements ON measurements.task_id = tasks.task_id "
                           "WHERE jobs.team = $1 AND measurements.measured_unix_ms >= $2",
                           SqlParams(team, since_unix_ms),
                           absl::StrCat("count trials of team '", team, "'")));
  return ReadCount(result);
}

}  // namespace gtco::db
