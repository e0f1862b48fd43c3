// Internal to common/ir: the text helpers of the anchor params lines ("attention ...", "conv
// ...", "pool ..."), and the 2-D window fields that ConvParams and PoolParams name alike
// (stride_h/w, pad_top/left/bottom/right, dilation_h/w), printed, parsed and summarized once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace gtco::ir::internal {

inline absl::Status LineError(const std::string& what, const std::string& line) {
  return absl::InvalidArgumentError(
      absl::StrCat("malformed workload text: ", what, " in '", line, "'"));
}

inline std::string ShapeText(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ","), "]");
}

/// Parses "a,b" (count 2) or "a,b,c,d" (count 4) into `values`.
inline bool ParseIntList(const std::string& text, size_t count, std::vector<int64_t>* values) {
  std::vector<std::string> parts = absl::StrSplit(text, ',');
  if (parts.size() != count) return false;
  values->clear();
  for (const std::string& part : parts) {
    int64_t value = 0;
    if (!absl::SimpleAtoi(part, &value)) return false;
    values->push_back(value);
  }
  return true;
}

/// Calls field(key, text) for every "key=value" word of a params line after its tag (the first
/// word, which must be `tag`); stops at the first error.
template <typename Field>
absl::Status ForEachField(const std::string& line, const char* tag, Field field) {
  std::vector<std::string> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
  if (words.empty() || words[0] != tag) {
    return LineError(absl::StrCat("expected '", tag, "'"), line);
  }
  for (size_t word_idx = 1; word_idx < words.size(); ++word_idx) {
    std::vector<std::string> parts = absl::StrSplit(words[word_idx], absl::MaxSplits('=', 1));
    if (parts.size() != 2) return LineError("expected key=value", line);
    absl::Status status = field(parts[0], parts[1]);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

/// " stride=1,1 pads=1,1,1,1 dilation=1,1" (pads top, left, bottom, right).
template <typename Params>
std::string WindowText(const Params& p) {
  return absl::StrCat(" stride=", p.stride_h, ",", p.stride_w, " pads=", p.pad_top, ",",
                      p.pad_left, ",", p.pad_bottom, ",", p.pad_right, " dilation=", p.dilation_h,
                      ",", p.dilation_w);
}

/// Applies `key`=`text` to p's window fields. Returns false when `key` is not a window field;
/// `*error` is set when it is one with a malformed value.
template <typename Params>
bool ParseWindowField(const std::string& key, const std::string& text, const std::string& line,
                      Params& p, absl::Status* error) {
  std::vector<int64_t> list;
  if (key == "stride" || key == "dilation") {
    if (!ParseIntList(text, 2, &list)) {
      *error = LineError("expected two integers", line);
      return true;
    }
    (key == "stride" ? p.stride_h : p.dilation_h) = list[0];
    (key == "stride" ? p.stride_w : p.dilation_w) = list[1];
    return true;
  }
  if (key == "pads") {
    if (!ParseIntList(text, 4, &list)) {
      *error = LineError("expected four integers", line);
      return true;
    }
    p.pad_top = list[0];
    p.pad_left = list[1];
    p.pad_bottom = list[2];
    p.pad_right = list[3];
    return true;
  }
  return false;
}

/// " s2 p1" (" s2,1", " p1,0,1,0", " d2,2" when they differ per side or dilate).
template <typename Params>
std::string WindowSummary(const Params& p) {
  std::string text;
  if (p.stride_h == p.stride_w) {
    absl::StrAppend(&text, " s", p.stride_h);
  } else {
    absl::StrAppend(&text, " s", p.stride_h, ",", p.stride_w);
  }
  if (p.pad_top == p.pad_left && p.pad_top == p.pad_bottom && p.pad_top == p.pad_right) {
    absl::StrAppend(&text, " p", p.pad_top);
  } else {
    absl::StrAppend(&text, " p", p.pad_top, ",", p.pad_left, ",", p.pad_bottom, ",", p.pad_right);
  }
  if (p.dilation_h != 1 || p.dilation_w != 1) {
    absl::StrAppend(&text, " d", p.dilation_h, ",", p.dilation_w);
  }
  return text;
}

}  // namespace gtco::ir::internal
