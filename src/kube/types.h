// Typed views of the few API shapes the REST client itself reads: which resource a call is about,
// object metadata, list pages, the autoscaling/v1 Scale, and watch events. Objects themselves stay
// JSON at this layer; informers keep compact views of their own.
//
//   eoc::kube::ResourceRef deployments{"apps", "v1", "deployments"};
//   deployments.CollectionPath("default")   // "/apis/apps/v1/namespaces/default/deployments"
//   eoc::kube::Scale s = eoc::kube::ParseScale(json);   // throws MappingError on a bad shape
//
// Members and metadata are read through common/json_members.h and common/object_meta.h, which
// api and the test support share.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/json_members.h"
#include "common/object_meta.h"

namespace eoc::kube {

// A JSON document that does not have the shape its type requires; the message names the field.
using MappingError = ::eoc::JsonShapeError;

// One resource of one group/version: the unit every REST call addresses.
struct ResourceRef {
  std::string group;  // "" for the core group
  std::string version;
  std::string resource;  // the plural, lower-case name: "pods", "deployments"
  bool namespaced = true;

  std::string GroupVersion() const { return group.empty() ? version : group + "/" + version; }
  // "/api/v1" or "/apis/apps/v1".
  std::string ApiPrefix() const;
  // The collection, in one namespace or (ns empty, or cluster-scoped) across all.
  std::string CollectionPath(const std::string& ns) const;
  // One object, optionally a subresource of it ("status", "scale").
  std::string ObjectPath(const std::string& ns, const std::string& name,
                         const std::string& subresource = "") const;
  // "deployments.apps" as the API server names it in messages.
  std::string QualifiedName() const { return group.empty() ? resource : resource + "." + group; }
};

// The resources the operator itself uses.
namespace resources {
inline const ResourceRef kNamespaces{"", "v1", "namespaces", false};
inline const ResourceRef kPods{"", "v1", "pods"};
inline const ResourceRef kNodes{"", "v1", "nodes", false};
inline const ResourceRef kEvents{"", "v1", "events"};
inline const ResourceRef kConfigMaps{"", "v1", "configmaps"};
inline const ResourceRef kDeployments{"apps", "v1", "deployments"};
inline const ResourceRef kLeases{"coordination.k8s.io", "v1", "leases"};
}  // namespace resources

// Object metadata, read by common/object_meta.h: ParseObjectMeta (strict; a missing metadata or
// name is an error), ResourceVersionOf.
using ::eoc::ObjectMeta;
using ::eoc::ParseObjectMeta;
using ::eoc::ResourceVersionOf;

// Percent-encodes everything but RFC 3986's unreserved characters; for path segments (names,
// namespaces) and query values (selectors) alike.
std::string PercentEncode(const std::string& value);

// "namespace/name", or "name" for cluster-scoped objects: an object's key in caches and work
// queues, as client-go's. "" when the object has no name.
std::string ObjectKey(const nlohmann::json& object);

// One page of a list.
struct ListPage {
  std::vector<nlohmann::json> items;
  std::string resource_version;  // the list's metadata.resourceVersion
  std::string continue_token;    // empty on the last page
  // Client::ListAll only: the server answered in more than one page.
  bool paged = false;
  std::optional<std::int64_t> remaining_item_count;
};

// Takes the items out of a List document (moved, not copied).
ListPage ParseListPage(nlohmann::json&& list);

// autoscaling/v1 Scale: what `/scale` reads and writes.
struct Scale {
  ObjectMeta metadata;
  std::int32_t spec_replicas = 0;
  std::int32_t status_replicas = 0;
  std::string selector;  // status.selector, a label selector string
};

Scale ParseScale(const nlohmann::json& object);

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };

const char* ToString(WatchEventType type);

struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  nlohmann::json object;  // for kError, a metav1.Status
};

// Parses one line of a watch stream: {"type": "...", "object": {...}}.
WatchEvent ParseWatchEvent(const std::string& line);

}  // namespace eoc::kube
