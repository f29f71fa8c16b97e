// Members of JSON documents (nlohmann::json) as the Kubernetes API gives them: a member may be
// absent or null (the API server treats null as absent), and a typed view reads it either leniently
// (a wrong type reads as empty) or strictly (a wrong type is an error that names the field).
// A leaf: kube, api and the test support read members through it.
//
//   const nlohmann::json* spec = eoc::MemberOrNull(pod, "spec");   // null: absent, null, no object
//   std::string node = eoc::StringOrEmpty(spec, "nodeName");        // "" unless a string
//   std::string ns = eoc::OptionalString(*meta, "namespace", "metadata");  // throws JsonShapeError
//                                                   // "metadata.namespace: expected a string"
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>

namespace eoc {

// A JSON document that does not have the shape its type requires; the message names the field.
class JsonShapeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The member `key` of `object` when `object` is an object that has it and it is not null; else
// nullptr (also when `object` is nullptr, so that lookups chain).
const nlohmann::json* MemberOrNull(const nlohmann::json* object, std::string_view key);
inline const nlohmann::json* MemberOrNull(const nlohmann::json& object, std::string_view key) {
  return MemberOrNull(&object, key);
}

// The member `key` of `object` when it is a string; else "".
std::string StringOrEmpty(const nlohmann::json* object, std::string_view key);
inline std::string StringOrEmpty(const nlohmann::json& object, std::string_view key) {
  return StringOrEmpty(&object, key);
}

// Strict reads: an absent or null member reads as empty; a member of another type throws
// JsonShapeError "WHERE.KEY: expected a string" (`where` is the path of `object`, e.g. "metadata").
std::string OptionalString(const nlohmann::json& object, std::string_view key,
                           std::string_view where);
// A map of strings (labels, annotations); "WHERE.KEY[\"k\"]: expected a string" for a bad value.
std::map<std::string, std::string> OptionalStringMap(const nlohmann::json& object,
                                                     std::string_view key, std::string_view where);

}  // namespace eoc
