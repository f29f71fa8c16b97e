// A test fixture with a namespace of its own on the control plane: created before each test,
// deleted after it, and an admin client without a client-side rate limit (the tests make many
// calls; the limiter has unit tests of its own), and ServiceAccounts' tokens. Skips when no
// control plane is configured.
//
//   class MyTest : public eoc::testing::NamespacedTest {};
//   TEST_F(MyTest, X) { client_->Create(resources::kPods, ns_, ...); }
//   std::string token = AccountToken("picker");  // a new ServiceAccount in ns_, and its token
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "child_process.h"
#include "control_plane.h"
#include "eventually.h"
#include "kube/client.h"

namespace eoc::testing {

inline const kube::ResourceRef kServiceAccounts{"", "v1", "serviceaccounts"};
inline const kube::ResourceRef kRoles{"rbac.authorization.k8s.io", "v1", "roles"};
inline const kube::ResourceRef kRoleBindings{"rbac.authorization.k8s.io", "v1", "rolebindings"};
inline const kube::ResourceRef kClusterRoles{"rbac.authorization.k8s.io", "v1", "clusterroles",
                                             false};
inline const kube::ResourceRef kClusterRoleBindings{"rbac.authorization.k8s.io", "v1",
                                                    "clusterrolebindings", false};

class NamespacedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    plane_ = ControlPlane::Find();
    if (plane_ == nullptr) GTEST_SKIP() << "EOC_KUBE_ENV is not set: no control plane";
    kube::ClientOptions o;
    o.qps = 0;
    client_ = kube::Client::Create(plane_->AdminConfig(), o);
    ns_ = UniqueName("it");
    auto created = client_->Create(kube::resources::kNamespaces, "",
                                   nlohmann::json{{"metadata", {{"name", ns_}}}});
    ASSERT_TRUE(created) << created.error().ToString();
    // Pods need the namespace's default ServiceAccount (the API server's ServiceAccount admission
    // refuses them until kube-controller-manager has made it), and a controller manager that is
    // itself recovering from an API-server restart a test made may take a while to.
    if (std::filesystem::exists(plane_->dir() + "/pids/kube-controller-manager.pid")) {
      ASSERT_TRUE(Eventually(
          [&] { return static_cast<bool>(client_->Get(kServiceAccounts, ns_, "default")); },
          std::chrono::seconds(90)))
          << "namespace " << ns_ << " got no default ServiceAccount";
    }
  }

  void TearDown() override {
    if (client_ && !ns_.empty()) (void)client_->Delete(kube::resources::kNamespaces, "", ns_);
  }

  // A token of the ServiceAccount `name` in `ns` (a TokenRequest, valid for an hour), recorded
  // (RecordSecret) for the check of every log for secrets; "" when the API server refuses, which
  // fails the test.
  std::string TokenOf(const std::string& ns, const std::string& name) const {
    const nlohmann::json request = {{"apiVersion", "authentication.k8s.io/v1"},
                                    {"kind", "TokenRequest"},
                                    {"metadata", {{"name", name}}},
                                    {"spec", {{"expirationSeconds", 3600}}}};
    const auto answer = client_->Create(kServiceAccounts, ns, request, "token");
    EXPECT_TRUE(answer) << (answer ? "" : answer.error().ToString());
    std::string token = answer ? (*answer)["status"].value("token", "") : "";
    RecordSecret(token);
    return token;
  }
  // A new ServiceAccount `name` in the test's namespace, and a token of it.
  std::string AccountToken(const std::string& name) const {
    EXPECT_TRUE(client_->Create(kServiceAccounts, ns_, {{"metadata", {{"name", name}}}}));
    return TokenOf(ns_, name);
  }

  const ControlPlane* plane_ = nullptr;
  std::unique_ptr<kube::Client> client_;
  std::string ns_;
};

}  // namespace eoc::testing
