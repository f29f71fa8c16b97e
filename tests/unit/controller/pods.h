// A pod as the pool reconcile and the worker list read it: in namespace "prod" on node-a (unless
// said otherwise), labelled app=chat, Running, ready unless said otherwise.
#pragma once

#include <memory>
#include <string>

#include "kube/pod_view.h"

namespace eoc::controller::testing {

inline std::shared_ptr<const kube::PodView> Pod(const std::string& name, const std::string& ip,
                                                bool ready = true,
                                                const std::string& node = "node-a") {
  kube::PodView pod;
  pod.ns = "prod";
  pod.name = name;
  pod.pod_ip = ip;
  pod.node_name = node;
  pod.labels = {{"app", "chat"}};
  pod.phase = kube::PodPhase::kRunning;
  pod.ready = ready;
  return std::make_shared<const kube::PodView>(std::move(pod));
}

}  // namespace eoc::controller::testing
