#include "common/json_members.h"

namespace eoc {
namespace {

using nlohmann::json;

[[noreturn]] void Expected(std::string_view where, std::string_view key, std::string_view what) {
  std::string field(where);
  if (!field.empty()) field += ".";
  field.append(key).append(": expected ").append(what);
  throw JsonShapeError(field);
}

}  // namespace

const json* MemberOrNull(const json* object, std::string_view key) {
  if (object == nullptr || !object->is_object()) return nullptr;
  const auto it = object->find(key);
  if (it == object->end() || it->is_null()) return nullptr;
  return &*it;
}

std::string StringOrEmpty(const json* object, std::string_view key) {
  const json* value = MemberOrNull(object, key);
  return value != nullptr && value->is_string() ? value->get<std::string>() : "";
}

std::string OptionalString(const json& object, std::string_view key, std::string_view where) {
  const json* value = MemberOrNull(object, key);
  if (value == nullptr) return "";
  if (!value->is_string()) Expected(where, key, "a string");
  return value->get<std::string>();
}

std::map<std::string, std::string> OptionalStringMap(const json& object, std::string_view key,
                                                     std::string_view where) {
  std::map<std::string, std::string> out;
  const json* value = MemberOrNull(object, key);
  if (value == nullptr) return out;
  if (!value->is_object()) Expected(where, key, "an object");
  for (const auto& [k, v] : value->items()) {
    if (!v.is_string()) Expected(where, std::string(key) + "[\"" + k + "\"]", "a string");
    out.emplace(k, v.get<std::string>());
  }
  return out;
}

}  // namespace eoc
