// Who may pick and read /metrics, on the real control plane: eoc-controller with --pick-auth and
// --metrics-auth kubernetes asks the API server's TokenReview and SubjectAccessReview about
// ServiceAccount tokens, and a Role granting inferencepools/pick in the test's namespace lets its
// holder pick there and nowhere else; a pool of another namespace is refused alike whether it
// exists or not. Over TLS, a gateway's client certificate is a user under the prefix, granted by
// the same kind of Role. Assertions are on answers, never on how fast they came.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "child_process.h"
#include "eventually.h"
#include "fleet_test.h"
#include "manifests.h"
#include "pki.h"
#include "raw_client.h"
#include "tls_client.h"

namespace eoc::controller {
namespace {

using nlohmann::json;
using testing::Eventually;
using testing::kClusterRoleBindings;
using testing::kClusterRoles;
using testing::kPatience;
using testing::kPools;
using testing::RawClient;
using testing::RawResponse;
namespace resources = kube::resources;

class AccessIntegrationTest : public testing::FleetTest {
 protected:
  std::vector<std::string> ControllerFlags() const override {
    return {"--pick-auth", "kubernetes", "--metrics-auth", "kubernetes"};
  }
  std::vector<std::string> MoreNamespaces() const override { return {other_}; }

  void TearDown() override {
    (void)client_->Delete(kClusterRoleBindings, "", metrics_role_);
    (void)client_->Delete(kClusterRoles, "", metrics_role_);
    FleetTest::TearDown();
  }

  // GrantPickTo ServiceAccount `account` of the test's namespace.
  void GrantPick(const std::string& account, const std::vector<std::string>& verbs) const {
    GrantPickTo({{"kind", "ServiceAccount"}, {"name", account}, {"namespace", ns_}}, verbs);
  }
  // Grants get on /metrics to ServiceAccount `account`, as a Prometheus's ClusterRole does.
  void GrantMetrics(const std::string& account) const {
    const json role = {{"metadata", {{"name", metrics_role_}}},
                       {"rules", {{{"nonResourceURLs", {"/metrics"}}, {"verbs", {"get"}}}}}};
    ASSERT_TRUE(client_->Create(kClusterRoles, "", role));
    const json binding = {
        {"metadata", {{"name", metrics_role_}}},
        {"roleRef",
         {{"apiGroup", "rbac.authorization.k8s.io"},
          {"kind", "ClusterRole"},
          {"name", metrics_role_}}},
        {"subjects", {{{"kind", "ServiceAccount"}, {"name", account}, {"namespace", ns_}}}}};
    ASSERT_TRUE(client_->Create(kClusterRoleBindings, "", binding));
  }

  // One request on a new connection to `port`, with the token when one is given.
  static RawResponse Call(int port, const std::string& method, const std::string& path,
                          const std::string& token, const std::string& body = "") {
    RawClient client(static_cast<std::uint16_t>(port));
    std::string request = method + " " + path + " HTTP/1.1\r\nHost: t\r\n";
    if (!token.empty()) request += "Authorization: Bearer " + token + "\r\n";
    request += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    if (!client.Send(request)) return {};
    return client.ReadResponse().value_or(RawResponse{});
  }
  RawResponse Pick(const std::string& pool, const std::string& token) const {
    const std::string body = json{{"pool", pool}, {"prompt_tokens", 1}}.dump();
    return Call(pick_port_, "POST", "/v1/pick", token, body);
  }

