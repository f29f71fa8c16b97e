// Kubernetes objects that tests and the demo create.
//
//   client.Create(eoc::kube::resources::kDeployments, ns, eoc::testing::WorkerDeployment("web",
//   3));
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace eoc::testing {

// An apps/v1 Deployment of `replicas` inference workers, selected by the label app=<name>. Without
// a kubelet its pods stay Pending, which is all the controller manager needs to create them.
nlohmann::json WorkerDeployment(const std::string& name, int replicas);

}  // namespace eoc::testing
