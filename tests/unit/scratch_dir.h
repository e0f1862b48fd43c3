// A directory of this test process's own under gtest's TempDir(), removed when the process exits:
// files that tests write under fixed names land there, so two test processes (ctest -j, two
// checkouts' CI on one host) never read or overwrite each other's.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace gtco::testing {

/// The process's scratch directory (created on first use); aborts the test process if it cannot
/// be made.
inline const std::string& ScratchDir() {
  struct Owned {
    std::string path;
    Owned() {
      std::string pattern = ::testing::TempDir() + "gtco_test_XXXXXX";
      if (mkdtemp(pattern.data()) == nullptr) {
        ADD_FAILURE() << "mkdtemp(" << pattern << ") failed";
        std::abort();
      }
      path = pattern;
    }
    ~Owned() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  };
  static const Owned owned;
  return owned.path;
}

/// `name` inside ScratchDir().
inline std::string ScratchPath(const std::string& name) {
  return (std::filesystem::path(ScratchDir()) / name).string();
}

}  // namespace gtco::testing
