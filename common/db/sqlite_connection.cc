// sqlite3 connection: placeholders, cached statements, values, transactions, result codes.
#include "common/db/sqlite_connection.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/util/status.h"

namespace gtco::db {
namespace {

absl::StatusCode CodeForSqliteResult(int result_code) {
  switch (result_code) {
    case SQLITE_CONSTRAINT_PRIMARYKEY:
    case SQLITE_CONSTRAINT_UNIQUE:
      return absl::StatusCode::kAlreadyExists;
    default:
      break;
  }
  switch (result_code & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_FULL:   // the disk filled: writes work again once space is freed
    case SQLITE_IOERR:  // the storage failed this write or read; the next may succeed
      return absl::StatusCode::kUnavailable;
    case SQLITE_CONSTRAINT:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH:
      return absl::StatusCode::kFailedPrecondition;
    case SQLITE_NOTADB:
    case SQLITE_MISMATCH:
    case SQLITE_TOOBIG:
    case SQLITE_RANGE:
      return absl::StatusCode::kInvalidArgument;
    case SQLITE_CORRUPT:
      return absl::StatusCode::kDataLoss;
    case SQLITE_NOMEM:
      return absl::StatusCode::kResourceExhausted;
    default:
      return absl::StatusCode::kInternal;
  }
}

// Directory part of `path` ("." when there is none).
std::string ParentDirectory(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

bool IsInMemoryPath(const std::string& path) {
  return path.empty() || path == ":memory:" || path.rfind("file:", 0) == 0;
}

// COLLATE "C": bytewise, as SQLite's BINARY and PostgreSQL's "C" collations compare.
int CompareBytes(void* /*unused*/, int left_size, const void* left, int right_size,
                 const void* right) {
  const int common = std::memcmp(left, right, static_cast<size_t>(std::min(left_size, right_size)));
  if (common != 0) return common;
  return left_size < right_size ? -1 : (left_size > right_size ? 1 : 0);
}

int BindValue(sqlite3_stmt* statement, int index, const SqlValue& value) {
  switch (value.kind()) {
    case SqlValue::Kind::kNull:
      return sqlite3_bind_null(statement, index);
    case SqlValue::Kind::kInt64:
      return sqlite3_bind_int64(statement, index, std::get<int64_t>(value.storage()));
    case SqlValue::Kind::kDouble:
      return sqlite3_bind_double(statement, index, std::get<double>(value.storage()));
    case SqlValue::Kind::kText: {
      const std::string& text = std::get<std::string>(value.storage());
      return sqlite3_bind_text64(statement, index, text.data(), text.size(), SQLITE_TRANSIENT,
                                 SQLITE_UTF8);
    }
  }
  return SQLITE_MISUSE;
}

SqlRow ReadRow(sqlite3_stmt* statement) {
  const int column_count = sqlite3_column_count(statement);
  std::vector<SqlValue> cells;
  cells.reserve(static_cast<size_t>(column_count));
  for (int column = 0; column < column_count; ++column) {
    switch (sqlite3_column_type(statement, column)) {
      case SQLITE_NULL:
        cells.emplace_back();
        break;
      case SQLITE_INTEGER:
        cells.emplace_back(static_cast<int64_t>(sqlite3_column_int64(statement, column)));
        break;
      case SQLITE_FLOAT:
        cells.emplace_back(sqlite3_column_double(statement, column));
        break;
      default: {  // text (a blob reads as its bytes)
        const unsigned char* text = sqlite3_column_text(statement, column);
        const int size = sqlite3_column_bytes(statement, column);
        cells.emplace_back(text == nullptr ? std::string()
                                           : std::string(reinterpret_cast<const char*>(text),
                                                         static_cast<size_t>(size)));
      }
    }
  }
  return SqlRow(std::move(cells));
}

// Resets a cached statement and clears its bindings, so that the cache can hand it out again.
struct StatementReset {
  void operator()(sqlite3_stmt* statement) const {
    sqlite3_reset(statement);
    sqlite3_clear_bindings(statement);
  }
};

bool IsIdentifierChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '$';
}

// One past the end of the literal, quoted identifier or comment that starts at `pos`, or `pos`
// when none starts there.
size_t SkipQuotedOrComment(std::string_view sql, size_t pos) {
  auto one_past = [&sql](size_t found, size_t closer_size) {
    return found == std::string_view::npos ? sql.size() : found + closer_size;
  };
  const char c = sql[pos];
  // A doubled quote inside ('it''s') closes and reopens: the same span.
  if (c == '\'' || c == '"' || c == '`') return one_past(sql.find(c, pos + 1), 1);
  if (sql.substr(pos, 2) == "--") return one_past(sql.find('\n', pos + 2), 1);
  if (sql.substr(pos, 2) == "/*") return one_past(sql.find("*/", pos + 2), 2);
  return pos;
}

}  // namespace

absl::Status SqliteStatus(int result_code, sqlite3* connection, const std::string& operation,
                          const std::string& path) {
  std::string detail = sqlite3_errstr(result_code);
  if (connection != nullptr && sqlite3_extended_errcode(connection) == result_code) {
    detail = sqlite3_errmsg(connection);  // more specific (names the constraint or table)
  }
  if ((result_code & 0xff) == SQLITE_NOTADB) {
    detail = absl::StrCat("file is not a SQLite database (", detail, ")");
  }
  return absl::Status(CodeForSqliteResult(result_code),
                      absl::StrCat("database '", path, "': ", operation, ": ", detail,
                                   " (sqlite code ", result_code, ")"));
}

std::string SqlitePlaceholders(std::string_view sql) {
  std::string rewritten;
  rewritten.reserve(sql.size());
  size_t pos = 0;
  while (pos < sql.size()) {
    const size_t skipped = SkipQuotedOrComment(sql, pos);
    if (skipped != pos) {
      rewritten.append(sql.substr(pos, skipped - pos));
      pos = skipped;
      continue;
    }
    const bool placeholder = sql[pos] == '$' && pos + 1 < sql.size() &&
                             std::isdigit(static_cast<unsigned char>(sql[pos + 1])) != 0 &&
                             (pos == 0 || !IsIdentifierChar(sql[pos - 1]));
    rewritten.push_back(placeholder ? '?' : sql[pos]);  // the digits follow unchanged
    ++pos;
  }
  return rewritten;
}

absl::StatusOr<std::unique_ptr<SqliteConnection>> SqliteConnection::Open(const std::string& path,
                                                                         int busy_timeout_ms) {
  if (!IsInMemoryPath(path)) {
    const std::string directory = ParentDirectory(path);
    struct stat directory_info;
    if (stat(directory.c_str(), &directory_info) != 0 || !S_ISDIR(directory_info.st_mode)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "database '", path, "': cannot open: directory '", directory, "' does not exist"));
    }
  }
  sqlite3* handle = nullptr;
  const int flags =
      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI;
  const int rc = sqlite3_open_v2(path.c_str(), &handle, flags, nullptr);
  if (rc != SQLITE_OK) {
    absl::Status status = SqliteStatus(rc, handle, "open", path);
    sqlite3_close_v2(handle);  // a handle is returned even on failure
    return status;
  }
  sqlite3_extended_result_codes(handle, 1);
  // Before the first read: another connection may hold an exclusive lock on a new file.
  sqlite3_busy_timeout(handle, busy_timeout_ms);
  std::unique_ptr<SqliteConnection> connection(new SqliteConnection(handle, path));
  const int collation_rc =
      sqlite3_create_collation_v2(handle, "C", SQLITE_UTF8, nullptr, &CompareBytes, nullptr);
  if (collation_rc != SQLITE_OK) return connection->Error(collation_rc, "define collation C");
  // Reading the schema fails with SQLITE_NOTADB right away on a file that is not a database.
  GTCO_RETURN_IF_ERROR(connection->Exec("SELECT COUNT(*) FROM sqlite_master", "read schema"));
  // Switching to WAL needs a lock another process may hold: the busy timeout covers it.
  GTCO_RETURN_IF_ERROR(connection->Exec("PRAGMA journal_mode = WAL", "enable WAL journal"));
  GTCO_RETURN_IF_ERROR(connection->Exec("PRAGMA synchronous = NORMAL", "set synchronous"));
  GTCO_RETURN_IF_ERROR(connection->Exec("PRAGMA foreign_keys = ON", "enable foreign keys"));
  return connection;
}

