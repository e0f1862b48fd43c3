// Argument checks of the team and token methods, shared by every backend so that they answer
// the same codes and messages before touching the database.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "common/db/database.h"

namespace gtco::db {

/// INVALID_ARGUMENT for an empty name, a negative limit, or a share that is not a positive
/// finite number.
absl::Status CheckTeamRow(const TeamRow& row);

/// INVALID_ARGUMENT for an empty token id.
absl::Status CheckTokenRow(const TokenRow& row);

/// INVALID_ARGUMENT when `prefix` is shorter than kMinTokenPrefixLength.
absl::Status CheckRevokePrefix(const std::string& prefix);

}  // namespace gtco::db
