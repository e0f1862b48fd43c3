// The shared SQL layer: SQLite's placeholder rewrite, SqlValue conversions, the row mapping of
// states, and one statement text run on every backend with parameters of every type.
#include "common/db/sql_connection.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/db/postgres_connection.h"
#include "common/db/row_mapping.h"
#include "common/db/sql_value.h"
#include "common/db/sqlite_connection.h"
#include "common/db/states.h"
#include "tests/unit/db/database_fixture.h"

namespace gtco::db {
namespace {

using testing::Backend;
using testing::BackendName;

uint64_t Bits(double value) {
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

TEST(SqlitePlaceholdersTest, RewritesNumberedPlaceholders) {
  EXPECT_EQ(SqlitePlaceholders("SELECT a FROM t WHERE b = $1 AND c = $2"),
            "SELECT a FROM t WHERE b = ?1 AND c = ?2");
  EXPECT_EQ(SqlitePlaceholders("VALUES ($9, $10, $11)"), "VALUES (?9, ?10, ?11)");
  EXPECT_EQ(SqlitePlaceholders("$1"), "?1");
  EXPECT_EQ(SqlitePlaceholders("SELECT 1"), "SELECT 1");
}

TEST(SqlitePlaceholdersTest, KeepsNumbersOfRepeatedAndOutOfOrderPlaceholders) {
  EXPECT_EQ(SqlitePlaceholders("WHERE x = $2 OR y = $1 OR z = $2 LIMIT $3"),
            "WHERE x = ?2 OR y = ?1 OR z = ?2 LIMIT ?3");
}

TEST(SqlitePlaceholdersTest, LeavesLiteralsIdentifiersAndCommentsAlone) {
  EXPECT_EQ(SqlitePlaceholders("SELECT '$1', $1"), "SELECT '$1', ?1");
  EXPECT_EQ(SqlitePlaceholders("SELECT 'it''s $1 and $2', $2"), "SELECT 'it''s $1 and $2', ?2");
  EXPECT_EQ(SqlitePlaceholders("SELECT \"col$1\" FROM t WHERE a = $1"),
            "SELECT \"col$1\" FROM t WHERE a = ?1");
  EXPECT_EQ(SqlitePlaceholders("SELECT $1 -- and $2\n, $3 /* not $4 */ + $5"),
            "SELECT ?1 -- and $2\n, ?3 /* not $4 */ + ?5");
  EXPECT_EQ(SqlitePlaceholders("SELECT price$1, $ , $x FROM t"), "SELECT price$1, $ , $x FROM t");
  EXPECT_EQ(SqlitePlaceholders("SELECT $1, 'unterminated $2"), "SELECT ?1, 'unterminated $2");
}

TEST(SqlValueTest, KindsAndConversions) {
  EXPECT_EQ(SqlValue().kind(), SqlValue::Kind::kNull);
  EXPECT_EQ(SqlValue(3).kind(), SqlValue::Kind::kInt64);
  EXPECT_EQ(SqlValue(true), SqlValue(int64_t{1}));
  EXPECT_EQ(SqlValue(false), SqlValue(0));
  EXPECT_EQ(SqlValue(2.5).kind(), SqlValue::Kind::kDouble);
  EXPECT_EQ(SqlValue("text").kind(), SqlValue::Kind::kText);
  EXPECT_EQ(SqlValue(std::string_view("")).kind(), SqlValue::Kind::kText);

  EXPECT_EQ(SqlValue().AsText(), "");
  EXPECT_EQ(SqlValue().AsInt64(), 0);
  EXPECT_EQ(SqlValue().AsDouble(), 0.0);
  EXPECT_EQ(SqlValue(int64_t{-42}).AsText(), "-42");
  EXPECT_EQ(SqlValue("-42").AsInt64(), -42);
  EXPECT_EQ(SqlValue("4x").AsInt64(), 0);
  EXPECT_EQ(SqlValue("Infinity").AsDouble(), std::numeric_limits<double>::infinity());
  EXPECT_EQ(SqlValue(-2.9).AsInt64(), -2);
  EXPECT_EQ(SqlValue(1e300).AsInt64(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(SqlValue(-1e300).AsInt64(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(SqlValue(std::nan("")).AsInt64(), 0);
  EXPECT_EQ(SqlValue(int64_t{1} << 53).AsDouble(), 9007199254740992.0);
}

TEST(RowMappingTest, StatementsFollowFromTheColumns) {
  EXPECT_EQ(rows::Workloads().select_sql(),
            "SELECT workload_key, kind, canonical, description, flops FROM workloads");
  EXPECT_EQ(rows::Workloads().UpsertSql(),
            "INSERT INTO workloads (workload_key, kind, canonical, description, flops) VALUES "
            "($1, $2, $3, $4, $5) ON CONFLICT (workload_key) DO UPDATE SET kind = excluded.kind, "
            "canonical = excluded.canonical, description = excluded.description, "
            "flops = excluded.flops");
  EXPECT_EQ(rows::Teams().UpsertSql({"created_unix_ms"}),
            "INSERT INTO teams (name, max_concurrent_jobs, max_trials_per_day, share, "
            "created_unix_ms) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (name) DO UPDATE SET "
            "max_concurrent_jobs = excluded.max_concurrent_jobs, "
            "max_trials_per_day = excluded.max_trials_per_day, share = excluded.share");
}

TEST(RowMappingTest, ParamsAndReadAreInverse) {
  MeasurementRow row;
  row.candidate_id = "c";
  row.ok = true;
  row.median_seconds = 0.1 + 0.2;
  row.repeats = -7;
  row.measured_unix_ms = std::numeric_limits<int64_t>::min();
  const SqlParams params = rows::Measurements().Params(row);
  ASSERT_EQ(params.size(), 18u);
  EXPECT_EQ(params[6], SqlValue(int64_t{1}));  // ok: an INTEGER flag
  const MeasurementRow read = *rows::Measurements().Read(SqlRow(params));
  EXPECT_EQ(read.candidate_id, "c");
  EXPECT_TRUE(read.ok);
  EXPECT_EQ(read.median_seconds, 0.1 + 0.2);
  EXPECT_EQ(read.repeats, -7);
  EXPECT_EQ(read.measured_unix_ms, std::numeric_limits<int64_t>::min());
}

TEST(RowMappingTest, StatesAndTargetsAreStoredByNameAndAnUnknownNameIsDataLoss) {
  JobRow job;
  job.job_id = "j";
  job.state = JobState::kCancelled;
  SqlParams params = rows::Jobs().Params(job);
  EXPECT_EQ(params[5], SqlValue("cancelled"));  // the state column holds the name
  absl::StatusOr<JobRow> read = rows::Jobs().Read(SqlRow(params));
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->state, JobState::kCancelled);

  params[5] = SqlValue("paused");  // a row a newer server (or a bad hand edit) wrote
  read = rows::Jobs().Read(SqlRow(params));
  EXPECT_EQ(read.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(read.status().message().find("table jobs, column state: unknown job state 'paused'"),
            std::string::npos)
      << read.status();

  params = rows::Jobs().Params(job);
  EXPECT_EQ(params[4], SqlValue("cpu"));  // targets too are stored by name
  params[4] = SqlValue("tpu");
  read = rows::Jobs().Read(SqlRow(params));
  EXPECT_EQ(read.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(read.status().message().find("table jobs, column target: unknown target 'tpu'"),
            std::string::npos)
      << read.status();
}

TEST(StatesTest, EveryStateRoundTripsThroughItsName) {
  for (JobState state :
       {JobState::kRunning, JobState::kDone, JobState::kFailed, JobState::kCancelled}) {
    EXPECT_EQ(*ParseJobState(JobStateName(state)), state);
  }
  for (TaskState state : {TaskState::kPending, TaskState::kRunning, TaskState::kDone,
                          TaskState::kFromDatabase, TaskState::kCancelled}) {
    EXPECT_EQ(*ParseTaskState(TaskStateName(state)), state);
  }
  for (CandidateState state :
       {CandidateState::kPending, CandidateState::kLeased, CandidateState::kMeasured}) {
    EXPECT_EQ(*ParseCandidateState(CandidateStateName(state)), state);
  }
  const absl::Status unknown = ParseJobState("Running").status();
  EXPECT_EQ(unknown.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(unknown.message(),
            "unknown job state 'Running' (one of running, done, failed, cancelled)");
  EXPECT_TRUE(IsTerminal(JobState::kFailed));
  EXPECT_FALSE(IsTerminal(JobState::kRunning));
  EXPECT_TRUE(IsFinished(TaskState::kFromDatabase));
  EXPECT_FALSE(IsFinished(TaskState::kRunning));
}

// One statement text, on a raw connection of each backend.
class SqlConnectionTest : public testing::DatabaseTest {
 protected:
  void SetUp() override {
    DatabaseTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    absl::StatusOr<std::unique_ptr<SqlConnection>> connection;
    if (IsPostgres()) {
      connection = PostgresConnection::Open(location_);
    } else {
      connection = SqliteConnection::Open(location_);
    }
    ASSERT_TRUE(connection.ok()) << connection.status();
    connection_ = *std::move(connection);
    ASSERT_TRUE(connection_
                    ->ExecuteScript("CREATE TABLE samples (id INTEGER PRIMARY KEY, i BIGINT, "
                                    "d DOUBLE PRECISION, t TEXT)",
                                    "create samples")
                    .ok());
  }

  // Inserts (id, i, d, t) with the one INSERT text both backends run.
  absl::StatusOr<int64_t> Insert(int id, SqlValue i, SqlValue d, SqlValue t) {
    return connection_->Execute("INSERT INTO samples (id, i, d, t) VALUES ($1, $2, $3, $4)",
                                {id, std::move(i), std::move(d), std::move(t)}, "insert sample");
  }

  std::unique_ptr<SqlConnection> connection_;
};

INSTANTIATE_TEST_SUITE_P(Sqlite, SqlConnectionTest, ::testing::Values(Backend::kSqlite),
                         BackendName);
INSTANTIATE_TEST_SUITE_P(Postgres, SqlConnectionTest, ::testing::Values(Backend::kPostgres),
                         BackendName);

TEST_P(SqlConnectionTest, ParametersOfEveryTypeRoundTrip) {
  const std::vector<int64_t> integers = {std::numeric_limits<int64_t>::max(),
                                         std::numeric_limits<int64_t>::min(), 0, -1, 1};
  const std::vector<double> doubles = {0.1 + 0.2,
                                       5e-324,  // the smallest subnormal
                                       -0.0,
                                       std::nextafter(1.0, 2.0),
                                       std::numeric_limits<double>::max(),
                                       std::numeric_limits<double>::infinity(),
                                       -std::numeric_limits<double>::infinity()};
  const std::vector<std::string> texts = {"", "it's \"quoted\" $1 ?1 -- /*", "ünïcødé ✓\n\t\\"};
  int id = 0;
  for (const int64_t value : integers) ASSERT_TRUE(Insert(++id, value, {}, {}).ok());
  for (const double value : doubles) ASSERT_TRUE(Insert(++id, {}, value, {}).ok());
  for (const std::string& value : texts) ASSERT_TRUE(Insert(++id, {}, {}, value).ok());
  ASSERT_TRUE(Insert(++id, true, {}, "true").ok());
  ASSERT_TRUE(Insert(++id, false, {}, std::string_view("false")).ok());

  absl::StatusOr<SqlRows> rows =
      connection_->Query("SELECT id, i, d, t FROM samples ORDER BY id", {}, "read samples");
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), static_cast<size_t>(id));
  size_t row_index = 0;
  for (const int64_t value : integers) {
    const SqlRow& row = (*rows)[row_index++];
    EXPECT_EQ(row.cell(1), SqlValue(value));
    EXPECT_TRUE(row.ColumnIsNull(2));
    EXPECT_EQ(row.cell(3).kind(), SqlValue::Kind::kNull);  // NULL, not ""
  }
  for (const double value : doubles) {
    const SqlRow& row = (*rows)[row_index++];
    EXPECT_EQ(row.cell(2).kind(), SqlValue::Kind::kDouble);
    if (!IsPostgres() && value == 0 && std::signbit(value)) {
      // SQLite writes an integral REAL as an integer: -0.0 comes back as +0.0 (and only then).
      EXPECT_EQ(Bits(row.ColumnDouble(2)), Bits(0.0));
      continue;
    }
    EXPECT_EQ(Bits(row.ColumnDouble(2)), Bits(value)) << value;  // PostgreSQL keeps -0.0's sign
  }
  for (const std::string& value : texts) {
    const SqlRow& row = (*rows)[row_index++];
    EXPECT_EQ(row.cell(3), SqlValue(value));  // "" stays text, not NULL
    EXPECT_FALSE(row.ColumnIsNull(3));
  }
  EXPECT_EQ((*rows)[row_index++].cell(1), SqlValue(int64_t{1}));
  EXPECT_EQ((*rows)[row_index++].cell(1), SqlValue(int64_t{0}));
}

TEST_P(SqlConnectionTest, SameStatementTextRunsOnEveryBackend) {
  ASSERT_TRUE(Insert(1, 10, 1.5, "a").ok());
  ASSERT_TRUE(Insert(2, 20, 2.5, "$1").ok());
  ASSERT_TRUE(Insert(3, 30, 3.5, "c").ok());
  // Placeholders out of order and repeated, and a "$1" that is text, not a placeholder.
  absl::StatusOr<SqlRows> rows = connection_->Query(
      "SELECT id, t FROM samples WHERE (i > $2 AND t <> $1) OR t = '$1' OR i = $2 "
      "ORDER BY t COLLATE \"C\" DESC, id",
      {"c", 15}, "select samples");
  ASSERT_TRUE(rows.ok()) << rows.status();
  std::vector<std::string> texts;
  for (const SqlRow& row : *rows) texts.push_back(row.ColumnText(1));
  EXPECT_EQ(texts, (std::vector<std::string>{"$1"}));

  absl::StatusOr<int64_t> updated = connection_->Execute(
      "UPDATE samples SET t = $2 || t WHERE i >= $1", {20, "x"}, "update samples");
  ASSERT_TRUE(updated.ok()) << updated.status();
  EXPECT_EQ(*updated, 2);
  EXPECT_EQ(*connection_->Execute("SELECT id FROM samples", {}, "count"), 0);  // a query
  absl::StatusOr<SqlRows> returned = connection_->Query(
      "UPDATE samples SET i = i + 1 WHERE t COLLATE \"C\" > $1 RETURNING id", {"b"}, "returning");
  ASSERT_TRUE(returned.ok()) << returned.status();
  ASSERT_EQ(returned->size(), 2u);  // "x$1" and "xc": "a" sorts before "b" bytewise
}

TEST_P(SqlConnectionTest, TransactionsRollBackUnlessCommitted) {
  {
    absl::StatusOr<SqlTransaction> transaction = connection_->Begin("first");
    ASSERT_TRUE(transaction.ok()) << transaction.status();
    ASSERT_TRUE(Insert(1, 1, 1.0, "rolled back").ok());
  }
  {
    absl::StatusOr<SqlTransaction> transaction = connection_->Begin("second");
    ASSERT_TRUE(transaction.ok()) << transaction.status();
    ASSERT_TRUE(Insert(2, 2, 2.0, "kept").ok());
    ASSERT_TRUE(transaction->Commit().ok());
  }
  absl::StatusOr<SqlRows> rows = connection_->Query("SELECT t FROM samples", {}, "read");
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].ColumnText(0), "kept");
}

TEST_P(SqlConnectionTest, ErrorsNameLocationAndOperationWithTheSameCodes) {
  ASSERT_TRUE(Insert(1, 1, 1.0, "a").ok());
  absl::StatusOr<int64_t> duplicate = Insert(1, 2, 2.0, "b");
  EXPECT_EQ(duplicate.status().code(), absl::StatusCode::kAlreadyExists) << duplicate.status();
  EXPECT_NE(duplicate.status().message().find("UNIQUE constraint failed"), std::string::npos)
      << duplicate.status();
  EXPECT_NE(duplicate.status().message().find("database '" + location_ + "': insert sample"),
            std::string::npos)
      << duplicate.status();

  absl::StatusOr<int64_t> nul = Insert(2, 2, 2.0, std::string("a\0b", 3));
  EXPECT_EQ(nul.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(nul.status().message().find("parameter $4 contains a NUL byte"), std::string::npos)
      << nul.status();
  absl::StatusOr<int64_t> nan = Insert(2, 2, std::nan(""), "x");
  EXPECT_EQ(nan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(nan.status().message().find("parameter $3 is NaN"), std::string::npos) << nan.status();
  EXPECT_EQ(connection_->Query("SELECT COUNT(*) FROM samples", {}, "count")->front().ColumnInt64(0),
            1);
}

TEST_P(SqlConnectionTest, ObserverSeesEveryStatementWithItsOutcome) {
  std::vector<absl::StatusCode> codes;
  connection_->set_observer([&codes](double seconds, absl::StatusCode code) {
    EXPECT_GE(seconds, 0);
    codes.push_back(code);
  });
  ASSERT_TRUE(Insert(1, 1, 1.0, "a").ok());
  EXPECT_FALSE(Insert(1, 1, 1.0, "a").ok());
  EXPECT_EQ(codes, (std::vector<absl::StatusCode>{absl::StatusCode::kOk,
                                                   absl::StatusCode::kAlreadyExists}));
}

// A full disk is an outage, not the caller's fault: UNAVAILABLE, naming the database and
// SQLite's message; once there is room again the same connection writes. (SQLite's
// max_page_count stands in for the disk here; tests/integration/db_faults_test.py fills a real
// tmpfs under a running server.)
TEST(SqliteFullTest, AFullDatabaseIsUnavailableUntilThereIsRoomAgain) {
  std::string directory = ::testing::TempDir() + "gtco_full_XXXXXX";
  ASSERT_NE(mkdtemp(directory.data()), nullptr);
  const std::string path = directory + "/full.db";
  auto connection = SqliteConnection::Open(path);
  ASSERT_TRUE(connection.ok()) << connection.status();
  ASSERT_TRUE((*connection)->ExecuteScript("CREATE TABLE blobs (t TEXT)", "create").ok());
  auto pages = (*connection)->Query("PRAGMA page_count", {}, "page count");
  ASSERT_TRUE(pages.ok()) << pages.status();
  ASSERT_TRUE((*connection)
                  ->ExecuteScript(absl::StrCat("PRAGMA max_page_count = ",
                                               pages->front().ColumnInt64(0) + 2),
                                  "cap")
                  .ok());
  const std::string big(64 * 1024, 'x');
  absl::StatusOr<int64_t> full =
      (*connection)->Execute("INSERT INTO blobs (t) VALUES ($1)", {big}, "store a blob");
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.status().code(), absl::StatusCode::kUnavailable) << full.status();
  EXPECT_NE(full.status().message().find("database '" + path + "': store a blob"),
            std::string::npos)
      << full.status();
  EXPECT_NE(full.status().message().find("full"), std::string::npos) << full.status();
  ASSERT_TRUE((*connection)->ExecuteScript("PRAGMA max_page_count = 1000000", "uncap").ok());
  EXPECT_TRUE(
      (*connection)->Execute("INSERT INTO blobs (t) VALUES ($1)", {big}, "store a blob").ok());
  connection->reset();
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) unlink((path + suffix).c_str());
  rmdir(directory.c_str());
}

}  // namespace
}  // namespace gtco::db
