// SQL values as every backend sees them: the parameters bound to $1, $2, ... and the cells of the
// result rows that a statement returns.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace gtco::db {

/// One SQL value: NULL, a 64-bit integer, a double or text. Built implicitly from the C++ types
/// the row structs use, so that `{row.key, row.flops, row.ok}` is a parameter list; a bool is
/// the integer 1 or 0 (the schema's flag columns are INTEGER). Other integer types (size_t,
/// unsigned) must be cast to int64_t first.
class SqlValue {
 public:
  enum class Kind { kNull, kInt64, kDouble, kText };
  using Storage = std::variant<std::monostate, int64_t, double, std::string>;

  SqlValue() = default;  ///< NULL
  // Implicit on purpose: parameter lists are written as braced lists of plain values.
  SqlValue(int64_t value) : storage_(value) {}                             // NOLINT
  SqlValue(int value) : storage_(static_cast<int64_t>(value)) {}           // NOLINT
  SqlValue(bool value) : storage_(static_cast<int64_t>(value ? 1 : 0)) {}  // NOLINT
  SqlValue(double value) : storage_(value) {}                              // NOLINT
  SqlValue(std::string value) : storage_(std::move(value)) {}              // NOLINT
  SqlValue(std::string_view value) : storage_(std::string(value)) {}       // NOLINT
  SqlValue(const char* value) : storage_(std::string(value)) {}            // NOLINT

  Kind kind() const { return static_cast<Kind>(storage_.index()); }
  bool is_null() const { return kind() == Kind::kNull; }
  const Storage& storage() const { return storage_; }

  /// The value as text: "" for NULL, decimal digits for an integer, 17 significant digits for
  /// a double (every bit kept; "NaN", "Infinity" and "-Infinity" by name, as PostgreSQL reads
  /// them). This is the text PostgreSQL is sent for a parameter.
  std::string AsText() const;
  /// The value as an integer: 0 for NULL and for text that is not a whole decimal number; a
  /// double truncated toward zero (saturating at the int64 limits, NaN reads as 0).
  int64_t AsInt64() const;
  /// The value as a double: 0 for NULL; text parsed as C's strtod does ("Infinity", "NaN").
  double AsDouble() const;

  friend bool operator==(const SqlValue& a, const SqlValue& b) { return a.storage_ == b.storage_; }

 private:
  Storage storage_;
};

/// The parameters of a statement, bound to $1, $2, ... in order.
using SqlParams = std::vector<SqlValue>;

/// One result row. Its Column* accessors convert the cell as SqlValue's As* functions do
/// (NULL reads as "" or 0), so the row readers of row_mapping.h work on any backend's rows.
class SqlRow {
 public:
  SqlRow() = default;
  explicit SqlRow(std::vector<SqlValue> cells) : cells_(std::move(cells)) {}

  int size() const { return static_cast<int>(cells_.size()); }
  /// The cell in `column` (0-based); `column` must be below size().
  const SqlValue& cell(int column) const;

  std::string ColumnText(int column) const { return cell(column).AsText(); }
  int64_t ColumnInt64(int column) const { return cell(column).AsInt64(); }
  double ColumnDouble(int column) const { return cell(column).AsDouble(); }
  bool ColumnIsNull(int column) const { return cell(column).is_null(); }

 private:
  std::vector<SqlValue> cells_;
};

/// Every row a statement returned, in order.
using SqlRows = std::vector<SqlRow>;

}  // namespace gtco::db
