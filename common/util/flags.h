// Command-line parsing for the three binaries: `--name value`, `--name=value`, boolean
// `--name`, repeated flags and positional arguments, checked against a declared set.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gtco::util {

struct FlagSpec {
  std::set<std::string> with_value;  ///< flags that take a value
  std::set<std::string> boolean;     ///< flags without a value
};

class ParsedArgs {
 public:
  /// INVALID_ARGUMENT naming the flag for an unknown flag or a missing value.
  static absl::StatusOr<ParsedArgs> Parse(const std::vector<std::string>& args,
                                          const FlagSpec& spec);

  bool Has(const std::string& flag) const { return values_.count(flag) > 0; }
  /// Last value given for `flag`, or `fallback`.
  std::string Get(const std::string& flag, const std::string& fallback = "") const;
  std::vector<std::string> GetAll(const std::string& flag) const;
  /// INVALID_ARGUMENT when present but not an integer.
  absl::StatusOr<int64_t> GetInt(const std::string& flag, int64_t fallback) const;
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  std::map<std::string, std::vector<std::string>> values_;
  std::vector<std::string> positional_;
};

}  // namespace gtco::util
