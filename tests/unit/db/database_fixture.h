// The fixture that runs a database test on every backend: a SQLite file in a fresh temporary
// directory, or a fresh database on the private PostgreSQL server (skipped without PostgreSQL).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <ostream>
#include <string>

#include "common/db/database.h"

namespace gtco::db::testing {

enum class Backend { kSqlite, kPostgres };

/// Test name suffix: "sqlite" | "postgres".
std::string BackendName(const ::testing::TestParamInfo<Backend>& info);
void PrintTo(Backend backend, std::ostream* out);

/// A fresh, empty database per test. Instantiate a suite on it (or on a subclass) as
/// `INSTANTIATE_TEST_SUITE_P(Sqlite, ...)` and `(Postgres, ...)`: ctest runs the "Postgres*"
/// cases in one process that shares one server.
class DatabaseTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override;
  void TearDown() override;

  bool IsPostgres() const { return GetParam() == Backend::kPostgres; }

  /// Opens the test's database (OpenDatabase on location_); nullptr after a test failure.
  std::unique_ptr<Database> OpenOrDie();

  /// Runs one statement on a separate raw connection and returns the first column of the
  /// first row as text ("" when there is none).
  std::string RawQuery(const std::string& sql);

  /// The name of table or index `name` as the backend's catalog lists it ("" when absent).
  std::string CatalogLookup(const std::string& kind, const std::string& name);

  std::string directory_;  ///< SQLite only
  std::string location_;   ///< what OpenDatabase() is given
};

}  // namespace gtco::db::testing
