// What the autoscaler reads and writes on the API server, behind an interface so that the
// scaler's unit tests run against a fake: the scale target's /scale subresource (the kind found
// through discovery, so any resource that has one), the HorizontalPodAutoscalers that might
// already scale it, the two status fields the scaler owns, the deletion cost it pins on the pods a
// scale-in drains, and the server's version (which says whether that cost is honoured).
//
//   KubeScaleClient scales(client);
//   auto now = scales.Read("prod", {.api_version = "apps/v1", .kind = "Deployment", .name =
//   "llm"}); auto written = scales.Write("prod", ref, now->resource_version, 5);  // 409 if it
//   moved since scales.PatchStatus("prod", "chat", 5, "2026-12-04T01:02:03Z");
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/inference_pool.h"
#include "api/label_selector.h"
#include "kube/client.h"
#include "kube/discovery.h"
#include "kube/status.h"

namespace eoc::controller {

// The autoscaling/v1 HorizontalPodAutoscalers (served on every version the operator supports).
inline const kube::ResourceRef kHorizontalPodAutoscalers{"autoscaling", "v1",
                                                         "horizontalpodautoscalers"};

// What /scale says of the target.
struct ScaleState {
  std::int32_t replicas = 0;         // spec.replicas
  std::int32_t status_replicas = 0;  // status.replicas
  std::string resource_version;
  // status.selector: which pods are the target's (a pool may select more, such as another
  // Deployment's on another accelerator, which this target's scale-in never removes). nullopt
  // when /scale reports none (a custom resource may not) or one that cannot be read: then every
  // pod the pool selects counts as the target's.
  std::optional<api::LabelSelector> selector;

  bool operator==(const ScaleState&) const = default;
};

class ScaleClient {
 public:
  virtual ~ScaleClient() = default;
  // The target's /scale. A kind that is not served, or has no scale subresource, is an error
  // (404 NotFound, or reason kReasonNoScale) that names it.
  virtual kube::Result<ScaleState> Read(const std::string& ns, const api::ScaleTargetRef& ref) = 0;
  // Sets spec.replicas, only if /scale is still at `resource_version` (409 Conflict otherwise).
  virtual kube::Result<ScaleState> Write(const std::string& ns, const api::ScaleTargetRef& ref,
                                         const std::string& resource_version,
                                         std::int32_t replicas) = 0;
  // The names of the HorizontalPodAutoscalers in `ns` whose scaleTargetRef is `ref`.
  virtual kube::Result<std::vector<std::string>> Autoscalers(const std::string& ns,
                                                             const api::ScaleTargetRef& ref) = 0;
  // Merge-patches the pool's status.desiredReplicas and status.lastScaleTime (RFC 3339).
  virtual kube::Result<bool> PatchStatus(const std::string& ns, const std::string& pool,
                                         std::int32_t desired_replicas,
                                         const std::string& last_scale_time) = 0;
  // Removes the pool's annotations `keys` (demand reports of replicas that are gone).
  virtual kube::Result<bool> RemoveAnnotations(const std::string& ns, const std::string& pool,
                                               const std::vector<std::string>& keys) = 0;
  // Sets pod `pod`'s controller.kubernetes.io/pod-deletion-cost to `cost`, or removes it (nullopt).
  virtual kube::Result<bool> SetDeletionCost(const std::string& ns, const std::string& pod,
                                             std::optional<std::string_view> cost) = 0;
  // The API server's minor version (1.<minor>), from /version.
  virtual kube::Result<int> ServerMinor() = 0;
};

// The minor version in a /version answer: its "minor" field's leading digits ("20", "22+" as some
// distributions write it); an error naming the field when there are none.
kube::Result<int> ParseServerMinor(const nlohmann::json& version);

// The reason of Read's error for a kind that is served but cannot be scaled.
inline constexpr const char* kReasonNoScale = "NoScaleSubresource";

// Whether an HPA object (autoscaling/v1) targets `ref`: same kind and name, and the same API
// group when the HPA names one (its apiVersion's version may differ: apps/v1 and apps/v1beta2
// name the same Deployment).
bool TargetsRef(const nlohmann::json& hpa, const api::ScaleTargetRef& ref);

class KubeScaleClient final : public ScaleClient {
 public:
  explicit KubeScaleClient(kube::Client& client) : client_(client), discovery_(client) {}

  kube::Result<ScaleState> Read(const std::string& ns, const api::ScaleTargetRef& ref) override;
  kube::Result<ScaleState> Write(const std::string& ns, const api::ScaleTargetRef& ref,
                                 const std::string& resource_version,
                                 std::int32_t replicas) override;
  kube::Result<std::vector<std::string>> Autoscalers(const std::string& ns,
                                                     const api::ScaleTargetRef& ref) override;
  kube::Result<bool> PatchStatus(const std::string& ns, const std::string& pool,
                                 std::int32_t desired_replicas,
                                 const std::string& last_scale_time) override;
  kube::Result<bool> RemoveAnnotations(const std::string& ns, const std::string& pool,
                                       const std::vector<std::string>& keys) override;
  kube::Result<bool> SetDeletionCost(const std::string& ns, const std::string& pod,
                                     std::optional<std::string_view> cost) override;
  kube::Result<int> ServerMinor() override;

 private:
  kube::Result<kube::ApiResource> Resolve(const api::ScaleTargetRef& ref);

  kube::Client& client_;
  kube::Discovery discovery_;  // thread-safe
};

}  // namespace eoc::controller
