#include "api/json_reader.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "common/text.h"

namespace eoc::api::internal {

using nlohmann::json;

std::string KeyPath(const std::string& base, std::string_view key) {
  constexpr std::size_t kMaxShown = 100;
  if (key.size() <= kMaxShown) return base + "[" + std::string(key) + "]";
  return base + "[" + std::string(key.substr(0, kMaxShown)) + "...]";
}

std::string FormatNumber(double value) {
  if (std::trunc(value) == value && std::abs(value) < 1e15) {
    return std::to_string(static_cast<std::int64_t>(value));
  }
  return json(value).dump();
}

std::optional<std::int64_t> ReadInt(const json& value, const IntRange& range,
                                    const std::string& path, std::vector<FieldError>& errors) {
  // Compared as doubles only when the value is a float: an integer keeps every digit.
  std::optional<std::int64_t> got;
  bool too_small = false;
  bool too_large = false;
  if (value.is_number_unsigned()) {
    const auto u = value.get<std::uint64_t>();
    if (range.max < 0 || u > static_cast<std::uint64_t>(range.max)) {
      too_large = true;
    } else {
      got = static_cast<std::int64_t>(u);
    }
  } else if (value.is_number_integer()) {
    got = value.get<std::int64_t>();
  } else if (value.is_number_float() && std::trunc(value.get<double>()) == value.get<double>()) {
    const auto d = value.get<double>();
    too_small = d < static_cast<double>(range.min);
    too_large = d > static_cast<double>(range.max);
    if (!too_small && !too_large) got = static_cast<std::int64_t>(d);
  } else {
    errors.push_back({path, "must be an integer"});
    return std::nullopt;
  }
  if (got) {
    too_small = *got < range.min;
    too_large = *got > range.max;
  }
  if (!too_small && !too_large) return got;
  std::string message;
  if (range.between) {
    message = "must be between " + std::to_string(range.min) + " and " + std::to_string(range.max);
  } else if (too_small) {
    message = "must be at least " + std::to_string(range.min);
  } else {
    message = "must be at most " + std::to_string(range.max);
  }
  errors.push_back({path, message + ", got " + DescribeJson(value)});
  return std::nullopt;
}

std::optional<double> ReadNumber(const json& value, const NumberRange& range,
                                 const std::string& path, std::vector<FieldError>& errors) {
  if (!value.is_number()) {
    errors.push_back({path, "must be a number"});
    return std::nullopt;
  }
  const auto d = value.get<double>();
  std::string message;
  if (range.exclusive_min && !(d > range.min)) {
    message = "must be greater than " + FormatNumber(range.min);
  } else if (!range.exclusive_min && !(d >= range.min)) {
    message = "must be at least " + FormatNumber(range.min);
  } else if (!(d <= range.max)) {
    message = "must be at most " + FormatNumber(range.max);
  } else {
    return d;
  }
  errors.push_back({path, message + ", got " + DescribeJson(value)});
  return std::nullopt;
}

std::optional<bool> ReadBool(const json& value, const std::string& path,
                             std::vector<FieldError>& errors) {
  if (value.is_boolean()) return value.get<bool>();
  errors.push_back({path, "must be a boolean"});
  return std::nullopt;
}

std::optional<std::string> ReadString(const json& value, const StringRule& rule,
                                      const std::string& path, std::vector<FieldError>& errors) {
  if (!value.is_string()) {
    errors.push_back({path, "must be a string"});
    return std::nullopt;
  }
  const auto& text = value.get_ref<const std::string&>();
  if (text.empty() && !rule.allow_empty) {
    errors.push_back({path, "must not be empty"});
  } else if (text.size() > rule.max_length) {
    errors.push_back({path, "must be at most " + std::to_string(rule.max_length) +
                                " characters, got " + std::to_string(text.size())});
  } else if (rule.valid != nullptr && !rule.valid(text)) {
    errors.push_back({path, std::string(rule.expected) + ", got " + Quoted(text)});
  } else {
    return text;
  }
  return std::nullopt;
}

const json* ReadArray(const json& value, std::size_t max_items, const std::string& path,
                      std::vector<FieldError>& errors) {
  if (!value.is_array()) {
    errors.push_back({path, "must be an array"});
    return nullptr;
  }
  if (value.size() > max_items) {
    errors.push_back({path, "must have at most " + std::to_string(max_items) + " entries, got " +
                                std::to_string(value.size())});
    return nullptr;
  }
  return &value;
}

ObjectReader::ObjectReader(const json* object, std::string path, std::vector<FieldError>& errors)
    : path_(std::move(path)), errors_(&errors) {
  if (object == nullptr || object->is_null()) return;
  if (object->is_object()) {
    object_ = object;
  } else {
    readable_ = false;
    errors.push_back({path_, "must be an object"});
  }
}

void ObjectReader::Error(std::string_view key, std::string message) const {
  errors_->push_back({Path(key), std::move(message)});
}

bool ObjectReader::Require(std::string_view key) const {
  if (Get(key) != nullptr) return true;
  if (readable_) Error(key, "required");
  return false;
}

ObjectReader ObjectReader::Object(std::string_view key) const {
  return {Get(key), Path(key), *errors_};
}

const json* ObjectReader::Array(std::string_view key, std::size_t max_items) const {
  const json* value = Get(key);
  return value == nullptr ? nullptr : ReadArray(*value, max_items, Path(key), *errors_);
}

bool ObjectReader::Int(std::string_view key, std::int32_t& out, const IntRange& range) const {
  std::int64_t wide = 0;
  IntRange narrow = range;
  narrow.min = std::max<std::int64_t>(range.min, std::numeric_limits<std::int32_t>::min());
  narrow.max = std::min<std::int64_t>(range.max, std::numeric_limits<std::int32_t>::max());
  if (!Int(key, wide, narrow)) return false;
  out = static_cast<std::int32_t>(wide);
  return true;
}

bool ObjectReader::Int(std::string_view key, std::int64_t& out, const IntRange& range) const {
  const json* value = Get(key);
  if (value == nullptr) return false;
  const std::optional<std::int64_t> got = ReadInt(*value, range, Path(key), *errors_);
  if (got) out = *got;
  return got.has_value();
}

bool ObjectReader::Int(std::string_view key, std::optional<std::int32_t>& out,
                       const IntRange& range) const {
  std::int32_t value = 0;
  if (!Int(key, value, range)) return false;
  out = value;
  return true;
}

bool ObjectReader::Number(std::string_view key, double& out, const NumberRange& range) const {
  const json* value = Get(key);
  if (value == nullptr) return false;
  const std::optional<double> got = ReadNumber(*value, range, Path(key), *errors_);
  if (got) out = *got;
  return got.has_value();
}

bool ObjectReader::Bool(std::string_view key, bool& out) const {
  const json* value = Get(key);
  if (value == nullptr) return false;
  const std::optional<bool> got = ReadBool(*value, Path(key), *errors_);
  if (got) out = *got;
  return got.has_value();
}

bool ObjectReader::String(std::string_view key, std::string& out, const StringRule& rule) const {
  const json* value = Get(key);
  if (value == nullptr) return false;
  std::optional<std::string> got = ReadString(*value, rule, Path(key), *errors_);
  if (got) out = std::move(*got);
  return got.has_value();
}

}  // namespace eoc::api::internal
