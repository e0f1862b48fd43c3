// Bearer tokens: issuing (plaintext once, salted hash stored), verifying, revoking, and reading
// them from the "authorization" metadata.
//
// A token reads `gtco_<r>_<id>_<secret>`: r is the role letter (s submitter, w worker,
// a admin), id 12 lowercase hex digits and secret 40 (160 random bits). Its first part,
// `gtco_<r>_<id>`, is the public token id (TokenRow::token_id): safe to print, list and log,
// and what `revoke-token` matches. Only SHA-256(salt || secret) with a random 16-byte salt is
// stored; the secret never reaches the database, logs or error messages.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/auth/principal.h"
#include "common/db/database.h"

namespace gtco::auth {

/// Length of a token id ("gtco_s_0123456789ab") and of a whole token.
inline constexpr size_t kTokenIdLength = 19;
inline constexpr size_t kTokenLength = 60;

/// A freshly issued token: the plaintext to hand to its holder once, and the row to store.
struct IssuedToken {
  std::string token;  ///< the whole plaintext token; shown once, never stored
  db::TokenRow row;   ///< token_id, team, role, salt, hash, created now, not revoked
};

/// Draws a new token for `role` (CSPRNG) and hashes its secret. Does not touch any database
/// (see CreateToken). INVALID_ARGUMENT when a submitter token has no team or a worker or admin
/// token has one; INTERNAL when the random generator fails.
absl::StatusOr<IssuedToken> IssueToken(Role role, absl::string_view team);

/// IssueToken + Database::PutToken, drawing a new id if it collides with a stored one.
/// FAILED_PRECONDITION when `team` names no team; database errors as they come.
absl::StatusOr<IssuedToken> CreateToken(db::Database& database, Role role, absl::string_view team);

/// Checks a plaintext token against the database. UNAUTHENTICATED, with a message its holder
/// can act on, when the text is not a token ("malformed token: ..."), names no stored token
/// ("unknown token <id> ..."), has the wrong secret, or was revoked ("token <id> was revoked
/// ..."); messages carry the public id at most, never the secret. Database failures are
/// returned as they are (e.g. UNAVAILABLE), INTERNAL for a stored row that is corrupt. The hash
/// comparison takes constant time.
absl::StatusOr<Principal> VerifyToken(db::Database& database, absl::string_view token_text);

/// Revokes the tokens named by `prefix_or_token`: a whole token revokes exactly that token,
/// anything else is a token id prefix (Database::RevokeTokens: at least
/// db::kMinTokenPrefixLength characters, INVALID_ARGUMENT otherwise). Returns how many live
/// tokens were revoked (0 when none matched).
absl::StatusOr<int64_t> RevokeTokens(db::Database& database, absl::string_view prefix_or_token);

/// The token of an "authorization" header / gRPC metadata value "Bearer <token>" (scheme
/// case-insensitive, surrounding blanks ignored). UNAUTHENTICATED when the value is empty, uses
/// another scheme, or has no token; the message never repeats the value (it may be a secret).
absl::StatusOr<std::string> BearerToken(absl::string_view authorization);

}  // namespace gtco::auth
