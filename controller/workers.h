// Which pods of the cluster are a pool's workers, and what each can do: the membership half of
// the reconciler, as pure functions over informer views, so that unit tests and the reconciler
// run the same code.
//
//   std::vector<Worker> workers = SelectWorkers(pool, pods, [&](const std::string& node) {
//     return nodes.Get(node);   // nullptr when unknown
//   });
//   workers[0].address   // "10.0.3.7:8000"
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "api/inference_pool.h"
#include "kube/node_view.h"
#include "kube/pod_view.h"

namespace eoc::controller {

// The node label that names a GPU's product (NVIDIA's GPU feature discovery sets it).
inline constexpr std::string_view kGpuProductLabel = "nvidia.com/gpu.product";

// One ready pod of a pool, as the routing table and (later) the router see it.
struct Worker {
  std::string pod;      // the pod's name, in the pool's namespace
  std::string address;  // "podIP:targetPort"
  std::string node;
  std::string accelerator;  // "GPU", "TPU" or "CPU"
  // The node's nvidia.com/gpu.product, else the accelerator class: what energy profiles match.
  std::string accelerator_product;
  std::string zone;                  // the node's carbon.zoneLabel, "" when unknown
  std::vector<std::string> models;   // empty: any model
  std::int32_t max_concurrency = 0;  // 0: not limited
  // What was wrong with the pod's own settings (a bad annotation), for an Event; the worker
  // still serves, with the spec's value in place of the bad one.
  std::string annotation_error;

  bool operator==(const Worker&) const = default;
};

// A pod that can take requests: Ready, not terminating, with a pod IP.
bool IsServing(const kube::PodView& pod);

// The worker a serving pod of `pool` makes; `node` may be null (not yet seen).
Worker DescribeWorker(const kube::PodView& pod, const kube::NodeView* node,
                      const api::InferencePoolSpec& spec);

using NodeLookup = std::function<std::shared_ptr<const kube::NodeView>(const std::string& name)>;

// The pool's workers among `pods` (any namespaces; only the pool's is read), sorted by pod name.
std::vector<Worker> SelectWorkers(const api::InferencePool& pool,
                                  const std::vector<std::shared_ptr<const kube::PodView>>& pods,
                                  const NodeLookup& nodes);

// Whether `pod` belongs to `pool` by namespace and selector, ready or not.
bool Selects(const api::InferencePool& pool, const kube::PodView& pod);

}  // namespace eoc::controller
