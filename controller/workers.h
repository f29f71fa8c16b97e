// Which pods of the cluster are a pool's workers, and what each can do: the membership half of
// the reconciler, as pure functions over informer views, so that unit tests and the reconciler
// run the same code. The workers are the routing engine's own type (routing::Worker): the
// routing table the leader publishes (pool_status.h) and the snapshot that picks read
// (routing_config.h) are both made from this one list. What only the controller needs of a
// worker (its node, a bad annotation to report) goes beside it, in PoolMembers::notes.
//
//   PoolMembers members = SelectWorkers(pool, pods, [&](const std::string& node) {
//     return nodes.Get(node);   // nullptr when unknown
//   });
//   members.workers[0].address   // "10.0.3.7:8000"
//   members.notes[0].node        // "node-a"
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "api/inference_pool.h"
#include "kube/node_view.h"
#include "kube/pod_view.h"
#include "routing/weights.h"
#include "routing/worker.h"

namespace eoc::controller {

// The weight DescribeWorker gives every worker: the leader weighs them from their loads
// (pool_weights.h) and the snapshot takes the published table's (routing_config.h).
inline constexpr std::int32_t kEqualWeight = routing::kMaxWeight;

// The node label that names a GPU's product (NVIDIA's GPU feature discovery sets it).
inline constexpr std::string_view kGpuProductLabel = "nvidia.com/gpu.product";

// What the controller knows of a worker beyond what routing needs.
struct WorkerNotes {
  std::string node;  // the pod's node: a change of its labels reconciles the pool
  // What was wrong with the pod's own settings (a bad annotation), for an Event; the worker
  // still serves, with the spec's value in place of the bad one.
  std::string annotation_error;

  bool operator==(const WorkerNotes&) const = default;
};

// A pool's workers, sorted by pod name, and the notes on each (notes[i] is about workers[i]).
struct PoolMembers {
  std::vector<routing::Worker> workers;
  std::vector<WorkerNotes> notes;

  bool operator==(const PoolMembers&) const = default;
};

// One worker and its notes, as DescribeWorker makes them.
struct DescribedWorker {
  routing::Worker worker;
  WorkerNotes notes;
};

// A pod that can take requests: Ready, not terminating, with a pod IP.
bool IsServing(const kube::PodView& pod);

// "podIP:port", an IPv6 pod IP in brackets so that the port stays separable.
std::string PodAddress(const kube::PodView& pod, std::int32_t port);

// The worker a serving pod of a pool with `spec` makes; `node` may be null (not yet seen). Its
// `pod` is "namespace/name" and its key WorkerKeyOf that; its energy profile is the spec's for
// its accelerator product, else for its accelerator class, else none (all zero: FindProfile); its
// weight is kEqualWeight.
DescribedWorker DescribeWorker(const kube::PodView& pod, const kube::NodeView* node,
                               const api::InferencePoolSpec& spec);

// The spec's energy profile for a worker with `capability`: the entry naming its accelerator
// product, else its accelerator class; nullptr when none does (its profile is then all zero, and
// the energy strategies weigh it by busyness alone: pool_weights.h).
const api::AcceleratorProfile* FindProfile(const routing::Capability& capability,
                                           const api::EnergySpec& energy);

// The grid intensity (gCO2e/kWh) of the worker's zone in `intensities` (zone -> gCO2e/kWh, as
// spec.carbon.static); 0, unknown, when its zone is unknown or not listed.
double GridIntensityOf(const routing::Capability& capability,
                       const std::map<std::string, double>& intensities);

using NodeLookup = std::function<std::shared_ptr<const kube::NodeView>(const std::string& name)>;

// The pool's workers among `pods` (any namespaces; only the pool's is read), sorted by pod name.
PoolMembers SelectWorkers(const api::InferencePool& pool,
                          const std::vector<std::shared_ptr<const kube::PodView>>& pods,
                          const NodeLookup& nodes);

// The worker's pod name without its namespace: the routing table's `pod` (the pool's namespace).
std::string_view PodName(const routing::Worker& worker);

// Whether `pod` belongs to `pool` by namespace and selector, ready or not.
bool Selects(const api::InferencePool& pool, const kube::PodView& pod);

}  // namespace eoc::controller
