// Object metadata (metadata.name, namespace, uid, resourceVersion, generation, labels,
// annotations, deletionTimestamp): the one reader of it, for kube's typed views, the api's
// InferencePool and the test support. A leaf, like json_members.h.
//
//   eoc::ObjectMeta meta = eoc::ParseObjectMeta(pod);   // throws JsonShapeError naming the field
//   std::string rv = eoc::ResourceVersionOf(event.object);  // "" when absent
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace eoc {

struct ObjectMeta {
  std::string name;
  std::string ns;  // metadata.namespace
  std::string uid;
  std::string resource_version;
  std::int64_t generation = 0;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::optional<std::string> deletion_timestamp;  // as written (RFC 3339), not parsed
};

// Strict: a missing metadata or name, and any field of the wrong type, throw JsonShapeError
// naming the field ("metadata.name: missing", "metadata.labels[\"app\"]: expected a string").
ObjectMeta ParseObjectMeta(const nlohmann::json& object);

// Lenient: a field that is absent or of the wrong type reads as empty (all of them when metadata
// is not an object); never throws. For readers that decide for themselves what to refuse.
ObjectMeta ReadObjectMetaLenient(const nlohmann::json& object);

// metadata.resourceVersion, or "" when it is absent or not a string (a watch event's object, a
// list, a bookmark).
std::string ResourceVersionOf(const nlohmann::json& object);

}  // namespace eoc
