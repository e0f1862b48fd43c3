// The schedule database schema as an ordered list of portable SQL migrations.
#include "common/db/migrations.h"

#include <cctype>

namespace gtco::db {
namespace {

// Version 1: workloads, workers, jobs, tasks, issued candidates and measurements.
constexpr std::string_view kInitialSchemaSql = R"sql(
CREATE TABLE workloads (
  workload_key TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  canonical TEXT NOT NULL,
  description TEXT NOT NULL,
  flops BIGINT NOT NULL
);

CREATE TABLE workers (
  worker_id TEXT PRIMARY KEY,
  target TEXT NOT NULL,
  hostname TEXT NOT NULL,
  hardware TEXT NOT NULL,
  registered_unix_ms BIGINT NOT NULL,
  last_seen_unix_ms BIGINT NOT NULL
);

CREATE TABLE jobs (
  job_id TEXT PRIMARY KEY,
  team TEXT NOT NULL,
  model_name TEXT NOT NULL, model_sha TEXT NOT NULL,
  target TEXT NOT NULL,
  state TEXT NOT NULL, error TEXT NOT NULL,
  budget BIGINT NOT NULL,
  options TEXT NOT NULL,
  created_unix_ms BIGINT NOT NULL, updated_unix_ms BIGINT NOT NULL
);
CREATE INDEX jobs_by_team_state ON jobs (team, state, created_unix_ms);
CREATE INDEX jobs_by_state ON jobs (state, created_unix_ms);

CREATE TABLE tasks (
  task_id TEXT PRIMARY KEY,
  job_id TEXT NOT NULL REFERENCES jobs (job_id),
  ordinal INTEGER NOT NULL,
  workload_key TEXT NOT NULL,
  target TEXT NOT NULL,
  weight INTEGER NOT NULL,
  trials_allotted BIGINT NOT NULL,
  state TEXT NOT NULL
);
CREATE INDEX tasks_by_job ON tasks (job_id, ordinal);
CREATE INDEX tasks_by_workload ON tasks (workload_key, target);

CREATE TABLE candidates (
  candidate_id TEXT PRIMARY KEY,
  task_id TEXT NOT NULL REFERENCES tasks (task_id),
  workload_key TEXT NOT NULL,
  target TEXT NOT NULL,
  trace TEXT NOT NULL,
  program_hash TEXT NOT NULL,
  state TEXT NOT NULL,
  worker_id TEXT NOT NULL,
  lease_deadline_unix_ms BIGINT NOT NULL,
  created_unix_ms BIGINT NOT NULL
);
CREATE INDEX candidates_by_task_state ON candidates (task_id, state, created_unix_ms);
CREATE INDEX candidates_by_lease ON candidates (state, lease_deadline_unix_ms);

CREATE TABLE measurements (
  candidate_id TEXT PRIMARY KEY,
  task_id TEXT NOT NULL REFERENCES tasks (task_id),
  workload_key TEXT NOT NULL,
  target TEXT NOT NULL,
  trace TEXT NOT NULL,
  program_hash TEXT NOT NULL,
  ok INTEGER NOT NULL,
  error_kind TEXT NOT NULL,
  error TEXT NOT NULL,
  median_seconds DOUBLE PRECISION NOT NULL,
  min_seconds DOUBLE PRECISION NOT NULL,
  max_seconds DOUBLE PRECISION NOT NULL,
  stddev_seconds DOUBLE PRECISION NOT NULL,
  repeats INTEGER NOT NULL,
  compile_seconds DOUBLE PRECISION NOT NULL,
  worker_id TEXT NOT NULL,
  hardware TEXT NOT NULL,
  measured_unix_ms BIGINT NOT NULL
);
CREATE INDEX measurements_by_task ON measurements (task_id);
CREATE INDEX measurements_by_workload ON measurements (workload_key, target, ok, median_seconds);
)sql";

// Version 2: teams with their limits, and access tokens (only salted hashes of the secrets).
// Tokens of workers and admins belong to no team (team ''), so `tokens.team` has no foreign key.
// A team's trials of the last day are counted through jobs (team, state, ...) -> tasks
// (job_id, ...) -> measurements (task_id, measured_unix_ms): the new index answers the time
// range inside each task and makes measurements_by_task (its prefix) redundant.
constexpr std::string_view kTeamsAndTokensSql = R"sql(
CREATE TABLE teams (
  name TEXT PRIMARY KEY,
  max_concurrent_jobs BIGINT NOT NULL,
  max_trials_per_day BIGINT NOT NULL,
  share DOUBLE PRECISION NOT NULL,
  created_unix_ms BIGINT NOT NULL
);

CREATE TABLE tokens (
  token_id TEXT PRIMARY KEY,
  team TEXT NOT NULL,
  role TEXT NOT NULL,
  salt TEXT NOT NULL,
  hash TEXT NOT NULL,
  created_unix_ms BIGINT NOT NULL,
  revoked_unix_ms BIGINT NOT NULL
);
CREATE INDEX tokens_by_team ON tokens (team, created_unix_ms);

CREATE INDEX measurements_by_task_time ON measurements (task_id, measured_unix_ms);
DROP INDEX measurements_by_task;
)sql";

// Version 3: the leader lease that lets one server drive the farm while standbys wait.
constexpr std::string_view kLeaderSql = R"sql(
CREATE TABLE leader (
  id INTEGER PRIMARY KEY,
  holder TEXT NOT NULL,
  address TEXT NOT NULL,
  expires_unix_ms BIGINT NOT NULL
);
)sql";

}  // namespace

const std::vector<Migration>& AllMigrations() {
  static const std::vector<Migration>* const kMigrations = new std::vector<Migration>{
      {1, "initial schema", kInitialSchemaSql},
      {2, "teams and tokens", kTeamsAndTokensSql},
      {3, "leader lease", kLeaderSql},
  };
  return *kMigrations;
}

int LatestSchemaVersion() {
  const std::vector<Migration>& migrations = AllMigrations();
  return migrations.empty() ? 0 : migrations.back().version;
}

std::vector<std::string_view> SplitSqlStatements(std::string_view script) {
  std::vector<std::string_view> statements;
  auto push_trimmed = [&statements](std::string_view piece) {
    while (!piece.empty() && std::isspace(static_cast<unsigned char>(piece.front()))) {
      piece.remove_prefix(1);
    }
    while (!piece.empty() && std::isspace(static_cast<unsigned char>(piece.back()))) {
      piece.remove_suffix(1);
    }
    if (!piece.empty()) statements.push_back(piece);
  };
  size_t statement_begin = 0;
  char open_quote = 0;
  bool in_line_comment = false;
  for (size_t pos = 0; pos < script.size(); ++pos) {
    const char c = script[pos];
    if (in_line_comment) {
      in_line_comment = c != '\n';
    } else if (open_quote != 0) {
      if (c == open_quote) open_quote = 0;
    } else if (c == '\'' || c == '"') {
      open_quote = c;
    } else if (c == '-' && pos + 1 < script.size() && script[pos + 1] == '-') {
      in_line_comment = true;
    } else if (c == ';') {
      push_trimmed(script.substr(statement_begin, pos - statement_begin));
      statement_begin = pos + 1;
    }
  }
  push_trimmed(script.substr(statement_begin));
  return statements;
}

}  // namespace gtco::db
