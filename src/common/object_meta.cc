#include "common/object_meta.h"

#include "common/json_members.h"

namespace eoc {
namespace {

using nlohmann::json;

// One pass over metadata for both readings: strict throws where lenient skips.
ObjectMeta ReadMeta(const json& object, bool strict) {
  ObjectMeta meta;
  const json* m = MemberOrNull(object, "metadata");
  if (m == nullptr || !m->is_object()) {
    if (strict) throw JsonShapeError("metadata: missing");
    return meta;
  }
  // Each read, strictly or not: a wrong type throws or reads as empty.
  const auto read = [strict](auto strict_read, auto fallback) {
    try {
      return strict_read();
    } catch (const JsonShapeError&) {
      if (strict) throw;
      return fallback;
    }
  };
  const auto string = [&](const char* key) {
    return read([&] { return OptionalString(*m, key, "metadata"); }, std::string());
  };
  const auto string_map = [&](const char* key) {
    return read([&] { return OptionalStringMap(*m, key, "metadata"); },
                std::map<std::string, std::string>());
  };
  meta.name = string("name");
  if (strict && meta.name.empty()) throw JsonShapeError("metadata.name: missing");
  meta.ns = string("namespace");
  meta.uid = string("uid");
  meta.resource_version = string("resourceVersion");
  // A member that must have the type `is_type` checks, or be absent.
  const auto typed = [&](const char* key, bool (*is_type)(const json&),
                         const char* expected) -> const json* {
    const json* value = MemberOrNull(m, key);
    if (value == nullptr || is_type(*value)) return value;
    if (strict) throw JsonShapeError(std::string("metadata.") + key + ": expected " + expected);
    return nullptr;
  };
  const auto is_integer = [](const json& v) { return v.is_number_integer(); };
  const auto is_string = [](const json& v) { return v.is_string(); };
  if (const json* g = typed("generation", is_integer, "an integer")) {
    meta.generation = g->get<std::int64_t>();
  }
  meta.labels = string_map("labels");
  meta.annotations = string_map("annotations");
  if (const json* d = typed("deletionTimestamp", is_string, "a string")) {
    meta.deletion_timestamp = d->get<std::string>();
  }
  return meta;
}

}  // namespace

ObjectMeta ParseObjectMeta(const json& object) { return ReadMeta(object, /*strict=*/true); }

ObjectMeta ReadObjectMetaLenient(const json& object) { return ReadMeta(object, /*strict=*/false); }

std::string ResourceVersionOf(const json& object) {
  return StringOrEmpty(MemberOrNull(object, "metadata"), "resourceVersion");
}

}  // namespace eoc
