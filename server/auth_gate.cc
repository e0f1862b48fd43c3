// Bearer-token verification and role checks for the RPC handlers.
#include "server/auth_gate.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/auth/token.h"

namespace gtco::server {

AuthGate::AuthGate(std::unique_ptr<db::Database> database) : database_(std::move(database)) {}

std::unique_ptr<AuthGate> AuthGate::Open() { return std::unique_ptr<AuthGate>(new AuthGate()); }

absl::StatusOr<auth::Principal> AuthGate::Authorize(
    const grpc::ServerContext& context, std::initializer_list<auth::Role> allowed) const {
  const auto& metadata = context.client_metadata();
  auto header = metadata.find("authorization");
  if (header == metadata.end()) return AuthorizeHeader(std::nullopt, allowed);
  return AuthorizeHeader(absl::string_view(header->second.data(), header->second.size()), allowed);
}

absl::StatusOr<auth::Principal> AuthGate::AuthorizeHeader(
    std::optional<absl::string_view> authorization,
    std::initializer_list<auth::Role> allowed) const {
  if (database_ == nullptr) return auth::Principal{"", auth::Role::kAdmin, ""};
  if (!authorization) {
    return absl::UnauthenticatedError(
        "no token: gtco-client takes --token TOKEN or GTCO_TOKEN, the dashboard and HTTP API "
        "\"Authorization: Bearer TOKEN\" (an admin issues tokens with "
        "`gtco-server admin --db DB issue-token`)");
  }
  absl::StatusOr<std::string> token = auth::BearerToken(*authorization);
  if (!token.ok()) return token.status();
  absl::StatusOr<auth::Principal> principal = auth::VerifyToken(*database_, *token);
  if (!principal.ok()) return principal.status();
  std::vector<std::string> names;
  for (auth::Role role : allowed) {
    if (role == principal->role) return principal;
    names.push_back(std::string(auth::RoleName(role)));
  }
  return absl::PermissionDeniedError(absl::StrCat(
      "token ", principal->token_id, " has role ", auth::RoleName(principal->role),
      "; this call needs a ", absl::StrJoin(names, " or "), " token"));
}

absl::StatusOr<JobInfo> VisibleTo(const auth::Principal& principal, const std::string& job_id,
                                  absl::StatusOr<JobInfo> job) {
  if (job.ok() && HiddenFrom(principal, job->team)) {
    return absl::NotFoundError(absl::StrCat("job '", job_id, "' not found"));
  }
  return job;
}

std::string ListedTeam(const auth::Principal& principal, const std::string& requested) {
  return principal.role == auth::Role::kSubmitter ? principal.team : requested;
}

bool HiddenFrom(const auth::Principal& principal, const std::string& team) {
  return principal.role != auth::Role::kAdmin && principal.team != team;
}

}  // namespace gtco::server
