#include "controller/scale_client.h"

#include <charconv>
#include <exception>
#include <string_view>

#include "common/json_members.h"
#include "controller/pool_reconciler.h"
#include "kube/pod_view.h"
#include "telemetry/logging.h"

namespace eoc::controller {
namespace {

using nlohmann::json;

const telemetry::Logger& Log() {
  static const telemetry::Logger log("autoscaler");
  return log;
}

// "apps" of "apps/v1"; "" of "v1".
std::string_view GroupOf(std::string_view api_version) {
  const auto slash = api_version.find('/');
  return slash == std::string_view::npos ? std::string_view{} : api_version.substr(0, slash);
}

kube::Result<ScaleState> StateOf(const std::string& what, const kube::Result<json>& doc) {
  if (!doc) return doc.error();
  try {
    const kube::Scale scale = kube::ParseScale(*doc);
    std::string error;
    std::optional<api::LabelSelector> selector;
    if (!scale.selector.empty()) {
      selector = api::ParseLabelSelectorString(scale.selector, error);
      if (!selector) {
        Log().Warn(
            "the scale target's status.selector cannot be read: every pod the pool selects "
            "counts as its own",
            {{"target", what}, {"error", error}});
      }
    }
    return ScaleState{.replicas = scale.spec_replicas,
                      .status_replicas = scale.status_replicas,
                      .resource_version = scale.metadata.resource_version,
                      .selector = std::move(selector)};
  } catch (const std::exception& e) {
    return kube::Status{200, "InvalidResponse", what + " scale: " + e.what(), std::nullopt};
  }
}

std::string Describe(const api::ScaleTargetRef& ref) {
  return ref.kind + " " + ref.name + " (" + ref.api_version + ")";
}

}  // namespace

bool TargetsRef(const json& hpa, const api::ScaleTargetRef& ref) {
  const json* target = MemberOrNull(MemberOrNull(hpa, "spec"), "scaleTargetRef");
  if (target == nullptr) return false;
  const std::string kind = StringOrEmpty(target, "kind");
  const std::string name = StringOrEmpty(target, "name");
  const std::string api_version = StringOrEmpty(target, "apiVersion");
  if (kind != ref.kind || name != ref.name) return false;
  return api_version.empty() || GroupOf(api_version) == GroupOf(ref.api_version);
}

kube::Result<kube::ApiResource> KubeScaleClient::Resolve(const api::ScaleTargetRef& ref) {
  auto resource = discovery_.ResourceFor(ref.api_version, ref.kind);
  if (!resource) return resource.error();
  if (!resource->has_scale) {
    return kube::Status{0, kReasonNoScale,
                        ref.kind + " (" + ref.api_version + ") has no scale subresource",
                        std::nullopt};
  }
  return resource;
}

kube::Result<ScaleState> KubeScaleClient::Read(const std::string& ns,
                                               const api::ScaleTargetRef& ref) {
  auto resource = Resolve(ref);
  if (!resource) return resource.error();
  return StateOf(Describe(ref), client_.Get(resource->Ref(), ns, ref.name, "scale"));
}

kube::Result<ScaleState> KubeScaleClient::Write(const std::string& ns,
                                                const api::ScaleTargetRef& ref,
                                                const std::string& resource_version,
                                                std::int32_t replicas) {
  auto resource = Resolve(ref);
  if (!resource) return resource.error();
  const json scale = {
      {"apiVersion", "autoscaling/v1"},
      {"kind", "Scale"},
      {"metadata", {{"name", ref.name}, {"namespace", ns}, {"resourceVersion", resource_version}}},
      {"spec", {{"replicas", replicas}}}};
  return StateOf(Describe(ref), client_.Update(resource->Ref(), ns, scale, "scale"));
}

kube::Result<std::vector<std::string>> KubeScaleClient::Autoscalers(
    const std::string& ns, const api::ScaleTargetRef& ref) {
  auto page = client_.ListAll(kHorizontalPodAutoscalers, ns, {.limit = 500});
  if (!page) return page.error();
  std::vector<std::string> names;
  for (const json& hpa : page->items) {
    if (TargetsRef(hpa, ref)) names.push_back(StringOrEmpty(MemberOrNull(hpa, "metadata"), "name"));
  }
  return names;
}

kube::Result<bool> KubeScaleClient::PatchStatus(const std::string& ns, const std::string& pool,
                                                std::int32_t desired_replicas,
                                                const std::string& last_scale_time) {
  json status = {{"desiredReplicas", desired_replicas}};
  if (!last_scale_time.empty()) status["lastScaleTime"] = last_scale_time;
  auto patched = client_.Patch(kInferencePools, ns, pool, kube::PatchType::kMerge,
                               {{"status", status}}, "status");
  if (!patched) return patched.error();
  return true;
}

kube::Result<bool> KubeScaleClient::RemoveAnnotations(const std::string& ns,
                                                      const std::string& pool,
                                                      const std::vector<std::string>& keys) {
  json annotations = json::object();
  for (const std::string& key : keys) annotations[key] = nullptr;
  auto patched = client_.Patch(kInferencePools, ns, pool, kube::PatchType::kMerge,
                               {{"metadata", {{"annotations", annotations}}}});
  if (!patched) return patched.error();
  return true;
}

kube::Result<bool> KubeScaleClient::SetDeletionCost(const std::string& ns, const std::string& pod,
                                                    std::optional<std::string_view> cost) {
  json value = nullptr;
  if (cost) value = std::string(*cost);
  auto patched =
      client_.Patch(kube::resources::kPods, ns, pod, kube::PatchType::kMerge,
                    {{"metadata", {{"annotations", {{kube::kDeletionCostAnnotation, value}}}}}});
  if (!patched) return patched.error();
  return true;
}

kube::Result<int> ParseServerMinor(const json& version) {
  const std::string minor = StringOrEmpty(&version, "minor");
  int n = 0;
  const auto [end, ec] = std::from_chars(minor.data(), minor.data() + minor.size(), n);
  if (ec != std::errc() || end == minor.data()) {
    return kube::Status{200, "InvalidResponse",
                        "/version: its minor is not a version number: '" + minor + "'",
                        std::nullopt};
  }
  return n;
}

kube::Result<int> KubeScaleClient::ServerMinor() {
  auto version = client_.GetPath("/version");
  if (!version) return version.error();
  return ParseServerMinor(*version);
}

}  // namespace eoc::controller
