// PostgreSQL-only behaviour of the schedule database: URIs and their redaction, SQLSTATE
// mapping, connection errors, reconnection after a dropped connection (the backend-independent
// contract is in database_test.cc).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/db/database.h"
#include "common/db/postgres_connection.h"
#include "common/db/sql_value.h"
#include "tests/unit/db/postgres_server.h"
#include "tests/unit/db/test_rows.h"

namespace gtco::db {
namespace {

using testing::CreateTwoTaskJob;
using testing::MakeCandidate;
using testing::MakeMeasurement;
using testing::PostgresServer;

TEST(PostgresUriTest, RecognizesBothSchemes) {
  EXPECT_TRUE(IsPostgresUri("postgresql://host/db"));
  EXPECT_TRUE(IsPostgresUri("postgres://user@host:5433/db"));
  EXPECT_FALSE(IsPostgresUri("/var/lib/gtco/schedules.db"));
  EXPECT_FALSE(IsPostgresUri("postgresql.db"));
  EXPECT_FALSE(IsPostgresUri(":memory:"));
}

TEST(PostgresUriTest, RedactsPasswords) {
  EXPECT_EQ(RedactPostgresUri("postgresql://alice:s3cret@db.example:5432/farm"),
            "postgresql://alice@db.example:5432/farm");
  EXPECT_EQ(RedactPostgresUri("postgres://alice:p%40ss@host/farm?sslmode=require&password=x"),
            "postgres://alice@host/farm?sslmode=require");
  EXPECT_EQ(RedactPostgresUri("postgresql://host?password=x"), "postgresql://host");
  EXPECT_EQ(RedactPostgresUri("postgresql://:pw@host"), "postgresql://@host");
  EXPECT_EQ(RedactPostgresUri("postgresql:///farm?host=/run/pg&user=bob"),
            "postgresql:///farm?host=/run/pg&user=bob");
  EXPECT_EQ(RedactPostgresUri("postgresql://bob@host/farm"), "postgresql://bob@host/farm");
}

TEST(PostgresSqlStateTest, MapsCodesToStatus) {
  EXPECT_EQ(CodeForSqlState("23505"), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(CodeForSqlState("23503"), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(CodeForSqlState("23502"), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(CodeForSqlState("40001"), absl::StatusCode::kAborted);
  EXPECT_EQ(CodeForSqlState("40P01"), absl::StatusCode::kAborted);
  EXPECT_EQ(CodeForSqlState("08006"), absl::StatusCode::kUnavailable);
  EXPECT_EQ(CodeForSqlState("57P01"), absl::StatusCode::kUnavailable);
  EXPECT_EQ(CodeForSqlState("53300"), absl::StatusCode::kUnavailable);
  EXPECT_EQ(CodeForSqlState("53100"), absl::StatusCode::kUnavailable);  // disk full
  EXPECT_EQ(CodeForSqlState("22021"), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CodeForSqlState("28P01"), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(CodeForSqlState("42501"), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(CodeForSqlState("XX001"), absl::StatusCode::kDataLoss);
  EXPECT_EQ(CodeForSqlState("42P01"), absl::StatusCode::kInternal);
}

TEST(PostgresSqlParamTest, TextFormsKeepEveryBit) {
  // The text PostgreSQL is sent for a parameter is SqlValue::AsText().
  for (const double value : {0.1 + 0.2, 1.0 / 3.0, 1e-300, -2.5e17, 5e-324}) {
    const std::string text = SqlValue(value).AsText();
    EXPECT_EQ(std::strtod(text.c_str(), nullptr), value) << text;
  }
  EXPECT_EQ(SqlValue(std::numeric_limits<double>::quiet_NaN()).AsText(), "NaN");
  EXPECT_EQ(SqlValue(-std::numeric_limits<double>::infinity()).AsText(), "-Infinity");
  EXPECT_EQ(SqlValue(true).AsText(), "1");
  EXPECT_EQ(SqlValue(false).AsText(), "0");
  EXPECT_EQ(SqlValue(std::numeric_limits<int64_t>::min()).AsText(), "-9223372036854775808");
}

TEST(PostgresOpenTest, UnreachableServerNamesLocationWithoutPassword) {
  // Nothing listens on port 1; the "postgres://" scheme must also select PostgreSQL.
  absl::StatusOr<std::unique_ptr<Database>> database =
      OpenDatabase("postgres://alice:s3cret@127.0.0.1:1/farm?connect_timeout=5&password=x2");
  ASSERT_FALSE(database.ok());
  const std::string message(database.status().message());
  EXPECT_EQ(database.status().code(), absl::StatusCode::kUnavailable) << message;
  EXPECT_NE(message.find("postgres://alice@127.0.0.1:1/farm?connect_timeout=5"), std::string::npos)
      << message;
  EXPECT_EQ(message.find("s3cret"), std::string::npos) << message;
  EXPECT_EQ(message.find("x2"), std::string::npos) << message;
  EXPECT_NE(message.find("reachable"), std::string::npos) << message;
  EXPECT_NE(message.find("database exists"), std::string::npos) << message;
  EXPECT_NE(message.find("password"), std::string::npos) << message;
}

// Tests against the process's private server (skipped only where the host keeps the `postgres`
// user from reaching the installed binaries).
class PostgresServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = &PostgresServer::Shared();
    if (server_->unreachable_here()) GTEST_SKIP() << server_->start_status().message();
    ASSERT_TRUE(server_->start_status().ok()) << server_->start_status();
    absl::StatusOr<std::string> uri =
        server_->CreateDatabase(::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_TRUE(uri.ok()) << uri.status();
    uri_ = *uri;
    database_name_ = uri_.substr(uri_.rfind('/') + 1);
  }

  // Terminates every server backend connected to this test's database, waiting until they
  // are gone, and returns how many there were.
  int TerminateConnections() {
    absl::StatusOr<std::string> count = PostgresServer::Query(
        server_->TcpUri("postgres"),
        absl::StrCat("SELECT COUNT(pg_terminate_backend(pid, 10000)) FROM pg_stat_activity "
                     "WHERE datname = '",
                     database_name_, "'"));
    EXPECT_TRUE(count.ok()) << count.status();
    return count.ok() ? std::stoi(*count) : -1;
  }

  PostgresServer* server_ = nullptr;
  std::string uri_;
  std::string database_name_;
};

TEST_F(PostgresServerTest, MissingDatabaseSaysWhatToCheck) {
  const std::string uri = server_->TcpUri("no_such_database");
  absl::StatusOr<std::unique_ptr<Database>> database = OpenDatabase(uri);
  ASSERT_FALSE(database.ok());
  const std::string message(database.status().message());
  EXPECT_EQ(database.status().code(), absl::StatusCode::kUnavailable) << message;
  EXPECT_NE(message.find(uri), std::string::npos) << message;
  EXPECT_NE(message.find("\"no_such_database\" does not exist"), std::string::npos) << message;
  EXPECT_NE(message.find("database exists"), std::string::npos) << message;
}

TEST_F(PostgresServerTest, OpensThroughUnixSocketUri) {
  absl::StatusOr<std::unique_ptr<Database>> database =
      OpenDatabase(server_->SocketUri(database_name_));
  ASSERT_TRUE(database.ok()) << database.status();
  CreateTwoTaskJob(**database);
  // The same data through TCP: both URIs name one database.
  absl::StatusOr<std::unique_ptr<Database>> over_tcp = OpenDatabase(uri_);
  ASSERT_TRUE(over_tcp.ok()) << over_tcp.status();
  EXPECT_EQ((*over_tcp)->ListTasks("j")->size(), 2u);
}

TEST_F(PostgresServerTest, ReconnectsAfterTheServerDropsTheConnection) {
  absl::StatusOr<std::unique_ptr<Database>> opened = OpenDatabase(uri_);
  ASSERT_TRUE(opened.ok()) << opened.status();
  Database& database = **opened;
  CreateTwoTaskJob(database);
  ASSERT_TRUE(database.PutCandidates({MakeCandidate("c1", "j.t0", 1)}).ok());

  // A plain statement, a transaction and the lease expiry each find a dead connection.
  ASSERT_EQ(TerminateConnections(), 1);
  absl::StatusOr<JobRow> job = database.GetJob("j");
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->team, "team-a");

  ASSERT_EQ(TerminateConnections(), 1);
  absl::StatusOr<bool> stored = database.RecordMeasurement(MakeMeasurement("c1", "j.t0", true, 1));
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_TRUE(*stored);

  ASSERT_EQ(TerminateConnections(), 1);
  absl::StatusOr<std::vector<std::string>> expired = database.ExpireLeases(1000);
  ASSERT_TRUE(expired.ok()) << expired.status();
  EXPECT_TRUE(expired->empty());
  EXPECT_EQ(database.GetCandidate("c1")->value().state, CandidateState::kMeasured);
}

TEST_F(PostgresServerTest, ErrorsCarryTheSqlState) {
  absl::StatusOr<std::unique_ptr<Database>> database = OpenDatabase(uri_);
  ASSERT_TRUE(database.ok()) << database.status();
  absl::Status status = (*database)->PutCandidates({MakeCandidate("c1", "no-such-task", 1)});
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("(sqlstate 23503)"), std::string::npos) << status;
  EXPECT_NE(status.message().find(uri_), std::string::npos) << status;
}

TEST_F(PostgresServerTest, NulBytesAreRejectedNotTruncated) {
  absl::StatusOr<std::unique_ptr<Database>> database = OpenDatabase(uri_);
  ASSERT_TRUE(database.ok()) << database.status();
  const std::string key("wk\0tail", 7);
  absl::Status status = (*database)->PutWorkload(WorkloadRow{key, "matmul", "c", "d", 1});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_NE(status.message().find("NUL"), std::string::npos) << status;
  EXPECT_FALSE((*database)->GetWorkload("wk")->has_value());
}

}  // namespace
}  // namespace gtco::db
