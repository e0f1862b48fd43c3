// Schedule trace text form: printing and parsing.
#include "common/schedule/trace.h"

#include <cctype>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace gtco::schedule {
namespace {

bool IsDecisionName(const std::string& name) {
  if (name.empty() || !std::islower(static_cast<unsigned char>(name[0]))) return false;
  for (char ch : name) {
    const auto byte = static_cast<unsigned char>(ch);
    if (!std::islower(byte) && !std::isdigit(byte) && ch != '_') return false;
  }
  return true;
}

bool IsSketchName(const std::string& name) {
  if (name.empty()) return false;
  for (char ch : name) {
    const auto byte = static_cast<unsigned char>(ch);
    if (!std::isalnum(byte) && ch != '_' && ch != '/' && ch != '.' && ch != '-') return false;
  }
  return true;
}

}  // namespace

std::string Trace::ToString() const {
  std::string text = sketch;
  for (const auto& [name, value] : decisions) absl::StrAppend(&text, ";", name, "=", value);
  return text;
}

absl::StatusOr<Trace> Trace::Parse(const std::string& text) {
  std::vector<std::string> parts = absl::StrSplit(text, ';');
  Trace trace;
  trace.sketch = parts[0];
  if (!IsSketchName(trace.sketch)) {
    return absl::InvalidArgumentError(
        absl::StrCat("schedule trace '", text, "': bad sketch name '", trace.sketch, "'"));
  }
  std::set<std::string> seen;
  for (size_t part_idx = 1; part_idx < parts.size(); ++part_idx) {
    const std::string& part = parts[part_idx];
    const size_t eq = part.find('=');
    if (eq == std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("schedule trace '", text, "': decision '", part, "' has no '='"));
    }
    std::string name = part.substr(0, eq);
    int64_t value = 0;
    if (!IsDecisionName(name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("schedule trace '", text, "': bad decision name '", name, "'"));
    }
    if (!absl::SimpleAtoi(part.substr(eq + 1), &value)) {
      return absl::InvalidArgumentError(absl::StrCat("schedule trace '", text, "': decision '",
                                                     name, "' has a non-integer value"));
    }
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("schedule trace '", text, "': decision '", name, "' appears twice"));
    }
    trace.decisions.emplace_back(std::move(name), value);
  }
  return trace;
}

std::optional<int64_t> Trace::Get(const std::string& name) const {
  for (const auto& [decision_name, value] : decisions) {
    if (decision_name == name) return value;
  }
  return std::nullopt;
}

}  // namespace gtco::schedule
