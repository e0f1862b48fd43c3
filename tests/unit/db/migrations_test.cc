// Tests of the migration list and the SQL statement splitter.
#include "common/db/migrations.h"

#include <gtest/gtest.h>

#include <string>

namespace gtco::db {
namespace {

TEST(MigrationsTest, VersionsStrictlyIncreaseFromOne) {
  const std::vector<Migration>& migrations = AllMigrations();
  ASSERT_FALSE(migrations.empty());
  EXPECT_EQ(migrations.front().version, 1);
  for (size_t index = 1; index < migrations.size(); ++index) {
    EXPECT_GT(migrations[index].version, migrations[index - 1].version);
  }
  EXPECT_EQ(LatestSchemaVersion(), migrations.back().version);
}

TEST(MigrationsTest, SchemaAvoidsSqliteOnlySyntax) {
  for (const Migration& migration : AllMigrations()) {
    const std::string sql(migration.sql);
    for (const char* sqlite_only : {"AUTOINCREMENT", "WITHOUT ROWID", "PRAGMA", "STRICT",
                                    "INSERT OR", "REPLACE INTO", "DATETIME("}) {
      EXPECT_EQ(sql.find(sqlite_only), std::string::npos)
          << "migration " << migration.version << " uses " << sqlite_only;
    }
  }
}

TEST(MigrationsTest, SplitsStatementsOutsideQuotesAndComments) {
  const std::vector<std::string_view> statements = SplitSqlStatements(
      "CREATE TABLE a (x TEXT DEFAULT 'a;b');\n-- comment; with semicolon\n"
      "CREATE INDEX i ON a (x) ;  ;\n  ");
  ASSERT_EQ(statements.size(), 2u);
  EXPECT_EQ(statements[0], "CREATE TABLE a (x TEXT DEFAULT 'a;b')");
  EXPECT_EQ(statements[1], "-- comment; with semicolon\nCREATE INDEX i ON a (x)");
}

TEST(MigrationsTest, InitialSchemaHasEveryTable) {
  const std::string sql(AllMigrations().front().sql);
  for (const char* table :
       {"workloads", "workers", "jobs", "tasks", "candidates", "measurements"}) {
    EXPECT_NE(sql.find(std::string("CREATE TABLE ") + table + " ("), std::string::npos) << table;
  }
}

}  // namespace
}  // namespace gtco::db
