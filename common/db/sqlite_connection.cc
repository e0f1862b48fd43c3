// sqlite3 connection, cached statements, transactions and result-code conversion.
#include "common/db/sqlite_connection.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <utility>

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
    case SQLITE_FULL:
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

// ---------------------------------------------------------------------------------------------
// SqliteStatement

SqliteStatement::SqliteStatement(SqliteConnection* connection, sqlite3_stmt* statement,
                                 const std::string& operation)
    : connection_(connection), statement_(statement), operation_(operation) {}

SqliteStatement::SqliteStatement(SqliteStatement&& other) noexcept
    : connection_(other.connection_),
      statement_(std::exchange(other.statement_, nullptr)),
      operation_(std::move(other.operation_)),
      bind_error_code_(other.bind_error_code_) {}

SqliteStatement::~SqliteStatement() {
  if (statement_ == nullptr) return;
  sqlite3_reset(statement_);
  sqlite3_clear_bindings(statement_);
}

void SqliteStatement::Bind(int index, std::string_view value) {
  const int rc = sqlite3_bind_text64(statement_, index, value.data(), value.size(),
                                     SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK && bind_error_code_ == 0) bind_error_code_ = rc;
}

void SqliteStatement::Bind(int index, int64_t value) {
  const int rc = sqlite3_bind_int64(statement_, index, value);
  if (rc != SQLITE_OK && bind_error_code_ == 0) bind_error_code_ = rc;
}

void SqliteStatement::Bind(int index, double value) {
  const int rc = sqlite3_bind_double(statement_, index, value);
  if (rc != SQLITE_OK && bind_error_code_ == 0) bind_error_code_ = rc;
}

absl::StatusOr<bool> SqliteStatement::Step() {
  if (bind_error_code_ != 0) {
    return SqliteStatus(bind_error_code_, nullptr, operation_, connection_->path());
  }
  const int rc = sqlite3_step(statement_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return connection_->Error(rc, operation_);
}

absl::Status SqliteStatement::Run() {
  while (true) {
    GTCO_ASSIGN_OR_RETURN(const bool has_row, Step());
    if (!has_row) return absl::OkStatus();
  }
}

std::string SqliteStatement::ColumnText(int column) const {
  const unsigned char* text = sqlite3_column_text(statement_, column);
  if (text == nullptr) return "";
  return std::string(reinterpret_cast<const char*>(text),
                     static_cast<size_t>(sqlite3_column_bytes(statement_, column)));
}

int64_t SqliteStatement::ColumnInt64(int column) const {
  return sqlite3_column_int64(statement_, column);
}

double SqliteStatement::ColumnDouble(int column) const {
  return sqlite3_column_double(statement_, column);
}

bool SqliteStatement::ColumnIsNull(int column) const {
  return sqlite3_column_type(statement_, column) == SQLITE_NULL;
}

// ---------------------------------------------------------------------------------------------
// SqliteConnection

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
  // Reading the schema fails with SQLITE_NOTADB right away on a file that is not a database.
  GTCO_RETURN_IF_ERROR(connection->Exec("SELECT COUNT(*) FROM sqlite_master", "read schema"));
  return connection;
}

SqliteConnection::~SqliteConnection() {
  for (auto& [sql, statement] : statement_cache_) sqlite3_finalize(statement);
  sqlite3_close_v2(handle_);
}

absl::Status SqliteConnection::Exec(const std::string& sql, const std::string& operation) {
  const int rc = sqlite3_exec(handle_, sql.c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return Error(rc, operation);
  return absl::OkStatus();
}

absl::StatusOr<SqliteStatement> SqliteConnection::Prepare(const std::string& sql,
                                                          const std::string& operation) {
  auto cached = statement_cache_.find(sql);
  if (cached != statement_cache_.end()) return SqliteStatement(this, cached->second, operation);
  sqlite3_stmt* statement = nullptr;
  const int rc = sqlite3_prepare_v3(handle_, sql.c_str(), static_cast<int>(sql.size()),
                                    SQLITE_PREPARE_PERSISTENT, &statement, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(statement);
    return Error(rc, absl::StrCat(operation, " (prepare)"));
  }
  statement_cache_.emplace(sql, statement);
  return SqliteStatement(this, statement, operation);
}

int64_t SqliteConnection::ChangedRows() const { return sqlite3_changes64(handle_); }

absl::Status SqliteConnection::Error(int result_code, const std::string& operation) const {
  return SqliteStatus(result_code, handle_, operation, path_);
}

// ---------------------------------------------------------------------------------------------
// SqliteTransaction

absl::StatusOr<SqliteTransaction> SqliteTransaction::Begin(SqliteConnection* connection,
                                                           const std::string& operation) {
  GTCO_RETURN_IF_ERROR(
      connection->Exec("BEGIN IMMEDIATE", absl::StrCat(operation, " (begin transaction)")));
  return SqliteTransaction(connection, operation);
}

SqliteTransaction::SqliteTransaction(SqliteTransaction&& other) noexcept
    : connection_(std::exchange(other.connection_, nullptr)),
      operation_(std::move(other.operation_)) {}

SqliteTransaction::~SqliteTransaction() {
  if (connection_ == nullptr) return;
  // Best effort: a failed rollback leaves nothing more to do, and the connection's next
  // BEGIN reports any lasting problem.
  connection_->Exec("ROLLBACK", operation_).IgnoreError();
}

absl::Status SqliteTransaction::Commit() {
  GTCO_CHECK(connection_ != nullptr, "Commit() on a finished transaction");
  absl::Status status = connection_->Exec("COMMIT", absl::StrCat(operation_, " (commit)"));
  if (status.ok()) connection_ = nullptr;
  return status;
}

}  // namespace gtco::db
