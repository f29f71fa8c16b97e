// The local control plane that `scripts/control-plane start DIR` runs, as tests see it: the
// variables of DIR/env, found through $EOC_KUBE_ENV (set by CTest for tests that require the
// `control_plane` fixture).
//
//   const auto* plane = eoc::testing::ControlPlane::Find();
//   if (plane == nullptr) GTEST_SKIP() << "no control plane";
//   auto client = eoc::kube::Client::Create(plane->AdminConfig(), {});
#pragma once

#include <map>
#include <string>

#include "kube/config.h"

namespace eoc::testing {

class ControlPlane {
 public:
  // Reads $EOC_KUBE_ENV once. Returns nullptr when it is unset or unreadable.
  static const ControlPlane* Find();

  std::string Var(const std::string& name) const;  // e.g. "EOC_KUBE_SERVER"; "" when absent
  std::string server() const { return Var("EOC_KUBE_SERVER"); }
  std::string dir() const { return Var("EOC_KUBE_DIR"); }

  // Token authentication as the admin (system:masters), verified against the cluster CA.
  kube::RestConfig AdminConfig() const;
  // The same server with another token (e.g. EOC_KUBE_NOBODY_TOKEN, which RBAC allows nothing).
  kube::RestConfig TokenConfig(const std::string& token) const;
  // Client-certificate authentication as the admin.
  kube::RestConfig CertConfig() const;

 private:
  std::map<std::string, std::string> vars_;
};

// A namespace name unique to this process and call, for tests that share one control plane.
std::string UniqueName(const std::string& prefix);

}  // namespace eoc::testing
