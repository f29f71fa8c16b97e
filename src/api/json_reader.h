// Typed reads of JSON fields that turn every wrong type, bad value or out-of-range number into a
// FieldError naming the field: the one way the InferencePool parsers look into a document.
// Internal to src/api.
//
//   std::vector<eoc::api::FieldError> errors;
//   eoc::api::internal::ObjectReader spec(eoc::MemberOrNull(object, "spec"), "spec",
//                                         errors);
//   if (spec.Require("targetPort")) spec.Int("targetPort", port, {.min = 1, .max = 65535});
//   eoc::api::internal::ObjectReader metrics = spec.Object("metrics");   // absent: all absent
//   metrics.String("path", path, {.max_length = 1024});
//   // errors: "spec.targetPort: must be an integer", ...
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/inference_pool.h"
#include "common/bounded_json.h"
#include "common/enum_name.h"
#include "common/json_members.h"

namespace eoc::api::internal {

// Members are looked up with MemberOrNull (common/json_members.h): null reads as absent, as the
// API server treats it.
using ::eoc::MemberOrNull;

// `base[key]` for a member of a map (matchLabels, carbon.static), the key cut short: it may be
// anything, megabytes long.
std::string KeyPath(const std::string& base, std::string_view key);

// A number for a message: integral values without a fraction ("65535", "0.5").
std::string FormatNumber(double value);

struct IntRange {
  std::int64_t min = std::numeric_limits<std::int32_t>::min();
  std::int64_t max = std::numeric_limits<std::int32_t>::max();
  // Say "must be between min and max" rather than only the bound that was crossed.
  bool between = false;
};

struct NumberRange {
  double min = 0;
  bool exclusive_min = false;  // "must be greater than min"
  double max = 1e9;
};

struct StringRule {
  std::size_t max_length = 253;
  bool allow_empty = false;
  // When set, the value must pass it; `expected` says what it wants ("must be a label key ...").
  bool (*valid)(std::string_view) = nullptr;
  std::string_view expected;
};

using eoc::EnumName;
using eoc::EnumNamed;
using eoc::EnumToString;

// Each of these reads one value at `path`; on a problem it appends an error and returns nullopt.
// JSON numbers with an integral value (5.0) are integers, as the API server takes them.
std::optional<std::int64_t> ReadInt(const nlohmann::json& value, const IntRange& range,
                                    const std::string& path, std::vector<FieldError>& errors);
std::optional<double> ReadNumber(const nlohmann::json& value, const NumberRange& range,
                                 const std::string& path, std::vector<FieldError>& errors);
std::optional<bool> ReadBool(const nlohmann::json& value, const std::string& path,
                             std::vector<FieldError>& errors);
std::optional<std::string> ReadString(const nlohmann::json& value, const StringRule& rule,
                                      const std::string& path, std::vector<FieldError>& errors);
// The array at `path`, or nullptr after an error when it is not one or has more than `max_items`
// entries (none of which is then read).
const nlohmann::json* ReadArray(const nlohmann::json& value, std::size_t max_items,
                                const std::string& path, std::vector<FieldError>& errors);

template <class E, std::size_t N>
std::optional<E> ReadEnum(const nlohmann::json& value, const std::array<EnumName<E>, N>& names,
                          const std::string& path, std::vector<FieldError>& errors) {
  if (value.is_string()) {
    if (auto e = EnumNamed(value.get_ref<const std::string&>(), names)) return e;
  }
  std::string message = "must be one of ";
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) message += ", ";
    message += names[i].name;
  }
  errors.push_back({path, message + ", got " + DescribeJson(value)});
  return std::nullopt;
}

// The fields of one JSON object at `path`. An absent object reads as one with no fields; one
// that is not an object is reported once, and then reads as absent without further errors.
class ObjectReader {
 public:
  ObjectReader(const nlohmann::json* object, std::string path, std::vector<FieldError>& errors);

  const std::string& path() const { return path_; }
  std::string Path(std::string_view key) const { return path_ + "." + std::string(key); }
  // Present and not null.
  const nlohmann::json* Get(std::string_view key) const { return MemberOrNull(object_, key); }
  void Error(std::string_view key, std::string message) const;
  // True when the field is present; otherwise reports it as required (unless this object was of
  // the wrong type, which is reported already).
  bool Require(std::string_view key) const;

  ObjectReader Object(std::string_view key) const;
  const nlohmann::json* Array(std::string_view key, std::size_t max_items) const;

  // Each sets `out` and returns true when the field is present and good; an absent field leaves
  // `out` alone and returns false without an error.
  bool Int(std::string_view key, std::int32_t& out, const IntRange& range) const;
  bool Int(std::string_view key, std::int64_t& out, const IntRange& range) const;
  bool Int(std::string_view key, std::optional<std::int32_t>& out, const IntRange& range) const;
  bool Number(std::string_view key, double& out, const NumberRange& range) const;
  bool Bool(std::string_view key, bool& out) const;
  bool String(std::string_view key, std::string& out, const StringRule& rule) const;
  template <class E, std::size_t N>
  bool Enum(std::string_view key, E& out, const std::array<EnumName<E>, N>& names) const {
    const nlohmann::json* value = Get(key);
    if (value == nullptr) return false;
    const std::optional<E> e = ReadEnum(*value, names, Path(key), *errors_);
    if (e) out = *e;
    return e.has_value();
  }

 private:
  const nlohmann::json* object_ = nullptr;  // nullptr: absent, or not an object
  bool readable_ = true;                    // false: present but not an object
  std::string path_;
  std::vector<FieldError>* errors_;
};

}  // namespace eoc::api::internal
