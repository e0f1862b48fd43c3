// Admin commands: create-team, issue-token, revoke-token, list-teams.
#include "server/admin_app.h"

#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/auth/token.h"
#include "common/db/database.h"
#include "common/util/flags.h"

namespace gtco::server {
namespace {

constexpr const char* kAdminUsage =
    "usage: gtco-server admin --db DB create-team NAME [--max-concurrent-jobs N]\n"
    "                                 [--max-trials-per-day N] [--share W]\n"
    "       gtco-server admin --db DB issue-token [--team NAME] --role submitter|worker|admin\n"
    "       gtco-server admin --db DB revoke-token PREFIX\n"
    "       gtco-server admin --db DB list-teams [--json]\n"
    "  --db  the farm's database: a SQLite file or a postgresql:// URI\n"
    "  Limits of 0 mean no limit; a submitter token needs --team, worker and admin tokens none.\n";

int Fail(const absl::Status& status) {
  std::cerr << "gtco-server admin: " << status.message() << "\n";
  return status.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int CreateTeam(db::Database& database, const util::ParsedArgs& args) {
  if (args.positional().size() != 2) {
    std::cerr << kAdminUsage;
    return 2;
  }
  db::TeamRow team;
  team.name = args.positional()[1];
  bool valid_name = !team.name.empty() && team.name.size() <= 64 && std::isalnum(
      static_cast<unsigned char>(team.name[0]));
  for (char c : team.name) {
    valid_name &= std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
  }
  if (!valid_name) {
    return Fail(absl::InvalidArgumentError(absl::StrCat(
        "team name '", team.name,
        "' must be 1-64 letters, digits, '_', '-' or '.', starting with a letter or digit")));
  }
  auto jobs = args.GetInt("max-concurrent-jobs", 0);
  auto trials = args.GetInt("max-trials-per-day", 0);
  if (!jobs.ok()) return Fail(jobs.status());
  if (!trials.ok()) return Fail(trials.status());
  team.max_concurrent_jobs = *jobs;
  team.max_trials_per_day = *trials;
  const std::string share = args.Get("share", "1");
  char* end = nullptr;
  team.share = std::strtod(share.c_str(), &end);
  if (end == share.c_str() || *end != '\0' || !std::isfinite(team.share) || team.share <= 0) {
    return Fail(absl::InvalidArgumentError(
        absl::StrCat("--share must be a positive number (got '", share, "')")));
  }
  team.created_unix_ms = NowMs();
  absl::Status put = database.PutTeam(team);
  if (!put.ok()) return Fail(put);
  std::cout << "team " << team.name << ": max-concurrent-jobs "
            << (team.max_concurrent_jobs ? std::to_string(team.max_concurrent_jobs) : "unlimited")
            << ", max-trials-per-day "
            << (team.max_trials_per_day ? std::to_string(team.max_trials_per_day) : "unlimited")
            << ", share " << team.share << "\n";
  return 0;
}

int IssueToken(db::Database& database, const util::ParsedArgs& args) {
  if (args.positional().size() != 1 || !args.Has("role")) {
    std::cerr << kAdminUsage;
    return 2;
  }
  absl::StatusOr<auth::Role> role = auth::ParseRole(args.Get("role"));
  if (!role.ok()) return Fail(role.status());
  absl::StatusOr<auth::IssuedToken> issued =
      auth::CreateToken(database, *role, args.Get("team", ""));
  if (!issued.ok()) return Fail(issued.status());
  std::cout << issued->token << "\n";
  return 0;
}

int RevokeToken(db::Database& database, const util::ParsedArgs& args) {
  if (args.positional().size() != 2) {
    std::cerr << kAdminUsage;
    return 2;
  }
  absl::StatusOr<int64_t> revoked = auth::RevokeTokens(database, args.positional()[1]);
  if (!revoked.ok()) return Fail(revoked.status());
  if (*revoked == 0) {
    return Fail(absl::NotFoundError(
        absl::StrCat("no live token starts with '", args.positional()[1], "'")));
  }
  std::cout << "revoked " << *revoked << " token" << (*revoked == 1 ? "" : "s") << "\n";
  return 0;
}

int ListTeams(db::Database& database, const util::ParsedArgs& args) {
  absl::StatusOr<std::vector<db::TeamRow>> teams = database.ListTeams();
  if (!teams.ok()) return Fail(teams.status());
  const bool json = args.Has("json");
  if (json) std::cout << "[";
  for (size_t index = 0; index < teams->size(); ++index) {
    const db::TeamRow& team = (*teams)[index];
    absl::StatusOr<int64_t> running = database.CountRunningJobs(team.name);
    absl::StatusOr<int64_t> trials = database.CountTrialsSince(team.name, NowMs() - 86400000LL);
    absl::StatusOr<std::vector<db::TokenRow>> tokens = database.ListTokens(team.name);
    if (!running.ok()) return Fail(running.status());
    if (!trials.ok()) return Fail(trials.status());
    if (!tokens.ok()) return Fail(tokens.status());
    int live_tokens = 0;
    for (const db::TokenRow& token : *tokens) live_tokens += token.revoked_unix_ms == 0;
    if (json) {
      std::cout << (index ? "," : "")
                << absl::StrFormat(
                       "{\"name\":\"%s\",\"max_concurrent_jobs\":%d,\"max_trials_per_day\":%d,"
                       "\"share\":%g,\"running_jobs\":%d,\"trials_last_24h\":%d,"
                       "\"live_tokens\":%d}",
                       team.name, team.max_concurrent_jobs, team.max_trials_per_day, team.share,
                       *running, *trials, live_tokens);
    } else {
      std::cout << absl::StrFormat("%-16s jobs %d/%s  trials(24h) %d/%s  share %g  tokens %d\n",
                                   team.name, *running,
                                   team.max_concurrent_jobs
                                       ? std::to_string(team.max_concurrent_jobs)
                                       : std::string("-"),
                                   *trials,
                                   team.max_trials_per_day ? std::to_string(team.max_trials_per_day)
                                                           : std::string("-"),
                                   team.share, live_tokens);
    }
  }
  if (json) std::cout << "]\n";
  return 0;
}

}  // namespace

int RunAdminApp(const std::vector<std::string>& argv) {
  util::FlagSpec spec{{"db", "max-concurrent-jobs", "max-trials-per-day", "share", "team", "role"},
                      {"json", "help"}};
  auto args = util::ParsedArgs::Parse(argv, spec);
  if (!args.ok() || args->Has("help") || args->positional().empty()) {
    if (!args.ok()) std::cerr << "gtco-server admin: " << args.status().message() << "\n";
    std::cerr << kAdminUsage;
    return args.ok() && args->Has("help") ? 0 : 2;
  }
  auto database = db::OpenDatabase(args->Get("db", "gtco.db"));
  if (!database.ok()) {
    std::cerr << "gtco-server admin: cannot open database: " << database.status().message()
              << "\n";
    return 1;
  }
  const std::string& command = args->positional()[0];
  if (command == "create-team") return CreateTeam(**database, *args);
  if (command == "issue-token") return IssueToken(**database, *args);
  if (command == "revoke-token") return RevokeToken(**database, *args);
  if (command == "list-teams") return ListTeams(**database, *args);
  std::cerr << "gtco-server admin: unknown command '" << command << "'\n" << kAdminUsage;
  return 2;
}

}  // namespace gtco::server
