// Tests of the OpenSSL-backed primitives.
#include "common/auth/crypto.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "absl/strings/escaping.h"

namespace gtco::auth {
namespace {

TEST(CryptoTest, Sha256MatchesKnownVectors) {
  absl::StatusOr<std::string> empty = Sha256("");
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(absl::BytesToHexString(*empty),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(absl::BytesToHexString(*Sha256("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(CryptoTest, RandomBytesHaveTheLengthAndDiffer) {
  std::set<std::string> draws;
  for (int draw = 0; draw < 100; ++draw) {
    absl::StatusOr<std::string> bytes = RandomBytes(16);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    EXPECT_EQ(bytes->size(), 16u);
    draws.insert(*bytes);
  }
  EXPECT_EQ(draws.size(), 100u);
  EXPECT_EQ(RandomBytes(0)->size(), 0u);
}

TEST(CryptoTest, ConstantTimeEquals) {
  EXPECT_TRUE(ConstantTimeEquals("", ""));
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "ab"));
  EXPECT_FALSE(ConstantTimeEquals(std::string("a\0b", 3), std::string("a\0c", 3)));
}

TEST(CryptoTest, IsLowerHex) {
  EXPECT_TRUE(IsLowerHex("0123456789abcdef"));
  EXPECT_FALSE(IsLowerHex(""));
  EXPECT_FALSE(IsLowerHex("abc"));  // odd length
  EXPECT_FALSE(IsLowerHex("ABCD"));
  EXPECT_FALSE(IsLowerHex("0g"));
}

}  // namespace
}  // namespace gtco::auth
