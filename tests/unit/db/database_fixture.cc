// The fixture that runs a database test on every backend.
#include "tests/unit/db/database_fixture.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "tests/unit/db/postgres_server.h"

namespace gtco::db::testing {

std::string BackendName(const ::testing::TestParamInfo<Backend>& info) {
  return info.param == Backend::kSqlite ? "sqlite" : "postgres";
}

void PrintTo(Backend backend, std::ostream* out) {
  *out << (backend == Backend::kSqlite ? "SQLite" : "PostgreSQL");
}

void DatabaseTest::SetUp() {
  if (GetParam() == Backend::kPostgres) {
    PostgresServer& server = PostgresServer::Shared();
    if (server.unreachable_here()) GTEST_SKIP() << server.start_status().message();
    ASSERT_TRUE(server.start_status().ok()) << server.start_status();
    const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
    absl::StatusOr<std::string> uri = server.CreateDatabase(test->name());
    ASSERT_TRUE(uri.ok()) << uri.status();
    location_ = *uri;
    return;
  }
  std::string pattern = ::testing::TempDir() + "gtco_db_XXXXXX";
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  directory_ = pattern;
  location_ = directory_ + "/schedules.db";
}

void DatabaseTest::TearDown() {
  if (directory_.empty()) return;  // PostgreSQL databases go away with the server
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    unlink((location_ + suffix).c_str());
  }
  rmdir(directory_.c_str());
}

std::unique_ptr<Database> DatabaseTest::OpenOrDie() {
  absl::StatusOr<std::unique_ptr<Database>> database = OpenDatabase(location_);
  EXPECT_TRUE(database.ok()) << database.status();
  return database.ok() ? *std::move(database) : nullptr;
}

std::string DatabaseTest::RawQuery(const std::string& sql) {
  if (IsPostgres()) {
    absl::StatusOr<std::string> value = PostgresServer::Query(location_, sql);
    EXPECT_TRUE(value.ok()) << value.status();
    return value.ok() ? *value : "";
  }
  sqlite3* handle = nullptr;
  EXPECT_EQ(sqlite3_open(location_.c_str(), &handle), SQLITE_OK);
  sqlite3_stmt* statement = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(handle, sql.c_str(), -1, &statement, nullptr), SQLITE_OK)
      << sqlite3_errmsg(handle);
  std::string value;
  if (sqlite3_step(statement) == SQLITE_ROW && sqlite3_column_text(statement, 0) != nullptr) {
    value = reinterpret_cast<const char*>(sqlite3_column_text(statement, 0));
  }
  sqlite3_finalize(statement);
  sqlite3_close(handle);
  return value;
}

std::string DatabaseTest::CatalogLookup(const std::string& kind, const std::string& name) {
  if (!IsPostgres()) {
    return RawQuery(absl::StrCat("SELECT name FROM sqlite_master WHERE type = '", kind,
                                 "' AND name = '", name, "'"));
  }
  if (kind == "table") {
    return RawQuery(
        absl::StrCat("SELECT table_name FROM information_schema.tables WHERE "
                     "table_schema = current_schema() AND table_name = '",
                     name, "'"));
  }
  return RawQuery(
      absl::StrCat("SELECT indexname FROM pg_indexes WHERE schemaname = "
                   "current_schema() AND indexname = '",
                   name, "'"));
}

}  // namespace gtco::db::testing
