// Schedule trace: the replayable record of one schedule (a versioned sketch name plus its
// named integer decisions). Stored in the database; must replay identically for years.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace gtco::schedule {

/// One schedule: `sketch` names the rule and its version ("mm_tiled/v1"); `decisions` are the
/// knob values in the sketch's knob order. Text form: "mm_tiled/v1;mc=64;nc=256;...".
struct Trace {
  std::string sketch;
  std::vector<std::pair<std::string, int64_t>> decisions;

  /// Canonical text: the sketch name then ";name=value" per decision, in order. Stable.
  std::string ToString() const;
  /// Parses ToString() output. INVALID_ARGUMENT on malformed text (empty sketch name, a
  /// decision without '=', a non-integer value, a bad or duplicate name).
  static absl::StatusOr<Trace> Parse(const std::string& text);
  /// The value of decision `name`, if present.
  std::optional<int64_t> Get(const std::string& name) const;

  bool operator==(const Trace& other) const {
    return sketch == other.sketch && decisions == other.decisions;
  }
  bool operator!=(const Trace& other) const { return !(*this == other); }
};

}  // namespace gtco::schedule
