// The SQL schedule database: teams, access tokens, and the counts behind team quotas.
#include "absl/strings/str_cat.h"
#include "common/db/row_mapping.h"
#include "common/db/sql_database.h"
#include "common/db/team_checks.h"
#include "common/util/status.h"

namespace gtco::db {

// ---------------------------------------------------------------------------------------------
// Teams

absl::Status SqlDatabase::PutTeam(const TeamRow& row) {
  static const std::string* const kUpsert =
      new std::string(rows::Teams().UpsertSql({"created_unix_ms"}));
  GTCO_RETURN_IF_ERROR(CheckTeamRow(row));
  std::lock_guard<std::mutex> lock(mu_);
  return connection_
      ->Execute(*kUpsert, rows::Teams().Params(row), absl::StrCat("put team '", row.name, "'"))
      .status();
}

absl::StatusOr<TeamRow> SqlDatabase::GetTeam(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(std::optional<TeamRow> team,
                        rows::SelectFirst(*connection_, rows::Teams(), "WHERE name = $1", {name},
                                          absl::StrCat("get team '", name, "'")));
  if (!team.has_value()) return absl::NotFoundError(absl::StrCat("team '", name, "' not found"));
  return *std::move(team);
}

absl::StatusOr<std::vector<TeamRow>> SqlDatabase::ListTeams() {
  std::lock_guard<std::mutex> lock(mu_);
  return rows::Select(*connection_, rows::Teams(), "ORDER BY name COLLATE \"C\"", {}, "list teams");
}

// ---------------------------------------------------------------------------------------------
// Tokens

absl::Status SqlDatabase::PutToken(const TokenRow& row) {
  GTCO_RETURN_IF_ERROR(CheckTokenRow(row));
  std::lock_guard<std::mutex> lock(mu_);
  const std::string operation = absl::StrCat("put token '", row.token_id, "'");
  // Teams are never deleted, so the team found here still exists when the token is inserted.
  if (!row.team.empty()) {
    GTCO_ASSIGN_OR_RETURN(const bool team_exists, QueryExists("SELECT 1 FROM teams WHERE name = $1",
                                                              {row.team}, operation));
    if (!team_exists) {
      return absl::FailedPreconditionError(absl::StrCat(
          "token '", row.token_id, "': team '", row.team, "' does not exist; create it first"));
    }
  }
  const absl::Status status =
      connection_->Execute(rows::Tokens().insert_sql(), rows::Tokens().Params(row), operation)
          .status();
  if (absl::IsAlreadyExists(status)) {
    return absl::AlreadyExistsError(absl::StrCat("token '", row.token_id, "' already exists"));
  }
  return status;
}

absl::StatusOr<std::optional<TokenRow>> SqlDatabase::GetToken(const std::string& token_id) {
  std::lock_guard<std::mutex> lock(mu_);
  return rows::SelectFirst(*connection_, rows::Tokens(), "WHERE token_id = $1", {token_id},
                           absl::StrCat("get token '", token_id, "'"));
}

absl::StatusOr<std::vector<TokenRow>> SqlDatabase::ListTokens(const std::string& team) {
  const std::string where = team.empty() ? "" : "WHERE team = $1 ";
  std::lock_guard<std::mutex> lock(mu_);
  return rows::Select(
      *connection_, rows::Tokens(),
      absl::StrCat(where, "ORDER BY created_unix_ms, token_id COLLATE \"C\""),
      team.empty() ? SqlParams() : SqlParams{team},
      team.empty() ? std::string("list tokens") : absl::StrCat("list tokens of team '", team, "'"));
}

absl::StatusOr<int64_t> SqlDatabase::RevokeTokens(const std::string& prefix, int64_t now_unix_ms) {
  GTCO_RETURN_IF_ERROR(CheckRevokePrefix(prefix));
  std::lock_guard<std::mutex> lock(mu_);
  // substr() instead of LIKE: token ids contain '_', a LIKE wildcard.
  return connection_->Execute(
      "UPDATE tokens SET revoked_unix_ms = $1 "
      "WHERE substr(token_id, 1, $2) = $3 AND revoked_unix_ms = 0",
      {now_unix_ms, static_cast<int64_t>(prefix.size()), prefix},
      absl::StrCat("revoke tokens '", prefix, "...'"));
}

// ---------------------------------------------------------------------------------------------
// Quota counts

absl::StatusOr<int64_t> SqlDatabase::CountRunningJobs(const std::string& team) {
  std::lock_guard<std::mutex> lock(mu_);
  return QueryInteger("SELECT COUNT(*) FROM jobs WHERE team = $1 AND state = 'running'", {team},
                      absl::StrCat("count running jobs of team '", team, "'"));
}

absl::StatusOr<int64_t> SqlDatabase::CountTrialsSince(const std::string& team,
                                                      int64_t since_unix_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  return QueryInteger(
      "SELECT COUNT(*) FROM jobs "
      "JOIN tasks ON tasks.job_id = jobs.job_id "
      "JOIN measurements ON measurements.task_id = tasks.task_id "
      "WHERE jobs.team = $1 AND measurements.measured_unix_ms >= $2",
      {team, since_unix_ms}, absl::StrCat("count trials of team '", team, "'"));
}

}  // namespace gtco::db
