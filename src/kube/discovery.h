// API discovery: which resource serves a group/version/kind, whether it is namespaced, and which
// subresources (status, scale) it has. What lets the autoscaler scale "any kind with a /scale
// subresource" named only by apiVersion and kind.
//
//   eoc::kube::Discovery discovery(client);
//   auto res = discovery.ResourceFor("apps/v1", "Deployment");
//   if (res && res->has_scale) client.SetReplicas(res->Ref(), "default", "web", 3);
#pragma once

#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kube/client.h"
#include "kube/status.h"
#include "kube/types.h"

namespace eoc::kube {

struct ApiResource {
  std::string group;
  std::string version;
  std::string kind;
  std::string name;  // the plural resource name
  bool namespaced = true;
  std::vector<std::string> verbs;
  bool has_status = false;
  bool has_scale = false;

  ResourceRef Ref() const { return {group, version, name, namespaced}; }
};

// Parses an APIResourceList (GET /api/v1 or /apis/{group}/{version}); subresources are folded
// into their resource's has_status / has_scale. Throws MappingError naming the bad field.
std::vector<ApiResource> ParseApiResourceList(const nlohmann::json& doc);

class Discovery {
 public:
  explicit Discovery(Client& client) : client_(client) {}

  // Every resource of one group/version ("v1", "apps/v1"), fetched once and cached.
  Result<std::vector<ApiResource>> Resources(const std::string& api_version);
  // The resource that serves `kind` in `api_version`. A kind missing from the cached document is
  // looked up once more from the server (a CRD may have been installed since); then 404 NotFound.
  Result<ApiResource> ResourceFor(const std::string& api_version, const std::string& kind);
  // Forgets every cached document.
  void Invalidate();

 private:
  Result<std::vector<ApiResource>> Fetch(const std::string& api_version);

  Client& client_;
  std::mutex mu_;
  std::map<std::string, std::vector<ApiResource>> cache_;
};

}  // namespace eoc::kube
