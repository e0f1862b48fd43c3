// `gtco-server admin`: teams and tokens, straight on the database (SQLite or PostgreSQL).
#pragma once

#include <string>
#include <vector>

namespace gtco::server {

/// Runs `gtco-server admin --db DB <command> ...` (args exclude "admin"); returns the exit code:
/// 0 ok, 1 the database refused (message on stderr), 2 usage.
int RunAdminApp(const std::vector<std::string>& args);

}  // namespace gtco::server
