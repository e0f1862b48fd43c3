// Command-line parsing.
#include "common/util/flags.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace gtco::util {

absl::StatusOr<ParsedArgs> ParsedArgs::Parse(const std::vector<std::string>& args,
                                             const FlagSpec& spec) {
  ParsedArgs parsed;
  for (size_t index = 0; index < args.size(); ++index) {
    const std::string& arg = args[index];
    if (arg.size() < 3 || arg.compare(0, 2, "--") != 0) {
      parsed.positional_.push_back(arg);
      continue;
    }
    std::string name = arg.substr(2);
    std::optional<std::string> value;
    size_t equals = name.find('=');
    if (equals != std::string::npos) {
      value = name.substr(equals + 1);
      name = name.substr(0, equals);
    }
    if (spec.boolean.count(name)) {
      if (value) return absl::InvalidArgumentError(absl::StrCat("--", name, " takes no value"));
      parsed.values_[name].push_back("true");
    } else if (spec.with_value.count(name)) {
      if (!value) {
        if (index + 1 >= args.size()) {
          return absl::InvalidArgumentError(absl::StrCat("--", name, " needs a value"));
        }
        value = args[++index];
      }
      parsed.values_[name].push_back(*value);
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name));
    }
  }
  return parsed;
}

std::string ParsedArgs::Get(const std::string& flag, const std::string& fallback) const {
  auto found = values_.find(flag);
  return found == values_.end() ? fallback : found->second.back();
}

std::vector<std::string> ParsedArgs::GetAll(const std::string& flag) const {
  auto found = values_.find(flag);
  return found == values_.end() ? std::vector<std::string>{} : found->second;
}

absl::StatusOr<int64_t> ParsedArgs::GetInt(const std::string& flag, int64_t fallback) const {
  if (!Has(flag)) return fallback;
  int64_t value = 0;
  if (!absl::SimpleAtoi(Get(flag), &value)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, " expects an integer, got '", Get(flag), "'"));
  }
  return value;
}

}  // namespace gtco::util
