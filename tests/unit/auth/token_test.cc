// Issuing, verifying and revoking tokens on a real SQLite schedule database, and bearer parsing.
#include "common/auth/token.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <memory>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "common/db/database.h"

namespace gtco::auth {
namespace {

// A schedule database in a fresh file with teams "vision" and "speech".
class TokenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "gtco_auth_XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    directory_ = pattern;
    path_ = directory_ + "/schedules.db";
    absl::StatusOr<std::unique_ptr<db::Database>> database = db::OpenSqliteDatabase(path_);
    ASSERT_TRUE(database.ok()) << database.status();
    database_ = *std::move(database);
    ASSERT_TRUE(database_->PutTeam(db::TeamRow{"vision", 4, 200000, 2.0, 1}).ok());
    ASSERT_TRUE(database_->PutTeam(db::TeamRow{"speech", 1, 100, 1.0, 1}).ok());
  }

  void TearDown() override {
    database_.reset();
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) unlink((path_ + suffix).c_str());
    rmdir(directory_.c_str());
  }

  // Issues and stores a token, failing the test on error.
  IssuedToken Create(Role role, const std::string& team) {
    absl::StatusOr<IssuedToken> issued = CreateToken(*database_, role, team);
    EXPECT_TRUE(issued.ok()) << issued.status();
    return issued.ok() ? *std::move(issued) : IssuedToken{};
  }

  // Expects UNAUTHENTICATED whose message contains `fragment`.
  void ExpectUnauthenticated(const std::string& token_text, const std::string& fragment) {
    absl::StatusOr<Principal> principal = VerifyToken(*database_, token_text);
    ASSERT_FALSE(principal.ok()) << "accepted " << token_text;
    EXPECT_EQ(principal.status().code(), absl::StatusCode::kUnauthenticated) << principal.status();
    EXPECT_TRUE(absl::StrContains(principal.status().message(), fragment))
        << principal.status() << " lacks '" << fragment << "'";
  }

  std::string directory_;
  std::string path_;
  std::unique_ptr<db::Database> database_;
};

// The secret part of a token (after the id and its '_').
std::string SecretOf(const std::string& token) { return token.substr(kTokenIdLength + 1); }

TEST_F(TokenTest, IssuedTokenHasTheDocumentedShape) {
  absl::StatusOr<IssuedToken> issued = IssueToken(Role::kSubmitter, "vision");
  ASSERT_TRUE(issued.ok()) << issued.status();
  const std::string& token = issued->token;
  EXPECT_EQ(token.size(), kTokenLength);
  EXPECT_TRUE(absl::StartsWith(token, "gtco_s_")) << token;
  EXPECT_EQ(token.substr(0, kTokenIdLength), issued->row.token_id);
  EXPECT_EQ(token[kTokenIdLength], '_');
  EXPECT_EQ(issued->row.team, "vision");
  EXPECT_EQ(issued->row.role, "submitter");
  EXPECT_EQ(issued->row.salt.size(), 32u);  // 16 bytes
  EXPECT_EQ(issued->row.hash.size(), 64u);  // SHA-256
  EXPECT_GT(issued->row.created_unix_ms, 0);
  EXPECT_EQ(issued->row.revoked_unix_ms, 0);
  EXPECT_TRUE(absl::StartsWith(IssueToken(Role::kWorker, "")->token, "gtco_w_"));
  EXPECT_TRUE(absl::StartsWith(IssueToken(Role::kAdmin, "")->token, "gtco_a_"));
}

TEST_F(TokenTest, TokensAndSaltsAreUnique) {
  std::set<std::string> tokens, ids, salts, hashes;
  for (int draw = 0; draw < 50; ++draw) {
    absl::StatusOr<IssuedToken> issued = IssueToken(Role::kWorker, "");
    ASSERT_TRUE(issued.ok()) << issued.status();
    tokens.insert(issued->token);
    ids.insert(issued->row.token_id);
    salts.insert(issued->row.salt);
    hashes.insert(issued->row.hash);
  }
  EXPECT_EQ(tokens.size(), 50u);
  EXPECT_EQ(ids.size(), 50u);
  EXPECT_EQ(salts.size(), 50u);
  EXPECT_EQ(hashes.size(), 50u);
}

