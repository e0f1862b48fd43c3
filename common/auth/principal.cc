// Role names.
#include "common/auth/principal.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace gtco::auth {

absl::string_view RoleName(Role role) {
  switch (role) {
    case Role::kSubmitter:
      return "submitter";
    case Role::kWorker:
      return "worker";
    case Role::kAdmin:
      return "admin";
  }
  return "unknown";
}

absl::StatusOr<Role> ParseRole(absl::string_view name) {
  for (const Role role : {Role::kSubmitter, Role::kWorker, Role::kAdmin}) {
    if (name == RoleName(role)) return role;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown role '", name, "': expected submitter, worker or admin"));
}

}  // namespace gtco::auth
