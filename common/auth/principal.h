// Who is calling: the role and team a verified token grants.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gtco::auth {

/// What a token may do. submitter: submit and manage its own team's jobs; worker: the worker
/// service only; admin: everything.
enum class Role { kSubmitter, kWorker, kAdmin };

/// "submitter" | "worker" | "admin" (the names stored in TokenRow::role and used by the CLI).
absl::string_view RoleName(Role role);

/// Inverse of RoleName. INVALID_ARGUMENT naming the accepted roles for anything else
/// (case-sensitive).
absl::StatusOr<Role> ParseRole(absl::string_view name);

/// The caller a token was verified for.
struct Principal {
  std::string team;  ///< the submitter's team; "" for workers and admins
  Role role = Role::kSubmitter;
  std::string token_id;  ///< public id of the token used, for logs and audit
};

}  // namespace gtco::auth
