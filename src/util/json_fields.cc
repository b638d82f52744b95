#include "util/json_fields.h"

#include <fmt/format.h>

#include <cmath>

#include "util/utf8.h"

namespace moetune {

using nlohmann::json;

namespace {

// The value as a short piece of JSON for a message (a field may hold megabytes).
std::string Shown(const json& v) {
  constexpr std::size_t kMaxShown = 60;
  std::string text = DumpJson(v, -1);
  if (text.size() > kMaxShown) text = ToValidUtf8(text.substr(0, kMaxShown)) + "...";
  return text;
}

}  // namespace

JsonFields::JsonFields(const json& object, std::string where)
    : object_(object), where_(std::move(where)) {
  if (!object_.is_object()) {
    error_ = Error(ErrorKind::kFormat,
                   fmt::format("{} is {}, not a JSON object", where_.empty() ? "the file" : where_,
                               Shown(object_)));
  }
}

std::string JsonFields::Path(std::string_view key) const {
  return where_.empty() ? std::string(key) : fmt::format("{}.{}", where_, key);
}

const json* JsonFields::Find(std::string_view key) const {
  if (!object_.is_object()) return nullptr;
  auto it = object_.find(key);
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

void JsonFields::Fail(std::string_view key, const json& value, const std::string& expected) {
  if (error_) return;
  error_ = Error(ErrorKind::kFormat,
                 fmt::format("field '{}' is {}; expected {}", Path(key), Shown(value), expected));
}

void JsonFields::FailMissing(std::string_view key, const std::string& expected) {
  if (error_) return;
  error_ = Error(ErrorKind::kFormat,
                 fmt::format("field '{}' is missing; expected {}", Path(key), expected));
}

std::optional<int64_t> JsonFields::ReadInt(std::string_view key, const json& v, int64_t min,
                                           int64_t max) {
  const std::string expected = fmt::format("a whole number from {} to {}", min, max);
  std::optional<int64_t> out;
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u <= static_cast<uint64_t>(INT64_MAX)) out = static_cast<int64_t>(u);
  } else if (v.is_number_integer()) {
    out = v.get<int64_t>();
  } else if (v.is_number_float()) {
    // Compared in double before converting: converting an out-of-range double
    // to an integer is undefined behaviour.
    // 2^63 itself is the first double past INT64_MAX (which rounds up to it).
    constexpr double kTwo63 = 9223372036854775808.0;
    const double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && d >= -kTwo63 && d < kTwo63) {
      out = static_cast<int64_t>(d);
    }
  }
  if (!out || *out < min || *out > max) {
    Fail(key, v, expected);
    return std::nullopt;
  }
  return out;
}

std::optional<double> JsonFields::ReadNumber(std::string_view key, const json& v, double min,
                                             double max) {
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < min ||
      v.get<double>() > max) {
    Fail(key, v, fmt::format("a number from {} to {}", min, max));
    return std::nullopt;
  }
  return v.get<double>();
}

int64_t JsonFields::Int(std::string_view key, int64_t min, int64_t max) {
  const json* v = Find(key);
  if (v == nullptr) {
    FailMissing(key, fmt::format("a whole number from {} to {}", min, max));
    return min;
  }
  return ReadInt(key, *v, min, max).value_or(min);
}

int64_t JsonFields::Int(std::string_view key, int64_t min, int64_t max, int64_t fallback) {
  return OptionalInt(key, min, max).value_or(fallback);
}

std::optional<int64_t> JsonFields::OptionalInt(std::string_view key, int64_t min, int64_t max) {
  const json* v = Find(key);
  if (v == nullptr) return std::nullopt;
  return ReadInt(key, *v, min, max);
}

double JsonFields::Number(std::string_view key, double min, double max) {
  const json* v = Find(key);
  if (v == nullptr) {
    FailMissing(key, fmt::format("a number from {} to {}", min, max));
    return min;
  }
  return ReadNumber(key, *v, min, max).value_or(min);
}

double JsonFields::Number(std::string_view key, double min, double max, double fallback) {
  return OptionalNumber(key, min, max).value_or(fallback);
}

std::optional<double> JsonFields::OptionalNumber(std::string_view key, double min, double max) {
  const json* v = Find(key);
  if (v == nullptr) return std::nullopt;
  return ReadNumber(key, *v, min, max);
}

bool JsonFields::Bool(std::string_view key, bool fallback) {
  const json* v = Find(key);
  if (v == nullptr) return fallback;
  if (!v->is_boolean()) {
    Fail(key, *v, "true or false");
    return fallback;
  }
  return v->get<bool>();
}

std::string JsonFields::String(std::string_view key) {
  const json* v = Find(key);
  if (v == nullptr) {
    FailMissing(key, "a string");
    return "";
  }
  if (!v->is_string()) {
    Fail(key, *v, "a string");
    return "";
  }
  return v->get<std::string>();
}

std::string JsonFields::String(std::string_view key, std::string fallback) {
  const json* v = Find(key);
  if (v == nullptr) return fallback;
  if (!v->is_string()) {
    Fail(key, *v, "a string");
    return fallback;
  }
  return v->get<std::string>();
}

std::vector<std::string> JsonFields::Strings(std::string_view key) {
  std::vector<std::string> out;
  const json* v = OptionalArray(key);
  if (v == nullptr) return out;
  for (const auto& item : *v) {
    if (!item.is_string()) {
      Fail(key, *v, "an array of strings");
      return {};
    }
    out.push_back(item.get<std::string>());
  }
  return out;
}

std::vector<double> JsonFields::Numbers(std::string_view key, double min, double max) {
  std::vector<double> out;
  const json* v = OptionalArray(key);
  if (v == nullptr) return out;
  for (const auto& item : *v) {
    if (!item.is_number() || !std::isfinite(item.get<double>()) || item.get<double>() < min ||
        item.get<double>() > max) {
      Fail(key, *v, fmt::format("an array of numbers from {} to {}", min, max));
      return {};
    }
    out.push_back(item.get<double>());
  }
  return out;
}

const json* JsonFields::Container(std::string_view key, bool required, bool object) {
  const char* expected = object ? "an object" : "an array";
  const json* v = Find(key);
  if (v == nullptr) {
    if (required) FailMissing(key, expected);
    return nullptr;
  }
  if (object ? !v->is_object() : !v->is_array()) {
    Fail(key, *v, expected);
    return nullptr;
  }
  return v;
}

const json* JsonFields::Object(std::string_view key) { return Container(key, true, true); }
const json* JsonFields::Array(std::string_view key) { return Container(key, true, false); }
const json* JsonFields::OptionalObject(std::string_view key) { return Container(key, false, true); }
const json* JsonFields::OptionalArray(std::string_view key) { return Container(key, false, false); }

void JsonFields::Invalid(std::string_view key, const std::string& expected) {
  if (const json* v = Find(key)) {
    Fail(key, *v, expected);
  } else {
    FailMissing(key, expected);
  }
}

void JsonFields::Merge(const JsonFields& nested) {
  if (!error_ && nested.error_) error_ = nested.error_;
}

Status JsonFields::status() const {
  if (error_) return *error_;
  return OkStatus();
}

}  // namespace moetune
