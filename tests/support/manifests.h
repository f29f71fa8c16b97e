// Kubernetes objects that tests and the demo create.
//
//   client.Create(eoc::kube::resources::kDeployments, ns, eoc::testing::WorkerDeployment("web",
//   3));
//   WorkerDeployment("web-a", 1, {.pod_labels = {{"pool", "web"}},
//                                 .node_selector = {{"topology.kubernetes.io/region", "a"}}});
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace eoc::testing {

struct WorkerDeploymentOptions {
  std::map<std::string, std::string> pod_labels;       // besides app=<name>
  std::map<std::string, std::string> node_selector;    // the pods' spec.nodeSelector; empty: none
  std::map<std::string, std::string> pod_annotations;  // the fake workers' fake.eoc.dev/..., say
};

// An apps/v1 Deployment of `replicas` inference workers, selected by the label app=<name>. Without
// a kubelet its pods stay Pending, which is all the controller manager needs to create them.
nlohmann::json WorkerDeployment(const std::string& name, int replicas,
                                const WorkerDeploymentOptions& options = {});

}  // namespace eoc::testing