TEST_F(TokenTest, RoleAndTeamMustAgree) {
  absl::StatusOr<IssuedToken> issued = IssueToken(Role::kSubmitter, "");
  EXPECT_EQ(issued.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(issued.status().message(), "--team")) << issued.status();
  issued = IssueToken(Role::kWorker, "vision");
  EXPECT_EQ(issued.status().code(), absl::StatusCode::kInvalidArgument);
  issued = IssueToken(Role::kAdmin, "vision");
  EXPECT_EQ(issued.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(TokenTest, CreateTokenNeedsAnExistingTeam) {
  absl::StatusOr<IssuedToken> issued = CreateToken(*database_, Role::kSubmitter, "nobody");
  EXPECT_EQ(issued.status().code(), absl::StatusCode::kFailedPrecondition) << issued.status();
  EXPECT_TRUE(database_->ListTokens("")->empty());
}

TEST_F(TokenTest, IssueThenVerifyRoundTripsForEveryRole) {
  const IssuedToken submitter = Create(Role::kSubmitter, "vision");
  const IssuedToken worker = Create(Role::kWorker, "");
  const IssuedToken admin = Create(Role::kAdmin, "");

  absl::StatusOr<Principal> principal = VerifyToken(*database_, submitter.token);
  ASSERT_TRUE(principal.ok()) << principal.status();
  EXPECT_EQ(principal->role, Role::kSubmitter);
  EXPECT_EQ(principal->team, "vision");
  EXPECT_EQ(principal->token_id, submitter.row.token_id);

  principal = VerifyToken(*database_, worker.token);
  ASSERT_TRUE(principal.ok()) << principal.status();
  EXPECT_EQ(principal->role, Role::kWorker);
  EXPECT_EQ(principal->team, "");

  principal = VerifyToken(*database_, admin.token);
  ASSERT_TRUE(principal.ok()) << principal.status();
  EXPECT_EQ(principal->role, Role::kAdmin);

  // A second Database object on the same file (another server process) accepts it too.
  absl::StatusOr<std::unique_ptr<db::Database>> reopened = db::OpenSqliteDatabase(path_);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_TRUE(VerifyToken(**reopened, submitter.token).ok());
}

TEST_F(TokenTest, StoredRowNeverContainsTheSecret) {
  const IssuedToken issued = Create(Role::kSubmitter, "vision");
  const std::string secret = SecretOf(issued.token);
  absl::StatusOr<std::optional<db::TokenRow>> stored = database_->GetToken(issued.row.token_id);
  ASSERT_TRUE(stored.ok() && stored->has_value());
  for (const std::string& column :
       {(*stored)->token_id, (*stored)->team, (*stored)->role, (*stored)->salt, (*stored)->hash}) {
    EXPECT_FALSE(absl::StrContains(column, secret)) << column;
    EXPECT_FALSE(absl::StrContains(column, issued.token)) << column;
  }
  // Nor does the database file (main file and write-ahead log) anywhere.
  database_.reset();
  for (const char* suffix : {"", "-wal"}) {
    FILE* file = fopen((path_ + suffix).c_str(), "rb");
    if (file == nullptr) continue;
    std::string bytes;
    char buffer[4096];
    size_t read = 0;
    while ((read = fread(buffer, 1, sizeof(buffer), file)) > 0) bytes.append(buffer, read);
    fclose(file);
    EXPECT_FALSE(absl::StrContains(bytes, secret)) << path_ << suffix;
  }
}

TEST_F(TokenTest, WrongSecretIsUnauthenticated) {
  const IssuedToken issued = Create(Role::kSubmitter, "vision");
  std::string forged = issued.token;
  forged.back() = forged.back() == '0' ? '1' : '0';
  ExpectUnauthenticated(forged, "wrong secret for token " + issued.row.token_id);
  // The secret of another token does not open this one.
  const IssuedToken other = Create(Role::kSubmitter, "vision");
  ExpectUnauthenticated(issued.row.token_id + "_" + SecretOf(other.token), "wrong secret");
}

TEST_F(TokenTest, UnknownIdIsUnauthenticated) {
  absl::StatusOr<IssuedToken> never_stored = IssueToken(Role::kWorker, "");
  ASSERT_TRUE(never_stored.ok());
  ExpectUnauthenticated(never_stored->token, "unknown token " + never_stored->row.token_id);
}

TEST_F(TokenTest, RevokedTokenIsUnauthenticated) {
  const IssuedToken revoked = Create(Role::kSubmitter, "vision");
  const IssuedToken kept = Create(Role::kSubmitter, "vision");
  absl::StatusOr<int64_t> count = RevokeTokens(*database_, revoked.row.token_id);
  ASSERT_TRUE(count.ok()) << count.status();
  EXPECT_EQ(*count, 1);
  ExpectUnauthenticated(revoked.token, "token " + revoked.row.token_id + " was revoked");
  EXPECT_TRUE(VerifyToken(*database_, kept.token).ok());
}

TEST_F(TokenTest, RevokeAcceptsAWholeTokenOrAPrefix) {
  const IssuedToken first = Create(Role::kWorker, "");
  const IssuedToken second = Create(Role::kWorker, "");
  // A whole token (as a user who leaked it would paste it) revokes exactly that token.
  EXPECT_EQ(*RevokeTokens(*database_, "  " + first.token + "\n"), 1);
  EXPECT_FALSE(VerifyToken(*database_, first.token).ok());
  EXPECT_TRUE(VerifyToken(*database_, second.token).ok());
  // A prefix of the id revokes what it matches; too short a prefix is refused.
  EXPECT_EQ(*RevokeTokens(*database_, second.row.token_id.substr(0, 14)), 1);
  EXPECT_FALSE(VerifyToken(*database_, second.token).ok());
  EXPECT_EQ(RevokeTokens(*database_, "gtco_w_").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RevokeTokens(*database_, "").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(TokenTest, MalformedTextIsUnauthenticatedWithoutEchoingIt) {
  const IssuedToken issued = Create(Role::kSubmitter, "vision");
  const std::string& token = issued.token;
  std::string upper = token;
  upper[kTokenIdLength + 1] = upper[kTokenIdLength + 1] == 'a' ? 'A' : 'B';
  std::string bad_letter = token;
  bad_letter[5] = 'x';
  std::string bad_separator = token;
  bad_separator[kTokenIdLength] = '-';
  std::string not_hex = token;
  not_hex.back() = 'z';
  for (const std::string& text : {std::string(), std::string("Bearer ") + token, token + "0",
                                  token.substr(1), "xxxx" + token.substr(4), upper, bad_letter,
                                  bad_separator, not_hex, std::string(kTokenLength, '_')}) {
    ExpectUnauthenticated(text, "malformed token");
    const absl::StatusOr<Principal> principal = VerifyToken(*database_, text);
    EXPECT_FALSE(absl::StrContains(principal.status().message(), SecretOf(token)))
        << principal.status();
  }
}

TEST(BearerTokenTest, ParsesBearerScheme) {
  EXPECT_EQ(*BearerToken("Bearer gtco_s_abc"), "gtco_s_abc");
  EXPECT_EQ(*BearerToken("bearer gtco_s_abc"), "gtco_s_abc");
  EXPECT_EQ(*BearerToken("  BEARER \t gtco_s_abc  "), "gtco_s_abc");
}

TEST(BearerTokenTest, RejectsMissingOrOtherCredentialsWithoutEchoingThem) {
  for (const char* value : {"", "   ", "Bearer", "Bearer   ", "Basic dXNlcjpwYXNz",
                            "gtco_s_0123456789ab_secretsecret", "Bearergtco_s_abc"}) {
    absl::StatusOr<std::string> token = BearerToken(value);
    ASSERT_FALSE(token.ok()) << value;
    EXPECT_EQ(token.status().code(), absl::StatusCode::kUnauthenticated) << value;
    EXPECT_TRUE(absl::StrContains(token.status().message(), "authorization: Bearer <token>"))
        << token.status();
    EXPECT_FALSE(absl::StrContains(token.status().message(), "secret")) << token.status();
    EXPECT_FALSE(absl::StrContains(token.status().message(), "dXNlcjpwYXNz")) << token.status();
  }
}

}  // namespace
}  // namespace gtco::auth
