// SQLite-only behaviour of the schedule database: files, WAL mode, in-memory databases
// (the backend-independent contract is in database_test.cc).
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "common/db/database.h"
#include "common/db/migrations.h"
#include "tests/unit/db/test_rows.h"

namespace gtco::db {
namespace {

using testing::MakeJob;
using testing::MakeTask;

// A fresh directory per test, removed with its files afterwards.
class SqliteDatabaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "gtco_db_XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    directory_ = pattern;
    path_ = directory_ + "/schedules.db";
  }
  void TearDown() override {
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) unlink((path_ + suffix).c_str());
    unlink((directory_ + "/garbage.db").c_str());
    rmdir(directory_.c_str());
  }

  std::string directory_;
  std::string path_;
};

TEST_F(SqliteDatabaseTest, OpenDatabaseTreatsPlainPathsAsSqliteFilesInWalMode) {
  absl::StatusOr<std::unique_ptr<Database>> database = OpenDatabase(path_);
  ASSERT_TRUE(database.ok()) << database.status();
  EXPECT_EQ(*(*database)->SchemaVersion(), LatestSchemaVersion());
  database->reset();
  sqlite3* handle = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path_.c_str(), &handle, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* statement = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(handle, "PRAGMA journal_mode", -1, &statement, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(statement), SQLITE_ROW);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(sqlite3_column_text(statement, 0))), "wal");
  sqlite3_finalize(statement);
  sqlite3_close(handle);
}

TEST_F(SqliteDatabaseTest, GarbageFileIsRejectedWithPath) {
  const std::string garbage_path = directory_ + "/garbage.db";
  {
    std::ofstream garbage(garbage_path);
    for (int line = 0; line < 200; ++line) garbage << "this is not a sqlite database\n";
  }
  absl::StatusOr<std::unique_ptr<Database>> database = OpenSqliteDatabase(garbage_path);
  ASSERT_FALSE(database.ok());
  EXPECT_EQ(database.status().code(), absl::StatusCode::kInvalidArgument) << database.status();
  EXPECT_NE(database.status().message().find(garbage_path), std::string::npos);
  EXPECT_NE(database.status().message().find("not a SQLite database"), std::string::npos);
}

TEST_F(SqliteDatabaseTest, MissingDirectoryIsRejectedWithPath) {
  const std::string missing = directory_ + "/no/such/dir/schedules.db";
  absl::StatusOr<std::unique_ptr<Database>> database = OpenDatabase(missing);
  ASSERT_FALSE(database.ok());
  EXPECT_EQ(database.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(database.status().message().find(missing), std::string::npos);
  EXPECT_NE(database.status().message().find("does not exist"), std::string::npos);
}

TEST(SqliteInMemoryTest, MemoryDatabaseWorksForTests) {
  absl::StatusOr<std::unique_ptr<Database>> database = OpenDatabase(":memory:");
  ASSERT_TRUE(database.ok()) << database.status();
  EXPECT_EQ(*(*database)->SchemaVersion(), LatestSchemaVersion());
  ASSERT_TRUE((*database)->CreateJob(MakeJob("j", "t", 1), {MakeTask("j", 0, "wk")}).ok());
  EXPECT_EQ((*database)->ListTasks("j")->size(), 1u);
}

}  // namespace
}  // namespace gtco::db