  const std::string other_ = testing::UniqueName("tenant");
  const std::string metrics_role_ = testing::UniqueName("eoc-metrics-reader");
};

TEST_F(AccessIntegrationTest, ARoleGrantsPicksInItsNamespaceAndNothingOutside) {
  ASSERT_TRUE(client_->Create(resources::kDeployments, ns_, testing::WorkerDeployment("w", 1)));
  ASSERT_TRUE(client_->Create(
      kPools, ns_, testing::PoolOf("w", {{"intervalSeconds", 1}, {"timeoutSeconds", 1}})));
  ASSERT_TRUE(client_->Create(
      kPools, other_, testing::PoolOf("w", {{"intervalSeconds", 1}, {"timeoutSeconds", 1}})));
  const std::string picker = AccountToken("picker");
  const std::string stranger = AccountToken("stranger");
  ASSERT_FALSE(picker.empty());
  GrantPick("picker", {"create"});
  GrantMetrics("picker");
  ASSERT_EQ(AwaitRunningPods("w", 1).size(), 1U);

  // The Role's holder picks in its namespace once the pool's worker is published.
  ASSERT_TRUE(Eventually([&] { return Pick(ns_ + "/w", picker).status == 200; }, kPatience))
      << controller_->Output();
  EXPECT_EQ(Pick(ns_ + "/missing", picker).status, 404) << "its own namespace: told what is not";
  // Outside it: 403 alike for a pool that exists and one that does not.
  const RawResponse exists = Pick(other_ + "/w", picker);
  const RawResponse missing = Pick(other_ + "/missing", picker);
  EXPECT_EQ(exists.status, 403);
  EXPECT_EQ(missing.status, 403);
  EXPECT_EQ(exists.body, missing.body);
  EXPECT_THAT(exists.body, ::testing::HasSubstr("may not create inferencepools/pick"));
  // Sessions: reading needs get, which the Role does not grant.
  EXPECT_EQ(Call(pick_port_, "GET", "/v1/pools/" + ns_ + "/w/sessions/s1", picker).status, 403);
  // Without the Role, without a token, with a forged one.
  EXPECT_EQ(Pick(ns_ + "/w", stranger).status, 403);
  const RawResponse anonymous = Pick(ns_ + "/w", "");
  EXPECT_EQ(anonymous.status, 401);
  EXPECT_THAT(anonymous.header("www-authenticate"), ::testing::HasSubstr("Bearer"));
  EXPECT_EQ(Pick(ns_ + "/w", "forged." + picker.substr(7)).status, 401);

  // /metrics: a token allowed get on it, as Prometheus's; the probes stay open.
  EXPECT_EQ(Call(metrics_port_, "GET", "/metrics", "").status, 401);
  EXPECT_EQ(Call(metrics_port_, "GET", "/metrics", stranger).status, 403);
  const RawResponse metrics = Call(metrics_port_, "GET", "/metrics", picker);
  EXPECT_EQ(metrics.status, 200);
  EXPECT_THAT(metrics.body, ::testing::HasSubstr("reason=\"forbidden\""));
  EXPECT_EQ(Call(health_port_, "GET", "/healthz", "").status, 200);
  // No token reached the controller's log.
  EXPECT_THAT(controller_->Output(), ::testing::Not(::testing::HasSubstr(picker)));
  EXPECT_THAT(controller_->Output(), ::testing::Not(::testing::HasSubstr(stranger)));
}

// The pick port over TLS, asking for client certificates of the test's CA: a certificate is its
// user and groups under --client-cert-user-prefix, granted by a Role like any user.
class AccessTlsIntegrationTest : public AccessIntegrationTest {
 protected:
  void BeforeController() override {
    pki_.SelfSigned("ca", "/CN=eoc test client CA");
    pki_.SelfSigned("server", "/CN=eoc-pick");
    pki_.Signed("gateway", "/CN=gateway/O=gateways", "ca");
    pki_.Signed("intruder", "/CN=intruder/O=gateways-not", "ca");
    pki_.Signed("masters", "/CN=admin/O=system:masters", "ca");
    pki_.SelfSigned("rogue-ca", "/CN=someone else's CA");
    pki_.Signed("rogue", "/CN=gateway/O=gateways", "rogue-ca");
  }
  std::vector<std::string> ControllerFlags() const override {
    auto flags = AccessIntegrationTest::ControllerFlags();
    flags.insert(flags.end(),
                 {"--pick-tls-cert-file", pki_.Cert("server"), "--pick-tls-key-file",
                  pki_.Key("server"), "--pick-client-ca-file", pki_.Cert("ca"),
                  "--pick-client-certs", "request", "--client-cert-user-prefix", "eoc:"});
    return flags;
  }

  // A JSON pick over TLS with client certificate `name` ("" for none); status 0 when the
  // handshake failed, -1 when nothing listens yet.
  int PickAs(const std::string& name, const std::string& pool) const {
    testing::TlsClientOptions options;
    if (!name.empty()) options = {.cert_file = pki_.Cert(name), .key_file = pki_.Key(name)};
    std::optional<testing::TlsClient> connected;
    try {
      connected.emplace(static_cast<std::uint16_t>(pick_port_), options);
    } catch (const std::runtime_error&) {
      return -1;
    }
    testing::TlsClient& client = *connected;
    if (!client.Handshake()) return 0;
    const std::string body = json{{"pool", pool}, {"prompt_tokens", 1}}.dump();
    if (!client.Send("POST /v1/pick HTTP/1.1\r\nHost: t\r\nContent-Length: " +
                     std::to_string(body.size()) + "\r\n\r\n" + body)) {
      return 0;
    }
    const auto response = client.ReadResponse();
    return response ? response->status : 0;
  }

  testing::Pki pki_;
};

TEST_F(AccessTlsIntegrationTest, AClientCertificateIsAUserUnderThePrefixGrantedByARole) {
  ASSERT_TRUE(client_->Create(resources::kDeployments, ns_, testing::WorkerDeployment("w", 1)));
  ASSERT_TRUE(client_->Create(
      kPools, ns_, testing::PoolOf("w", {{"intervalSeconds", 1}, {"timeoutSeconds", 1}})));
  GrantPickTo(
      {{"kind", "Group"}, {"name", "eoc:gateways"}, {"apiGroup", "rbac.authorization.k8s.io"}},
      {"create"});
  ASSERT_EQ(AwaitRunningPods("w", 1).size(), 1U);

  ASSERT_TRUE(Eventually([&] { return PickAs("gateway", ns_ + "/w") == 200; }, kPatience))
      << controller_->Output();
  EXPECT_EQ(PickAs("gateway", other_ + "/w"), 403) << "the Role is the test namespace's only";
  EXPECT_EQ(PickAs("intruder", ns_ + "/w"), 403) << "a certificate of the CA, not in the group";
  EXPECT_EQ(PickAs("masters", ns_ + "/w"), 401) << "no certificate may claim system:masters";
  EXPECT_EQ(PickAs("", ns_ + "/w"), 401) << "TLS without a certificate or a token";
  EXPECT_EQ(PickAs("rogue", ns_ + "/w"), 0) << "a certificate of another CA fails the handshake";
}

}  // namespace
}  // namespace eoc::controller
