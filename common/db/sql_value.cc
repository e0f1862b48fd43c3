// Conversions between the kinds of SQL values.
#include "common/db/sql_value.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/util/status.h"

namespace gtco::db {
namespace {

std::string DoubleText(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  char text[32];
  std::snprintf(text, sizeof(text), "%.17g", value);
  return text;
}

int64_t TruncateToInt64(double value) {
  if (std::isnan(value)) return 0;
  // 2^63 is exact as a double; every double below it in magnitude truncates into range.
  constexpr double kLimit = 9223372036854775808.0;
  if (value >= kLimit) return std::numeric_limits<int64_t>::max();
  if (value <= -kLimit) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(value);
}

}  // namespace

std::string SqlValue::AsText() const {
  switch (kind()) {
    case Kind::kNull:
      return "";
    case Kind::kInt64:
      return absl::StrCat(std::get<int64_t>(storage_));
    case Kind::kDouble:
      return DoubleText(std::get<double>(storage_));
    case Kind::kText:
      return std::get<std::string>(storage_);
  }
  return "";
}

int64_t SqlValue::AsInt64() const {
  switch (kind()) {
    case Kind::kNull:
      return 0;
    case Kind::kInt64:
      return std::get<int64_t>(storage_);
    case Kind::kDouble:
      return TruncateToInt64(std::get<double>(storage_));
    case Kind::kText: {
      int64_t value = 0;
      return absl::SimpleAtoi(std::get<std::string>(storage_), &value) ? value : 0;
    }
  }
  return 0;
}

double SqlValue::AsDouble() const {
  switch (kind()) {
    case Kind::kNull:
      return 0;
    case Kind::kInt64:
      return static_cast<double>(std::get<int64_t>(storage_));
    case Kind::kDouble:
      return std::get<double>(storage_);
    case Kind::kText:
      return std::strtod(std::get<std::string>(storage_).c_str(), nullptr);
  }
  return 0;
}

const SqlValue& SqlRow::cell(int column) const {
  GTCO_CHECK(column >= 0 && column < size(), "result column ", column, " of a row of ", size());
  return cells_[static_cast<size_t>(column)];
}

}  // namespace gtco::db
