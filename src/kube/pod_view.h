// The compact view of a Pod that informers keep: what the operator reads of a worker pod, and
// nothing else (no spec, no managedFields, no last-applied-configuration annotation).
//
//   Informer<PodView> pods(client, {.resource = resources::kPods}, ToPodView, clock);
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace eoc::kube {

// Sorted by key: smaller than a std::map for the handful of entries a pod carries.
using StringPairs = std::vector<std::pair<std::string, std::string>>;

// The value for `key`, or nullptr.
const std::string* Lookup(const StringPairs& pairs, std::string_view key);

// Annotations kept in a PodView: those of this prefix (the operator's own), and the deletion
// cost the autoscaler pins pods it drains with (controller/scale_in.h).
inline constexpr std::string_view kKeptAnnotationPrefix = "eoc.dev/";
inline constexpr std::string_view kDeletionCostAnnotation =
    "controller.kubernetes.io/pod-deletion-cost";

enum class PodPhase : std::uint8_t { kUnknown, kPending, kRunning, kSucceeded, kFailed };

struct PodView {
  std::string ns;
  std::string name;
  std::string uid;
  std::string node_name;
  std::string pod_ip;
  StringPairs labels;
  StringPairs annotations;  // only eoc.dev/* and kDeletionCostAnnotation
  // Requests of extended resources (nvidia.com/gpu, amd.com/gpu, google.com/tpu, ...), summed
  // over the containers, as whole units; cpu, memory and storage are not kept.
  std::vector<std::pair<std::string, std::int64_t>> extended_requests;
  // Set once the pod is terminating.
  std::optional<std::chrono::system_clock::time_point> deletion_timestamp;
  std::optional<std::chrono::system_clock::time_point> created;  // metadata.creationTimestamp
  PodPhase phase = PodPhase::kUnknown;
  bool ready = false;  // the Ready condition is True
  // The Ready condition's lastTransitionTime, when it has one.
  std::optional<std::chrono::system_clock::time_point> ready_since;
  std::int32_t restarts = 0;  // the most restarts of any of its containers

  bool terminating() const { return deletion_timestamp.has_value(); }
};

// Throws MappingError naming the field when the document is not a Pod of the expected shape.
PodView ToPodView(const nlohmann::json& pod);

}  // namespace eoc::kube
