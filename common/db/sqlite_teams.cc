// SQLite schedule database: teams, access tokens, and the counts behind team quotas.
#include "absl/strings/str_cat.h"
#include "common/db/sqlite_database.h"
#include "common/db/sqlite_rows.h"
#include "common/db/team_checks.h"
#include "common/util/status.h"

namespace gtco::db {
namespace {

using sqlite_rows::kTeamColumns;
using sqlite_rows::kTokenColumns;

// Runs a single-row COUNT statement.
absl::StatusOr<int64_t> ReadCount(SqliteStatement& statement) {
  GTCO_ASSIGN_OR_RETURN(const bool has_row, statement.Step());
  return has_row ? statement.ColumnInt64(0) : 0;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Teams

absl::Status SqliteDatabase::PutTeam(const TeamRow& row) {
  GTCO_RETURN_IF_ERROR(CheckTeamRow(row));
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(
      SqliteStatement statement,
      connection_->Prepare(
          absl::StrCat("INSERT INTO teams (", kTeamColumns,
                       ") VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (name) DO UPDATE SET "
                       "max_concurrent_jobs = excluded.max_concurrent_jobs, "
                       "max_trials_per_day = excluded.max_trials_per_day, "
                       "share = excluded.share"),
          absl::StrCat("put team '", row.name, "'")));
  return statement
      .BindAll(row.name, row.max_concurrent_jobs, row.max_trials_per_day, row.share,
               row.created_unix_ms)
      .Run();
}

absl::StatusOr<TeamRow> SqliteDatabase::GetTeam(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(
      SqliteStatement statement,
      connection_->Prepare(absl::StrCat("SELECT ", kTeamColumns, " FROM teams WHERE name = ?1"),
                           absl::StrCat("get team '", name, "'")));
  GTCO_ASSIGN_OR_RETURN(const bool has_row, statement.BindAll(name).Step());
  if (!has_row) return absl::NotFoundError(absl::StrCat("team '", name, "' not found"));
  return sqlite_rows::ReadTeam(statement);
}

absl::StatusOr<std::vector<TeamRow>> SqliteDatabase::ListTeams() {
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(
      SqliteStatement statement,
      connection_->Prepare(absl::StrCat("SELECT ", kTeamColumns, " FROM teams ORDER BY name"),
                           "list teams"));
  return sqlite_rows::ReadAll(statement, &sqlite_rows::ReadTeam);
}

// ---------------------------------------------------------------------------------------------
// Tokens

absl::Status SqliteDatabase::PutToken(const TokenRow& row) {
  GTCO_RETURN_IF_ERROR(CheckTokenRow(row));
  std::lock_guard<std::mutex> lock(mu_);
  const std::string operation = absl::StrCat("put token '", row.token_id, "'");
  // Teams are never deleted, so the team found here still exists when the token is inserted.
  if (!row.team.empty()) {
    GTCO_ASSIGN_OR_RETURN(SqliteStatement team_lookup,
                          connection_->Prepare("SELECT 1 FROM teams WHERE name = ?1", operation));
    GTCO_ASSIGN_OR_RETURN(const bool team_exists, team_lookup.BindAll(row.team).Step());
    if (!team_exists) {
      return absl::FailedPreconditionError(absl::StrCat(
          "token '", row.token_id, "': team '", row.team, "' does not exist; create it first"));
    }
  }
  GTCO_ASSIGN_OR_RETURN(SqliteStatement insert,
                        connection_->Prepare(absl::StrCat("INSERT INTO tokens (", kTokenColumns,
                                                          ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"),
                                             operation));
  const absl::Status status = insert
                                  .BindAll(row.token_id, row.team, row.role, row.salt, row.hash,
                                           row.created_unix_ms, row.revoked_unix_ms)
                                  .Run();
  if (absl::IsAlreadyExists(status)) {
    return absl::AlreadyExistsError(absl::StrCat("token '", row.token_id, "' already exists"));
  }
  return status;
}

absl::StatusOr<std::optional<TokenRow>> SqliteDatabase::GetToken(const std::string& token_id) {
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(SqliteStatement statement,
                        connection_->Prepare(absl::StrCat("SELECT ", kTokenColumns,
                                                          " FROM tokens WHERE token_id = ?1"),
                                             absl::StrCat("get token '", token_id, "'")));
  GTCO_ASSIGN_OR_RETURN(const bool has_row, statement.BindAll(token_id).Step());
  if (!has_row) return std::optional<TokenRow>();
  return std::optional<TokenRow>(sqlite_rows::ReadToken(statement));
}

absl::StatusOr<std::vector<TokenRow>> SqliteDatabase::ListTokens(const std::string& team) {
  const std::string where = team.empty() ? "" : " WHERE team = ?1";
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(
      SqliteStatement statement,
      connection_->Prepare(absl::StrCat("SELECT ", kTokenColumns, " FROM tokens", where,
                                        " ORDER BY created_unix_ms, token_id"),
                           team.empty() ? std::string("list tokens")
                                        : absl::StrCat("list tokens of team '", team, "'")));
  if (!team.empty()) statement.BindAll(team);
  return sqlite_rows::ReadAll(statement, &sqlite_rows::ReadToken);
}

absl::StatusOr<int64_t> SqliteDatabase::RevokeTokens(const std::string& prefix,
                                                     int64_t now_unix_ms) {
  GTCO_RETURN_IF_ERROR(CheckRevokePrefix(prefix));
  std::lock_guard<std::mutex> lock(mu_);
  // substr() instead of LIKE: token ids contain '_', a LIKE wildcard.
  GTCO_ASSIGN_OR_RETURN(
      SqliteStatement statement,
      connection_->Prepare("UPDATE tokens SET revoked_unix_ms = ?1 "
                           "WHERE substr(token_id, 1, ?2) = ?3 AND revoked_unix_ms = 0",
                           absl::StrCat("revoke tokens '", prefix, "...'")));
  GTCO_RETURN_IF_ERROR(
      statement.BindAll(now_unix_ms, static_cast<int64_t>(prefix.size()), prefix).Run());
  return connection_->ChangedRows();
}

// ---------------------------------------------------------------------------------------------
// Quota counts

absl::StatusOr<int64_t> SqliteDatabase::CountRunningJobs(const std::string& team) {
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(
      SqliteStatement statement,
      connection_->Prepare("SELECT COUNT(*) FROM jobs WHERE team = ?1 AND state = 'running'",
                           absl::StrCat("count running jobs of team '", team, "'")));
  statement.BindAll(team);
  return ReadCount(statement);
}

absl::StatusOr<int64_t> SqliteDatabase::CountTrialsSince(const std::string& team,
                                                         int64_t since_unix_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  GTCO_ASSIGN_OR_RETURN(
      SqliteStatement statement,
      connection_->Prepare("SELECT COUNT(*) FROM jobs "
                           "JOIN tasks ON tasks.job_id = jobs.job_id "
                           "JOIN measurements ON measurements.task_id = tasks.task_id "
                           "WHERE jobs.team = ?1 AND measurements.measured_unix_ms >= ?2",
                           absl::StrCat("count trials of team '", team, "'")));
  statement.BindAll(team, since_unix_ms);
  return ReadCount(statement);
}

}  // namespace gtco::db
