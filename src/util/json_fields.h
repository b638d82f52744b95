#pragma once
/// Reading typed fields from JSON that a person, another program or a damaged
/// disk may have written (a machine profile, a calibration record). nlohmann's
/// `at()`/`value()`/`get<T>()` throw on a field of the wrong type, and a
/// floating-point value converted to an integer out of range is undefined
/// behaviour; here every field is checked for its type and range, and the first
/// problem is kept as an error naming the field's path ("gpus[0].free_bytes"),
/// the value found and the range expected. Nothing throws.
///
///   JsonFields f(j, "gpus[0]");
///   g.free_bytes = f.Int("free_bytes", 0, kMax);      // required
///   g.name = f.String("name", "");                    // optional, with a default
///   if (!f.ok()) return f.error();

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace moetune {

class JsonFields {
 public:
  /// `where` names the object in messages ("" for the top level). A value that
  /// is not an object is itself the first error. `object` must outlive the reader.
  JsonFields(const nlohmann::json& object, std::string where);

  /// A required integer in [min, max]. An integral floating-point value (5.0)
  /// counts as an integer.
  int64_t Int(std::string_view key, int64_t min, int64_t max);
  /// An optional integer: `fallback` when the key is absent or null.
  int64_t Int(std::string_view key, int64_t min, int64_t max, int64_t fallback);
  /// An optional integer that stays unset when absent or null.
  std::optional<int64_t> OptionalInt(std::string_view key, int64_t min, int64_t max);
  /// A required finite number in [min, max].
  double Number(std::string_view key, double min, double max);
  /// An optional finite number in [min, max].
  double Number(std::string_view key, double min, double max, double fallback);
  std::optional<double> OptionalNumber(std::string_view key, double min, double max);
  bool Bool(std::string_view key, bool fallback);
  /// A required string.
  std::string String(std::string_view key);
  std::string String(std::string_view key, std::string fallback);
  /// An optional array of strings (empty when absent).
  std::vector<std::string> Strings(std::string_view key);
  /// An optional array of numbers in [min, max] (empty when absent).
  std::vector<double> Numbers(std::string_view key, double min, double max);
  /// A required object or array; nullptr (and an error) when absent or of
  /// another type.
  const nlohmann::json* Object(std::string_view key);
  const nlohmann::json* Array(std::string_view key);
  /// An optional object or array: nullptr when absent or null (an error only
  /// when present with another type).
  const nlohmann::json* OptionalObject(std::string_view key);
  const nlohmann::json* OptionalArray(std::string_view key);

  /// True when the field is present and not null.
  bool Has(std::string_view key) const { return Find(key) != nullptr; }

  /// The path of a field of this object, for nested readers: Path("gpus") + "[0]".
  std::string Path(std::string_view key) const;

  /// Records that the field `key` holds a value this reader's caller refuses
  /// (a name outside a list): "field 'k' is V; expected `expected`".
  void Invalid(std::string_view key, const std::string& expected);

  /// Takes a nested reader's error when this one has none yet.
  void Merge(const JsonFields& nested);

  bool ok() const { return !error_.has_value(); }
  /// The first problem (only when !ok()).
  const Error& error() const { return *error_; }
  Status status() const;

 private:
  const nlohmann::json* Find(std::string_view key) const;
  const nlohmann::json* Container(std::string_view key, bool required, bool object);
  void Fail(std::string_view key, const nlohmann::json& value, const std::string& expected);
  void FailMissing(std::string_view key, const std::string& expected);
  std::optional<int64_t> ReadInt(std::string_view key, const nlohmann::json& v, int64_t min,
                                 int64_t max);
  std::optional<double> ReadNumber(std::string_view key, const nlohmann::json& v, double min,
                                   double max);

  const nlohmann::json& object_;
  std::string where_;
  std::optional<Error> error_;
};

}  // namespace moetune
