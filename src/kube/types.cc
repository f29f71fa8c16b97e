#include "kube/types.h"

#include <limits>

namespace eoc::kube {
namespace {

using nlohmann::json;

const json* Find(const json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

std::string OptionalString(const json& object, const char* key, const std::string& where) {
  const json* v = Find(object, key);
  if (v == nullptr) return "";
  if (!v->is_string()) throw MappingError(where + "." + key + ": expected a string");
  return v->get<std::string>();
}

std::map<std::string, std::string> StringMap(const json& object, const char* key,
                                             const std::string& where) {
  std::map<std::string, std::string> out;
  const json* v = Find(object, key);
  if (v == nullptr) return out;
  if (!v->is_object()) throw MappingError(where + "." + key + ": expected an object");
  for (const auto& [k, value] : v->items()) {
    if (!value.is_string()) {
      std::string field = where;
      field.append(".").append(key).append("[\"").append(k).append("\"]");
      throw MappingError(field + ": expected a string");
    }
    out.emplace(k, value.get<std::string>());
  }
  return out;
}

std::int32_t OptionalInt32(const json& object, const char* key, const std::string& where) {
  const json* v = Find(object, key);
  if (v == nullptr) return 0;
  if (!v->is_number_integer()) throw MappingError(where + "." + key + ": expected an integer");
  const auto n = v->get<std::int64_t>();
  if (n < 0 || n > std::numeric_limits<std::int32_t>::max()) {
    throw MappingError(where + "." + key + ": out of range");
  }
  return static_cast<std::int32_t>(n);
}

}  // namespace

std::string PercentEncode(const std::string& value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(value.size());
  for (const char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if ((u >= 'A' && u <= 'Z') || (u >= 'a' && u <= 'z') || (u >= '0' && u <= '9') || u == '-' ||
        u == '_' || u == '.' || u == '~') {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 0xF]);
    }
  }
  return out;
}

std::string ResourceRef::ApiPrefix() const {
  return group.empty() ? "/api/" + version : "/apis/" + group + "/" + version;
}

std::string ResourceRef::CollectionPath(const std::string& ns) const {
  if (!namespaced || ns.empty()) return ApiPrefix() + "/" + resource;
  return ApiPrefix() + "/namespaces/" + PercentEncode(ns) + "/" + resource;
}

std::string ResourceRef::ObjectPath(const std::string& ns, const std::string& name,
                                    const std::string& subresource) const {
  std::string path = CollectionPath(namespaced ? ns : "") + "/" + PercentEncode(name);
  if (!subresource.empty()) path += "/" + subresource;
  return path;
}

std::string ObjectKey(const json& object) {
  const json* m = Find(object, "metadata");
  if (m == nullptr) return "";
  const json* name = Find(*m, "name");
  if (name == nullptr || !name->is_string()) return "";
  const json* ns = Find(*m, "namespace");
  if (ns == nullptr || !ns->is_string() || ns->get_ref<const std::string&>().empty()) {
    return name->get<std::string>();
  }
  return ns->get<std::string>() + "/" + name->get<std::string>();
}

ObjectMeta ParseObjectMeta(const json& object) {
  const json* m = Find(object, "metadata");
  if (m == nullptr || !m->is_object()) throw MappingError("metadata: missing");
  ObjectMeta meta;
  meta.name = OptionalString(*m, "name", "metadata");
  if (meta.name.empty()) throw MappingError("metadata.name: missing");
  meta.ns = OptionalString(*m, "namespace", "metadata");
  meta.uid = OptionalString(*m, "uid", "metadata");
  meta.resource_version = OptionalString(*m, "resourceVersion", "metadata");
  if (const json* g = Find(*m, "generation"); g != nullptr) {
    if (!g->is_number_integer()) throw MappingError("metadata.generation: expected an integer");
    meta.generation = g->get<std::int64_t>();
  }
  meta.labels = StringMap(*m, "labels", "metadata");
  meta.annotations = StringMap(*m, "annotations", "metadata");
  if (const json* d = Find(*m, "deletionTimestamp"); d != nullptr) {
    if (!d->is_string()) throw MappingError("metadata.deletionTimestamp: expected a string");
    meta.deletion_timestamp = d->get<std::string>();
  }
  return meta;
}

ListPage ParseListPage(json&& list) {
  if (!list.is_object()) throw MappingError("list: expected an object");
  ListPage page;
  if (const json* m = Find(list, "metadata"); m != nullptr) {
    page.resource_version = OptionalString(*m, "resourceVersion", "metadata");
    page.continue_token = OptionalString(*m, "continue", "metadata");
    if (const json* r = Find(*m, "remainingItemCount"); r != nullptr) {
      if (!r->is_number_integer()) {
        throw MappingError("metadata.remainingItemCount: expected an integer");
      }
      page.remaining_item_count = r->get<std::int64_t>();
    }
  }
  const auto it = list.find("items");
  if (it == list.end() || it->is_null()) return page;  // an empty list may omit items
  if (!it->is_array()) throw MappingError("items: expected an array");
  page.items.reserve(it->size());
  for (auto& item : *it) page.items.push_back(std::move(item));
  return page;
}

Scale ParseScale(const json& object) {
  Scale s;
  s.metadata = ParseObjectMeta(object);
  if (const json* spec = Find(object, "spec"); spec != nullptr) {
    s.spec_replicas = OptionalInt32(*spec, "replicas", "spec");
  }
  if (const json* status = Find(object, "status"); status != nullptr) {
    s.status_replicas = OptionalInt32(*status, "replicas", "status");
    s.selector = OptionalString(*status, "selector", "status");
  }
  return s;
}

const char* ToString(WatchEventType type) {
  switch (type) {
    case WatchEventType::kAdded:
      return "ADDED";
    case WatchEventType::kModified:
      return "MODIFIED";
    case WatchEventType::kDeleted:
      return "DELETED";
    case WatchEventType::kBookmark:
      return "BOOKMARK";
    case WatchEventType::kError:
      return "ERROR";
  }
  return "UNKNOWN";
}

WatchEvent ParseWatchEvent(const std::string& line) {
  json doc = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) throw MappingError("watch event: not a JSON object");
  const std::string type = OptionalString(doc, "type", "watch event");
  WatchEvent event;
  if (type == "ADDED") {
    event.type = WatchEventType::kAdded;
  } else if (type == "MODIFIED") {
    event.type = WatchEventType::kModified;
  } else if (type == "DELETED") {
    event.type = WatchEventType::kDeleted;
  } else if (type == "BOOKMARK") {
    event.type = WatchEventType::kBookmark;
  } else if (type == "ERROR") {
    event.type = WatchEventType::kError;
  } else {
    throw MappingError("watch event.type: unknown type \"" + type + "\"");
  }
  auto it = doc.find("object");
  if (it == doc.end() || !it->is_object()) throw MappingError("watch event.object: missing");
  event.object = std::move(*it);
  return event;
}

}  // namespace eoc::kube
