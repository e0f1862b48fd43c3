// Versioned schema migrations of the schedule database, shared by every backend.
#pragma once

#include <string_view>
#include <vector>

namespace gtco::db {

/// One schema step. `sql` is a script of `;`-separated statements written in portable SQL
/// (TEXT, INTEGER, BIGINT, DOUBLE PRECISION; no backend-specific syntax) so that SQLite and
/// PostgreSQL apply the same text. Each migration is applied inside one transaction together
/// with its row in `schema_migrations`.
struct Migration {
  int version = 0;        ///< 1, 2, ... strictly increasing, never reused
  std::string_view name;  ///< short human label ("initial schema")
  std::string_view sql;
};

/// Creates the bookkeeping table; safe to run on every open (portable SQL).
inline constexpr std::string_view kCreateSchemaMigrationsSql =
    "CREATE TABLE IF NOT EXISTS schema_migrations ("
    " version INTEGER PRIMARY KEY,"
    " applied_unix_ms BIGINT NOT NULL)";

/// Every migration in order of version. Append new ones; never edit an applied one.
const std::vector<Migration>& AllMigrations();

/// The highest version in AllMigrations(): the schema this binary expects.
int LatestSchemaVersion();

/// Splits a migration script into its statements (on `;` outside quotes and comments),
/// trimmed and without empty ones, for backends that execute one statement at a time.
std::vector<std::string_view> SplitSqlStatements(std::string_view script);

}  // namespace gtco::db
