// Tests of role names.
#include "common/auth/principal.h"

#include <gtest/gtest.h>

namespace gtco::auth {
namespace {

TEST(PrincipalTest, RoleNamesRoundTrip) {
  for (const Role role : {Role::kSubmitter, Role::kWorker, Role::kAdmin}) {
    absl::StatusOr<Role> parsed = ParseRole(RoleName(role));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, role);
  }
  EXPECT_EQ(RoleName(Role::kSubmitter), "submitter");
  EXPECT_EQ(RoleName(Role::kWorker), "worker");
  EXPECT_EQ(RoleName(Role::kAdmin), "admin");
}

TEST(PrincipalTest, UnknownRoleNamesTheAcceptedOnes) {
  for (const char* name : {"", "Admin", "root", "submitters"}) {
    absl::StatusOr<Role> parsed = ParseRole(name);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << name;
    EXPECT_NE(parsed.status().message().find("submitter, worker or admin"), std::string::npos)
        << parsed.status();
  }
}

}  // namespace
}  // namespace gtco::auth
