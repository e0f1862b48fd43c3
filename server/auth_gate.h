// Who may call what: verifies the bearer token of each RPC and checks its role, or lets every
// call through as an admin when the farm runs with --no-auth (loopback only, see server_app.cc).
#pragma once

#include <grpcpp/grpcpp.h>

#include <initializer_list>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/auth/principal.h"
#include "common/db/database.h"
#include "server/farm_types.h"

namespace gtco::server {

/// Thread-safe (the database handle serializes its own calls).
class AuthGate {
 public:
  /// Verifies tokens against `database` (its own connection to the farm's database).
  explicit AuthGate(std::unique_ptr<db::Database> database);
  /// An open gate: every caller is an admin of no team (--no-auth).
  static std::unique_ptr<AuthGate> Open();

  /// The caller of `context`: UNAUTHENTICATED without a valid "authorization: Bearer <token>"
  /// header, PERMISSION_DENIED when its role is not one of `allowed`.
  absl::StatusOr<auth::Principal> Authorize(const grpc::ServerContext& context,
                                            std::initializer_list<auth::Role> allowed) const;
  /// The same check on the value of an "authorization" header (nullopt: no header), for the
  /// dashboard's HTTP API.
  absl::StatusOr<auth::Principal> AuthorizeHeader(std::optional<absl::string_view> authorization,
                                                  std::initializer_list<auth::Role> allowed) const;
  bool enabled() const { return database_ != nullptr; }

 private:
  AuthGate() = default;
  std::unique_ptr<db::Database> database_;  ///< null: open gate
};

/// True for a submitter asking about `team`'s job when it is not its own (admins see all).
bool HiddenFrom(const auth::Principal& principal, const std::string& team);

/// `job` (the farm's answer for `job_id`) as `principal` may see it, over gRPC and on the
/// dashboard alike: another team's job is NOT_FOUND worded as an unknown one, so that its
/// existence does not leak.
absl::StatusOr<JobInfo> VisibleTo(const auth::Principal& principal, const std::string& job_id,
                                  absl::StatusOr<JobInfo> job);

/// The team whose jobs `principal` lists: a submitter its own, whatever it asked for; anyone
/// else `requested` ("" = every team).
std::string ListedTeam(const auth::Principal& principal, const std::string& requested);

}  // namespace gtco::server
