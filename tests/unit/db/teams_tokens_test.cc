// Teams, tokens and the quota counts of the schedule database, on every backend.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/db/database.h"
#include "common/db/migrations.h"
#include "tests/unit/db/database_fixture.h"
#include "tests/unit/db/test_rows.h"

namespace gtco::db {
namespace {

using testing::Backend;
using testing::BackendName;
using testing::DatabaseTest;
using testing::MakeJob;
using testing::MakeMeasurement;
using testing::MakeTask;

class TeamsTokensTest : public DatabaseTest {};

INSTANTIATE_TEST_SUITE_P(Sqlite, TeamsTokensTest, ::testing::Values(Backend::kSqlite), BackendName);
INSTANTIATE_TEST_SUITE_P(Postgres, TeamsTokensTest, ::testing::Values(Backend::kPostgres),
                         BackendName);

TeamRow MakeTeam(const std::string& name, int64_t created_unix_ms) {
  return TeamRow{name, 4, 200000, 2.0, created_unix_ms};
}

TokenRow MakeToken(const std::string& token_id, const std::string& team, int64_t created_unix_ms) {
  TokenRow row;
  row.token_id = token_id;
  row.team = team;
  row.role = team.empty() ? "worker" : "submitter";
  row.salt = "00112233445566778899aabbccddeeff";
  row.hash = std::string(64, 'a');
  row.created_unix_ms = created_unix_ms;
  return row;
}

std::vector<std::string> TokenIds(const std::vector<TokenRow>& rows) {
  std::vector<std::string> ids;
  for (const TokenRow& row : rows) ids.push_back(row.token_id);
  return ids;
}

TEST_P(TeamsTokensTest, MigrationCreatesTablesAndIndexes) {
  ASSERT_NE(OpenOrDie(), nullptr);
  EXPECT_EQ(CatalogLookup("table", "teams"), "teams");
  EXPECT_EQ(CatalogLookup("table", "tokens"), "tokens");
  EXPECT_EQ(CatalogLookup("index", "tokens_by_team"), "tokens_by_team");
  EXPECT_EQ(CatalogLookup("index", "measurements_by_task_time"), "measurements_by_task_time");
  // Replaced by measurements_by_task_time, whose prefix it was.
  EXPECT_EQ(CatalogLookup("index", "measurements_by_task"), "");
}

TEST_P(TeamsTokensTest, UpgradesVersionOneDatabaseKeepingItsRows) {
  // A database as a binary of schema version 1 left it, with a running job.
  RawQuery(std::string(kCreateSchemaMigrationsSql));
  for (std::string_view statement : SplitSqlStatements(AllMigrations().front().sql)) {
    RawQuery(std::string(statement));
  }
  RawQuery("INSERT INTO schema_migrations (version, applied_unix_ms) VALUES (1, 0)");
  RawQuery(
      "INSERT INTO jobs VALUES ('old', 'vision', 'm', 'sha', 'cpu', 'running', '', 10, '{}', 1, "
      "1)");

  std::unique_ptr<Database> database = OpenOrDie();
  ASSERT_NE(database, nullptr);
  EXPECT_EQ(*database->SchemaVersion(), LatestSchemaVersion());
  EXPECT_EQ(*database->CountRunningJobs("vision"), 1);
  ASSERT_TRUE(database->PutTeam(MakeTeam("vision", 5)).ok());
  EXPECT_EQ(database->ListTeams()->size(), 1u);
}

TEST_P(TeamsTokensTest, PutTeamUpdatesLimitsAndKeepsCreationTime) {
  std::unique_ptr<Database> database = OpenOrDie();
  ASSERT_TRUE(database->PutTeam(MakeTeam("vision", 100)).ok());
  absl::StatusOr<TeamRow> team = database->GetTeam("vision");
  ASSERT_TRUE(team.ok()) << team.status();
  EXPECT_EQ(team->max_concurrent_jobs, 4);
  EXPECT_EQ(team->max_trials_per_day, 200000);
  EXPECT_EQ(team->share, 2.0);
  EXPECT_EQ(team->created_unix_ms, 100);

  ASSERT_TRUE(database->PutTeam(TeamRow{"vision", 0, 7, 0.25, 999}).ok());
  team = database->GetTeam("vision");
  ASSERT_TRUE(team.ok()) << team.status();
  EXPECT_EQ(team->max_concurrent_jobs, 0);
  EXPECT_EQ(team->max_trials_per_day, 7);
  EXPECT_EQ(team->share, 0.25);
  EXPECT_EQ(team->created_unix_ms, 100);
}

TEST_P(TeamsTokensTest, UnknownTeamIsNotFound) {
  std::unique_ptr<Database> database = OpenOrDie();
  absl::StatusOr<TeamRow> team = database->GetTeam("nobody");
  EXPECT_EQ(team.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(team.status().message().find("'nobody'"), std::string::npos) << team.status();
}

TEST_P(TeamsTokensTest, ListTeamsIsBytewiseByName) {
  std::unique_ptr<Database> database = OpenOrDie();
  for (const char* name : {"beta", "Zeta", "alpha", "a-b", "a_b"}) {
    ASSERT_TRUE(database->PutTeam(MakeTeam(name, 1)).ok());
  }
  absl::StatusOr<std::vector<TeamRow>> teams = database->ListTeams();
  ASSERT_TRUE(teams.ok()) << teams.status();
  std::vector<std::string> names;
  for (const TeamRow& team : *teams) names.push_back(team.name);
  EXPECT_EQ(names, (std::vector<std::string>{"Zeta", "a-b", "a_b", "alpha", "beta"}));
}

TEST_P(TeamsTokensTest, RejectsInvalidTeams) {
  std::unique_ptr<Database> database = OpenOrDie();
  const double kNaN = std::numeric_limits<double>::quiet_NaN();
  const double kInfinity = std::numeric_limits<double>::infinity();
  for (const TeamRow& row :
       {TeamRow{"", 1, 1, 1.0, 0}, TeamRow{"t", -1, 1, 1.0, 0}, TeamRow{"t", 1, -5, 1.0, 0},
        TeamRow{"t", 1, 1, 0.0, 0}, TeamRow{"t", 1, 1, -2.0, 0}, TeamRow{"t", 1, 1, kNaN, 0},
        TeamRow{"t", 1, 1, kInfinity, 0}}) {
    const absl::Status status = database->PutTeam(row);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  }
  EXPECT_TRUE(database->ListTeams()->empty());
}

TEST_P(TeamsTokensTest, TokenRoundTripAndListing) {
  std::unique_ptr<Database> database = OpenOrDie();
  ASSERT_TRUE(database->PutTeam(MakeTeam("vision", 1)).ok());
  ASSERT_TRUE(database->PutTeam(MakeTeam("speech", 1)).ok());
  ASSERT_TRUE(database->PutToken(MakeToken("gtco_s_000000000002", "vision", 20)).ok());
  ASSERT_TRUE(database->PutToken(MakeToken("gtco_s_000000000001", "vision", 10)).ok());
  ASSERT_TRUE(database->PutToken(MakeToken("gtco_s_000000000003", "speech", 5)).ok());
  ASSERT_TRUE(database->PutToken(MakeToken("gtco_w_000000000004", "", 15)).ok());

  absl::StatusOr<std::optional<TokenRow>> token = database->GetToken("gtco_s_000000000001");
  ASSERT_TRUE(token.ok()) << token.status();
  ASSERT_TRUE(token->has_value());
  const TokenRow expected = MakeToken("gtco_s_000000000001", "vision", 10);
  EXPECT_EQ((*token)->token_id, expected.token_id);
  EXPECT_EQ((*token)->team, "vision");
  EXPECT_EQ((*token)->role, "submitter");
  EXPECT_EQ((*token)->salt, expected.salt);
  EXPECT_EQ((*token)->hash, expected.hash);
  EXPECT_EQ((*token)->created_unix_ms, 10);
  EXPECT_EQ((*token)->revoked_unix_ms, 0);
  // Lookups are exact: a prefix finds nothing.
  EXPECT_FALSE(database->GetToken("gtco_s_00000000000")->has_value());

  EXPECT_EQ(TokenIds(*database->ListTokens("vision")),
            (std::vector<std::string>{"gtco_s_000000000001", "gtco_s_000000000002"}));
  EXPECT_EQ(TokenIds(*database->ListTokens("")),
            (std::vector<std::string>{"gtco_s_000000000003", "gtco_s_000000000001",
                                      "gtco_w_000000000004", "gtco_s_000000000002"}));
  EXPECT_TRUE(database->ListTokens("nobody")->empty());
}

TEST_P(TeamsTokensTest, PutTokenRefusesDuplicatesUnknownTeamsAndEmptyIds) {
  std::unique_ptr<Database> database = OpenOrDie();
  ASSERT_TRUE(database->PutTeam(MakeTeam("vision", 1)).ok());
  ASSERT_TRUE(database->PutToken(MakeToken("gtco_s_000000000001", "vision", 10)).ok());

  TokenRow duplicate = MakeToken("gtco_s_000000000001", "vision", 99);
  duplicate.revoked_unix_ms = 0;
  duplicate.hash = std::string(64, 'b');
  absl::Status status = database->PutToken(duplicate);
  EXPECT_EQ(status.code(), absl::StatusCode::kAlreadyExists) << status;
  EXPECT_EQ(database->GetToken("gtco_s_000000000001")->value().hash, std::string(64, 'a'));

  status = database->PutToken(MakeToken("gtco_s_000000000002", "nobody", 10));
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_NE(status.message().find("'nobody'"), std::string::npos) << status;
  EXPECT_FALSE(database->GetToken("gtco_s_000000000002")->has_value());

  status = database->PutToken(MakeToken("", "", 10));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
}

TEST_P(TeamsTokensTest, RevokeTokensByLiteralPrefix) {
  std::unique_ptr<Database> database = OpenOrDie();
  ASSERT_TRUE(database->PutTeam(MakeTeam("vision", 1)).ok());
  for (const char* id : {"gtco_s_aaaa00000001", "gtco_s_aaaa00000002", "gtco_s_abaa00000003"}) {
    ASSERT_TRUE(database->PutToken(MakeToken(id, "vision", 1)).ok());
  }
  ASSERT_TRUE(database->PutToken(MakeToken("gtco_w_aaaa00000004", "", 1)).ok());

  // '_' and '%' are literal characters, not LIKE wildcards.
  EXPECT_EQ(*database->RevokeTokens("gtco_s_a_aa", 50), 0);
  EXPECT_EQ(*database->RevokeTokens("gtco_s_%%%%", 50), 0);

  absl::StatusOr<int64_t> revoked = database->RevokeTokens("gtco_s_aaaa", 100);
  ASSERT_TRUE(revoked.ok()) << revoked.status();
  EXPECT_EQ(*revoked, 2);
  EXPECT_EQ(database->GetToken("gtco_s_aaaa00000001")->value().revoked_unix_ms, 100);
  EXPECT_EQ(database->GetToken("gtco_s_aaaa00000002")->value().revoked_unix_ms, 100);
  EXPECT_EQ(database->GetToken("gtco_s_abaa00000003")->value().revoked_unix_ms, 0);
  EXPECT_EQ(database->GetToken("gtco_w_aaaa00000004")->value().revoked_unix_ms, 0);

  // Revoking again changes nothing and keeps the first revocation time.
  EXPECT_EQ(*database->RevokeTokens("gtco_s_aaaa", 200), 0);
  EXPECT_EQ(database->GetToken("gtco_s_aaaa00000001")->value().revoked_unix_ms, 100);
  // A whole id is a prefix of itself.
  EXPECT_EQ(*database->RevokeTokens("gtco_w_aaaa00000004", 300), 1);
}

TEST_P(TeamsTokensTest, RevokeTokensRefusesShortPrefixes) {
  std::unique_ptr<Database> database = OpenOrDie();
  ASSERT_TRUE(database->PutToken(MakeToken("gtco_w_aaaa00000004", "", 1)).ok());
  for (const std::string prefix : {"", "gtco_", "gtco_w_aaa"}) {
    absl::StatusOr<int64_t> revoked = database->RevokeTokens(prefix, 100);
    EXPECT_EQ(revoked.status().code(), absl::StatusCode::kInvalidArgument) << prefix;
    EXPECT_NE(revoked.status().message().find("too short"), std::string::npos) << revoked.status();
  }
  EXPECT_EQ(database->GetToken("gtco_w_aaaa00000004")->value().revoked_unix_ms, 0);
}

TEST_P(TeamsTokensTest, CountRunningJobsOfTeam) {
  std::unique_ptr<Database> database = OpenOrDie();
  ASSERT_TRUE(database->CreateJob(MakeJob("v1", "vision", 1), {}).ok());
  ASSERT_TRUE(database->CreateJob(MakeJob("v2", "vision", 2), {}).ok());
  ASSERT_TRUE(database->CreateJob(MakeJob("v3", "vision", 3), {}).ok());
  ASSERT_TRUE(database->CreateJob(MakeJob("s1", "speech", 4), {}).ok());
  ASSERT_TRUE(database->UpdateJobState("v3", JobState::kDone, "", 10).ok());
  EXPECT_EQ(*database->CountRunningJobs("vision"), 2);
  EXPECT_EQ(*database->CountRunningJobs("speech"), 1);
  EXPECT_EQ(*database->CountRunningJobs("nobody"), 0);
  ASSERT_TRUE(database->UpdateJobState("v1", JobState::kCancelled, "", 11).ok());
  EXPECT_EQ(*database->CountRunningJobs("vision"), 1);
}

TEST_P(TeamsTokensTest, CountTrialsSinceCountsTeamMeasurementsFromTheCutoff) {
  std::unique_ptr<Database> database = OpenOrDie();
  ASSERT_TRUE(database
                  ->CreateJob(MakeJob("v1", "vision", 1),
                              {MakeTask("v1", 0, "wk"), MakeTask("v1", 1, "wk2")})
                  .ok());
  ASSERT_TRUE(database->CreateJob(MakeJob("v2", "vision", 2), {MakeTask("v2", 0, "wk")}).ok());
  ASSERT_TRUE(database->CreateJob(MakeJob("s1", "speech", 3), {MakeTask("s1", 0, "wk")}).ok());
  const auto record = [&](const std::string& candidate_id, const std::string& task_id, bool ok,
                          int64_t measured_unix_ms) {
    MeasurementRow row = MakeMeasurement(candidate_id, task_id, ok, 1.0);
    row.measured_unix_ms = measured_unix_ms;
    const absl::StatusOr<bool> stored = database->RecordMeasurement(row);
    ASSERT_TRUE(stored.ok()) << stored.status();
  };
  record("a", "v1.t0", true, 999);    // before the cutoff
  record("b", "v1.t0", true, 1000);   // at the cutoff: counted
  record("c", "v1.t1", false, 1500);  // failed trials count too
  record("d", "v2.t0", true, 2000);
  record("e", "s1.t0", true, 2000);  // another team

  EXPECT_EQ(*database->CountTrialsSince("vision", 1000), 3);
  EXPECT_EQ(*database->CountTrialsSince("vision", 0), 4);
  EXPECT_EQ(*database->CountTrialsSince("vision", 2001), 0);
  EXPECT_EQ(*database->CountTrialsSince("speech", 1000), 1);
  EXPECT_EQ(*database->CountTrialsSince("nobody", 0), 0);
}

class LeaderTest : public testing::DatabaseTest {};
INSTANTIATE_TEST_SUITE_P(Sqlite, LeaderTest, ::testing::Values(testing::Backend::kSqlite),
                         testing::BackendName);
INSTANTIATE_TEST_SUITE_P(Postgres, LeaderTest, ::testing::Values(testing::Backend::kPostgres),
                         testing::BackendName);

TEST_P(LeaderTest, OneHolderAtATimeUntilItsLeaseExpiresOrIsReleased) {
  std::unique_ptr<Database> database = OpenOrDie();
  auto first = database->ClaimLeadership("a", "10.0.0.1:7070", 1000, 500);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->holder, "a");
  EXPECT_EQ(first->expires_unix_ms, 1500);
  // Another server is refused while the lease runs and learns who leads.
  auto second = database->ClaimLeadership("b", "10.0.0.2:7070", 1200, 500);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->holder, "a");
  EXPECT_EQ(second->address, "10.0.0.1:7070");
  // The holder renews.
  EXPECT_EQ(database->ClaimLeadership("a", "10.0.0.1:7070", 1400, 500)->expires_unix_ms, 1900);
  // After expiry the standby takes over; the old holder can no longer renew.
  EXPECT_EQ(database->ClaimLeadership("b", "10.0.0.2:7070", 2000, 500)->holder, "b");
  EXPECT_EQ(database->ClaimLeadership("a", "10.0.0.1:7070", 2100, 500)->holder, "b");
  // Released: free at once.
  ASSERT_TRUE(database->ReleaseLeadership("b").ok());
  EXPECT_EQ(database->ClaimLeadership("a", "10.0.0.1:7070", 2200, 500)->holder, "a");
}

}  // namespace
}  // namespace gtco::db
