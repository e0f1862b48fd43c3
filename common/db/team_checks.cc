// Argument checks of the team and token methods, shared by every backend.
#include "common/db/team_checks.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace gtco::db {

absl::Status CheckTeamRow(const TeamRow& row) {
  if (row.name.empty()) return absl::InvalidArgumentError("team name must not be empty");
  if (row.max_concurrent_jobs < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("team '", row.name, "': max_concurrent_jobs must be >= 0 (0 = no limit), got ",
                     row.max_concurrent_jobs));
  }
  if (row.max_trials_per_day < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("team '", row.name, "': max_trials_per_day must be >= 0 (0 = no limit), got ",
                     row.max_trials_per_day));
  }
  if (!std::isfinite(row.share) || row.share <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("team '", row.name, "': share must be a positive number, got ", row.share));
  }
  return absl::OkStatus();
}

absl::Status CheckTokenRow(const TokenRow& row) {
  if (row.token_id.empty()) return absl::InvalidArgumentError("token id must not be empty");
  return absl::OkStatus();
}

absl::Status CheckRevokePrefix(const std::string& prefix) {
  if (prefix.size() >= static_cast<size_t>(kMinTokenPrefixLength)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "token prefix '", prefix, "' is too short: give at least ", kMinTokenPrefixLength,
      " characters of the token id (the token's start, e.g. 'gtco_s_0123456789ab') "
      "so that it cannot match tokens you did not mean"));
}

}  // namespace gtco::db
