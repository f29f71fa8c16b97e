// Kubernetes objects that tests and the demo create.
//
//   client.Create(eoc::kube::resources::kDeployments, ns, eoc::testing::WorkerDeployment("web",
//   3));
//   WorkerDeployment("web-a", 1, {.pod_labels = {{"pool", "web"}},
//                                 .node_selector = {{"topology.kubernetes.io/region", "a"}}});
//   ExporterDaemonSet("dcgm-exporter", ExporterKind::kDcgm, 9400, {{"eoc.dev/test", ns}});
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "kube/types.h"

namespace eoc::testing {

inline const kube::ResourceRef kDaemonSets{"apps", "v1", "daemonsets"};

struct WorkerDeploymentOptions {
  std::map<std::string, std::string> pod_labels;       // besides app=<name>
  std::map<std::string, std::string> node_selector;    // the pods' spec.nodeSelector; empty: none
  std::map<std::string, std::string> pod_annotations;  // the fake workers' fake.eoc.dev/..., say
};

// An apps/v1 Deployment of `replicas` inference workers, selected by the label app=<name>. Without
// a kubelet its pods stay Pending, which is all the controller manager needs to create them.
nlohmann::json WorkerDeployment(const std::string& name, int replicas,
                                const WorkerDeploymentOptions& options = {});

// What a node exporter DaemonSet's fake pods serve (the node agent's fake.eoc.dev/exporter).
enum class ExporterKind : std::uint8_t { kDcgm, kKepler };

// An apps/v1 DaemonSet named `name` of fake node energy exporters (a pod a node, labelled
// app=<name>, serving their node's workers' watts on `port`), on the nodes `node_selector` picks.
nlohmann::json ExporterDaemonSet(const std::string& name, ExporterKind kind, int port,
                                 const std::map<std::string, std::string>& node_selector);

}  // namespace eoc::testing
