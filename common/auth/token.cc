// Token issuing, verification, revocation and bearer parsing.
#include "common/auth/token.h"

#include <chrono>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/auth/crypto.h"
#include "common/util/status.h"

namespace gtco::auth {
namespace {

constexpr absl::string_view kTokenPrefix = "gtco_";
constexpr size_t kIdBytes = 6;       // 12 hex digits
constexpr size_t kSecretBytes = 20;  // 40 hex digits
constexpr size_t kSaltBytes = 16;
constexpr int kIdAttempts = 4;  // CreateToken's draws before giving up on id collisions

static_assert(kTokenIdLength == kTokenPrefix.size() + 2 + 2 * kIdBytes);
static_assert(kTokenLength == kTokenIdLength + 1 + 2 * kSecretBytes);
static_assert(kTokenIdLength >= static_cast<size_t>(db::kMinTokenPrefixLength));

constexpr char kFormatHint[] =
    "expected 'gtco_<s|w|a>_<12 hex digits>_<40 hex digits>' as printed by "
    "`gtco-server admin issue-token`";

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

char RoleLetter(Role role) {
  switch (role) {
    case Role::kSubmitter:
      return 's';
    case Role::kWorker:
      return 'w';
    case Role::kAdmin:
      return 'a';
  }
  return '?';
}

// A token split into its public id and its secret (still hex).
struct TokenParts {
  absl::string_view token_id;
  absl::string_view secret_hex;
};

// Splits a well-formed token; UNAUTHENTICATED "malformed token" otherwise (the text itself is
// never quoted: it may be a mistyped secret).
absl::StatusOr<TokenParts> SplitToken(absl::string_view text) {
  const auto malformed = [](absl::string_view why) {
    return absl::UnauthenticatedError(absl::StrCat("malformed token (", why, "): ", kFormatHint));
  };
  if (text.empty()) return malformed("empty");
  if (text.size() != kTokenLength) {
    return malformed(absl::StrCat(text.size(), " characters instead of ", kTokenLength));
  }
  if (!absl::StartsWith(text, kTokenPrefix)) return malformed("no 'gtco_' prefix");
  const char letter = text[kTokenPrefix.size()];
  if (letter != 's' && letter != 'w' && letter != 'a') return malformed("unknown role letter");
  if (text[kTokenPrefix.size() + 1] != '_' || text[kTokenIdLength] != '_') {
    return malformed("misplaced '_'");
  }
  TokenParts parts{text.substr(0, kTokenIdLength), text.substr(kTokenIdLength + 1)};
  if (!IsLowerHex(parts.token_id.substr(kTokenPrefix.size() + 2)) ||
      !IsLowerHex(parts.secret_hex)) {
    return malformed("not lowercase hex");
  }
  return parts;
}

// Hex of SHA-256(salt || secret), both given as raw bytes.
absl::StatusOr<std::string> HashSecret(absl::string_view salt, absl::string_view secret) {
  GTCO_ASSIGN_OR_RETURN(const std::string digest, Sha256(absl::StrCat(salt, secret)));
  return absl::BytesToHexString(digest);
}

absl::Status CheckTeamForRole(Role role, absl::string_view team) {
  if (role == Role::kSubmitter && team.empty()) {
    return absl::InvalidArgumentError("a submitter token needs a team (--team NAME)");
  }
  if (role != Role::kSubmitter && !team.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(RoleName(role), " tokens belong to no team, got '", team, "'; drop --team"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<IssuedToken> IssueToken(Role role, absl::string_view team) {
  GTCO_RETURN_IF_ERROR(CheckTeamForRole(role, team));
  GTCO_ASSIGN_OR_RETURN(const std::string id_bytes, RandomBytes(kIdBytes));
  GTCO_ASSIGN_OR_RETURN(const std::string secret, RandomBytes(kSecretBytes));
  GTCO_ASSIGN_OR_RETURN(const std::string salt, RandomBytes(kSaltBytes));
  IssuedToken issued;
  issued.row.token_id = absl::StrCat(kTokenPrefix, std::string(1, RoleLetter(role)), "_",
                                     absl::BytesToHexString(id_bytes));
  issued.row.team = std::string(team);
  issued.row.role = std::string(RoleName(role));
  issued.row.salt = absl::BytesToHexString(salt);
  GTCO_ASSIGN_OR_RETURN(issued.row.hash, HashSecret(salt, secret));
  issued.row.created_unix_ms = NowUnixMs();
  issued.row.revoked_unix_ms = 0;
  issued.token = absl::StrCat(issued.row.token_id, "_", absl::BytesToHexString(secret));
  return issued;
}

absl::StatusOr<IssuedToken> CreateToken(db::Database& database, Role role, absl::string_view team) {
  absl::Status last;
  for (int attempt = 0; attempt < kIdAttempts; ++attempt) {
    GTCO_ASSIGN_OR_RETURN(IssuedToken issued, IssueToken(role, team));
    last = database.PutToken(issued.row);
    if (last.ok()) return issued;
    if (!absl::IsAlreadyExists(last)) return last;
  }
  return absl::InternalError(
      absl::StrCat("no free token id after ", kIdAttempts, " random draws: ", last.message()));
}

absl::StatusOr<Principal> VerifyToken(db::Database& database, absl::string_view token_text) {
  GTCO_ASSIGN_OR_RETURN(const TokenParts parts, SplitToken(token_text));
  const std::string token_id(parts.token_id);
  GTCO_ASSIGN_OR_RETURN(const std::optional<db::TokenRow> row, database.GetToken(token_id));
  if (!row.has_value()) {
    return absl::UnauthenticatedError(
        absl::StrCat("unknown token ", token_id,
                     ": not issued by this farm (check the server address, or "
                     "ask an admin for a token)"));
  }
  if (!IsLowerHex(row->salt) || !IsLowerHex(row->hash)) {
    return absl::InternalError(absl::StrCat("stored salt or hash of token ", token_id,
                                            " is corrupt; revoke it and issue a new one"));
  }
  GTCO_ASSIGN_OR_RETURN(
      const std::string hash,
      HashSecret(absl::HexStringToBytes(row->salt), absl::HexStringToBytes(parts.secret_hex)));
  if (!ConstantTimeEquals(hash, row->hash)) {
    return absl::UnauthenticatedError(absl::StrCat("wrong secret for token ", token_id,
                                                   ": pass the whole token as it was issued"));
  }
  if (row->revoked_unix_ms != 0) {
    return absl::UnauthenticatedError(
        absl::StrCat("token ", token_id, " was revoked; ask an admin for a new one"));
  }
  absl::StatusOr<Role> role = ParseRole(row->role);
  if (!role.ok()) {
    return absl::InternalError(
        absl::StrCat("token ", token_id, " is stored with an unknown role '", row->role, "'"));
  }
  return Principal{row->team, *role, token_id};
}

absl::StatusOr<int64_t> RevokeTokens(db::Database& database, absl::string_view prefix_or_token) {
  const absl::string_view trimmed = absl::StripAsciiWhitespace(prefix_or_token);
  const absl::StatusOr<TokenParts> whole_token = SplitToken(trimmed);
  const absl::string_view prefix = whole_token.ok() ? whole_token->token_id : trimmed;
  return database.RevokeTokens(std::string(prefix), NowUnixMs());
}

absl::StatusOr<std::string> BearerToken(absl::string_view authorization) {
  constexpr char kExpected[] = "send the metadata 'authorization: Bearer <token>'";
  const absl::string_view value = absl::StripAsciiWhitespace(authorization);
  if (value.empty()) {
    return absl::UnauthenticatedError(absl::StrCat("no credentials: ", kExpected));
  }
  const size_t blank = value.find_first_of(" \t");
  const absl::string_view scheme = value.substr(0, blank);
  if (!absl::EqualsIgnoreCase(scheme, "Bearer")) {
    return absl::UnauthenticatedError(
        absl::StrCat("unsupported authorization scheme (not Bearer): ", kExpected));
  }
  const absl::string_view token = blank == absl::string_view::npos
                                      ? absl::string_view()
                                      : absl::StripAsciiWhitespace(value.substr(blank));
  if (token.empty()) {
    return absl::UnauthenticatedError(absl::StrCat("empty bearer token: ", kExpected));
  }
  return std::string(token);
}

}  // namespace gtco::auth
