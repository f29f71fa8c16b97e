// Which pods a workload removes when it scales in, so that the autoscaler can drain those and no
// others before it writes /scale. Pure, for unit tests.
//
//   std::vector<std::string> drain = PodsToDrain(ScaleInOrderFor("Deployment", 20), pods, 2);
//
// The orders, by kind and the cluster's version:
//   kDeletionCost     a Deployment on 1.22 and later, which honours
//                     controller.kubernetes.io/pod-deletion-cost: the ReplicaSet controller still
//                     removes unassigned, then pending, then not-ready pods first; among the rest
//                     the autoscaler chooses those with the fewest requests in flight (ties by
//                     name) and pins them with the lowest cost (kDrainDeletionCost).
//   kReplicaSetRanking a Deployment before 1.22: the ReplicaSet controller's own ranking, as
//                     ActivePodsWithRanks in pkg/controller/controller_utils.go of Kubernetes 1.20
//                     (the version the local control plane is built from) sorts it: unassigned
//                     before assigned; Pending before Unknown before Running; not ready before
//                     ready; more of the set's active pods on the same node before fewer; ready
//                     more recently before longer ago (a missing time first); more container
//                     restarts before fewer; created more recently before earlier (a missing time
//                     first). Its sort is not stable, so pods tied with the last one removed may
//                     go instead of it: they are all drained (the ones that stay take work again).
//   kHighestOrdinal   a StatefulSet: the highest ordinals (its pods are named <set>-<ordinal>).
//   kNone             any other kind: no drain (the caller says so in a condition).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kube/pod_view.h"

namespace eoc::controller {

enum class ScaleInOrder : std::uint8_t {
  kDeletionCost,
  kReplicaSetRanking,
  kHighestOrdinal,
  kNone
};

// The order of a workload of `kind` on a cluster of minor version `server_minor` (1.`minor`).
ScaleInOrder ScaleInOrderFor(std::string_view kind, int server_minor);

// What the orders read of one of the workload's pods.
struct ScaleInPod {
  std::string name;
  std::string node;  // "" while unassigned
  kube::PodPhase phase = kube::PodPhase::kUnknown;
  bool ready = false;
  std::optional<std::chrono::system_clock::time_point> ready_since;  // the Ready condition's
  std::int32_t restarts = 0;  // the most of any of its containers
  std::optional<std::chrono::system_clock::time_point> created;
  double load = 0;  // requests in flight: running, waiting, picks since (kDeletionCost only)
};

// What a drain pins on the pods it drains (kDeletionCost): the lowest cost there is, so that the
// ReplicaSet removes them before any other (a pod without the annotation costs 0). Pods carrying
// exactly this value are the autoscaler's to unpin.
inline constexpr std::string_view kDrainDeletionCost = "-2147483648";

// Whether `pod` is one of its workload's active pods: not terminating, not Succeeded or Failed.
bool IsActive(const kube::PodView& pod);

// What the orders read of `pod`, whose requests in flight are `load`.
ScaleInPod ScaleInPodOf(const kube::PodView& pod, double load);

// The pods to drain for removing `count` of `pods` (the workload's active pods: not terminating,
// not Succeeded or Failed), most likely removed first; all of them when count >= pods.size().
std::vector<std::string> PodsToDrain(ScaleInOrder order, std::vector<ScaleInPod> pods,
                                     std::size_t count);

}  // namespace eoc::controller
