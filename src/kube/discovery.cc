#include "kube/discovery.h"

#include <algorithm>

namespace eoc::kube {
namespace {

using nlohmann::json;

std::string StringField(const json& object, const char* key, const std::string& where) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string()) throw MappingError(where + "." + key + ": missing");
  return it->get<std::string>();
}

const ApiResource* FindKind(const std::vector<ApiResource>& resources, const std::string& kind) {
  const auto it = std::find_if(resources.begin(), resources.end(),
                               [&](const ApiResource& r) { return r.kind == kind; });
  return it == resources.end() ? nullptr : &*it;
}

}  // namespace

std::vector<ApiResource> ParseApiResourceList(const json& doc) {
  if (!doc.is_object()) throw MappingError("APIResourceList: expected an object");
  const std::string group_version = StringField(doc, "groupVersion", "APIResourceList");
  const auto slash = group_version.find('/');
  const std::string group = slash == std::string::npos ? "" : group_version.substr(0, slash);
  const std::string version =
      slash == std::string::npos ? group_version : group_version.substr(slash + 1);

  std::vector<ApiResource> out;
  std::vector<std::string> subresources;
  const auto list = doc.find("resources");
  if (list == doc.end() || list->is_null()) return out;
  if (!list->is_array()) throw MappingError("APIResourceList.resources: expected an array");
  for (std::size_t i = 0; i < list->size(); ++i) {
    const json& item = (*list)[i];
    const std::string where = "APIResourceList.resources[" + std::to_string(i) + "]";
    if (!item.is_object()) throw MappingError(where + ": expected an object");
    std::string name = StringField(item, "name", where);
    if (name.find('/') != std::string::npos) {
      subresources.push_back(std::move(name));
      continue;
    }
    ApiResource r;
    r.group = group;
    r.version = version;
    r.name = std::move(name);
    r.kind = StringField(item, "kind", where);
    r.namespaced = item.value("namespaced", false);
    if (const auto verbs = item.find("verbs"); verbs != item.end() && verbs->is_array()) {
      for (const auto& v : *verbs) {
        if (v.is_string()) r.verbs.push_back(v.get<std::string>());
      }
    }
    out.push_back(std::move(r));
  }
  for (const auto& sub : subresources) {
    const auto slash_at = sub.find('/');
    const std::string parent = sub.substr(0, slash_at);
    const std::string which = sub.substr(slash_at + 1);
    for (auto& r : out) {
      if (r.name != parent) continue;
      if (which == "status") r.has_status = true;
      if (which == "scale") r.has_scale = true;
    }
  }
  return out;
}

Result<std::vector<ApiResource>> Discovery::Fetch(const std::string& api_version) {
  const std::string path =
      api_version.find('/') == std::string::npos ? "/api/" + api_version : "/apis/" + api_version;
  auto doc = client_.GetPath(path);
  if (!doc) return doc.error();
  try {
    auto resources = ParseApiResourceList(*doc);
    const std::lock_guard lock(mu_);
    cache_[api_version] = resources;
    return resources;
  } catch (const MappingError& e) {
    return Status{200, "InvalidResponse", path + ": " + e.what(), std::nullopt};
  }
}

Result<std::vector<ApiResource>> Discovery::Resources(const std::string& api_version) {
  {
    const std::lock_guard lock(mu_);
    if (const auto it = cache_.find(api_version); it != cache_.end()) return it->second;
  }
  return Fetch(api_version);
}

Result<ApiResource> Discovery::ResourceFor(const std::string& api_version,
                                           const std::string& kind) {
  auto cached = Resources(api_version);
  if (!cached) return cached.error();
  if (const ApiResource* r = FindKind(*cached, kind)) return *r;
  auto fresh = Fetch(api_version);
  if (!fresh) return fresh.error();
  if (const ApiResource* r = FindKind(*fresh, kind)) return *r;
  return Status{404, "NotFound", "kind " + kind + " is not served by " + api_version, std::nullopt};
}

void Discovery::Invalidate() {
  const std::lock_guard lock(mu_);
  cache_.clear();
}

}  // namespace eoc::kube
