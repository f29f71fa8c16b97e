#include "kube/types.h"

#include <limits>

#include "common/bounded_json.h"
#include "common/json_members.h"
#include "common/text.h"
#include "kube/json_limits.h"

namespace eoc::kube {
namespace {

using nlohmann::json;

std::int32_t OptionalInt32(const json& object, const char* key, const std::string& where) {
  const json* v = MemberOrNull(object, key);
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
  const json* m = MemberOrNull(object, "metadata");
  const json* name = MemberOrNull(m, "name");
  if (name == nullptr || !name->is_string()) return "";
  const std::string ns = StringOrEmpty(m, "namespace");
  return ns.empty() ? name->get<std::string>() : ns + "/" + name->get<std::string>();
}

ListPage ParseListPage(json&& list) {
  if (!list.is_object()) throw MappingError("list: expected an object");
  ListPage page;
  if (const json* m = MemberOrNull(list, "metadata"); m != nullptr) {
    page.resource_version = OptionalString(*m, "resourceVersion", "metadata");
    page.continue_token = OptionalString(*m, "continue", "metadata");
    if (const json* r = MemberOrNull(*m, "remainingItemCount"); r != nullptr) {
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
  if (const json* spec = MemberOrNull(object, "spec"); spec != nullptr) {
    s.spec_replicas = OptionalInt32(*spec, "replicas", "spec");
  }
  if (const json* status = MemberOrNull(object, "status"); status != nullptr) {
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
  std::string error;
  std::optional<json> parsed =
      ParseBoundedJson(line, {.max_depth = kMaxApiJsonDepth, .max_bytes = kMaxApiLineBytes}, error);
  if (!parsed) throw MappingError("watch event: " + error);
  json& doc = *parsed;
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
    throw MappingError("watch event.type: unknown type " + Quoted(type));
  }
  auto it = doc.find("object");
  if (it == doc.end() || !it->is_object()) throw MappingError("watch event.object: missing");
  event.object = std::move(*it);
  return event;
}

}  // namespace eoc::kube