SqliteConnection::~SqliteConnection() {
  for (auto& [sql, statement] : statement_cache_) sqlite3_finalize(statement);
  sqlite3_close_v2(handle_);
}

absl::Status SqliteConnection::ExecuteScript(std::string_view script,
                                             const std::string& operation) {
  return Exec(std::string(script), operation);
}

absl::Status SqliteConnection::Exec(const std::string& sql, const std::string& operation) {
  const int rc = sqlite3_exec(handle_, sql.c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return Error(rc, operation);
  return absl::OkStatus();
}

absl::StatusOr<sqlite3_stmt*> SqliteConnection::Prepare(const std::string& sql,
                                                        const std::string& operation) {
  auto cached = statement_cache_.find(sql);
  if (cached != statement_cache_.end()) return cached->second;
  const std::string sqlite_sql = SqlitePlaceholders(sql);
  sqlite3_stmt* statement = nullptr;
  const int rc =
      sqlite3_prepare_v3(handle_, sqlite_sql.c_str(), static_cast<int>(sqlite_sql.size()),
                         SQLITE_PREPARE_PERSISTENT, &statement, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(statement);
    return Error(rc, absl::StrCat(operation, " (prepare)"));
  }
  statement_cache_.emplace(sql, statement);
  return statement;
}

absl::StatusOr<SqlResult> SqliteConnection::Run(const std::string& sql, const SqlParams& params,
                                                const std::string& operation) {
  GTCO_ASSIGN_OR_RETURN(sqlite3_stmt* const statement, Prepare(sql, operation));
  const std::unique_ptr<sqlite3_stmt, StatementReset> reset_when_done(statement);
  for (size_t index = 0; index < params.size(); ++index) {
    const int rc = BindValue(statement, static_cast<int>(index) + 1, params[index]);
    if (rc != SQLITE_OK) return SqliteStatus(rc, nullptr, operation, location());
  }
  SqlResult result;
  while (true) {
    const int rc = sqlite3_step(statement);
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) return Error(rc, operation);
    result.rows.push_back(ReadRow(statement));
  }
  if (sqlite3_stmt_readonly(statement) == 0) result.affected_rows = sqlite3_changes64(handle_);
  return result;
}

absl::Status SqliteConnection::Error(int result_code, const std::string& operation) const {
  return SqliteStatus(result_code, handle_, operation, location());
}

absl::Status SqliteConnection::BeginTransaction(const std::string& operation) {
  return Exec("BEGIN IMMEDIATE", operation);
}

absl::Status SqliteConnection::CommitTransaction(const std::string& operation) {
  return Exec("COMMIT", operation);
}

void SqliteConnection::RollbackTransaction(const std::string& operation) {
  Exec("ROLLBACK", operation).IgnoreError();
}

}  // namespace gtco::db
