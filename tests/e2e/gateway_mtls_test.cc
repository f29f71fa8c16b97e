// The shipped nginx recipe over mTLS, end to end: eoc-controller with --pick-auth kubernetes, TLS
// and required client certificates of the test's CA; nginx rendered with the gateway's client
// certificate (the chart's kind: CN gateway, no O, so the user eoc:gateway), which a Role grants
// create on inferencepools/pick in the test's namespace alone, by the real API server's
// SubjectAccessReview. Requests to that namespace's pool reach the worker the picker named, over
// one kept-alive upstream connection; another namespace's pool, existing or not, is 403 with one
// body; a gateway without a certificate, with another CA's, or calling plain HTTP fails the
// handshake (counted) and answers 503, as the fail-closed recipe does when it cannot ask.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <functional>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "eventually.h"
#include "fleet_test.h"
#include "manifests.h"
#include "nginx.h"
#include "pki.h"
#include "raw_client.h"

namespace eoc::controller {
namespace {

using testing::Completion;
using testing::Eventually;
using testing::kNginx;
using testing::kPatience;
using testing::kPools;
using testing::Nginx;
using testing::RawResponse;
namespace resources = kube::resources;

// The name the picker's certificate carries, as the chart's pick Service's does.
constexpr const char* kPickerName = "eoc-operator-pick.eoc-system.svc";
constexpr const char* kHandshakeFailures = "eoc_pick_tls_handshake_failures_total";
// Requests on one client connection that must keep the gateway's upstream connection.
constexpr int kRequests = 50;

// The client-side ports of the open (established) TCP connections to 127.0.0.1:`port`.
std::set<std::uint16_t> OpenConnectionsTo(int port) {
  constexpr const char* kEstablished = "01";
  const auto port_of = [](const std::string& address) {
    return static_cast<int>(std::stoul(address.substr(address.find(':') + 1), nullptr, 16));
  };
  std::set<std::uint16_t> peers;
  std::ifstream table("/proc/net/tcp");
  std::string line;
  std::getline(table, line);  // the heading
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    std::string slot;
    std::string local;
    std::string remote;
    std::string state;
    fields >> slot >> local >> remote >> state;
    if (state != kEstablished) continue;
    if (port_of(local) == port) peers.insert(static_cast<std::uint16_t>(port_of(remote)));
    if (port_of(remote) == port) peers.insert(static_cast<std::uint16_t>(port_of(local)));
  }
  return peers;
}

class GatewayMtlsTest : public testing::FleetTest {
 protected:
  void SetUp() override {
    if (access(kNginx, X_OK) != 0) GTEST_SKIP() << kNginx << " is not installed";
    FleetTest::SetUp();
  }

  std::vector<std::string> MoreNamespaces() const override { return {other_}; }

  void BeforeController() override {
    pki_.SelfSigned("ca", "/CN=eoc test CA");
    pki_.Signed("server", std::string("/CN=") + kPickerName, "ca");
    pki_.Signed("gateway", "/CN=gateway", "ca");
    pki_.SelfSigned("rogue-ca", "/CN=someone else's CA");
    pki_.Signed("rogue", "/CN=gateway", "rogue-ca");
  }
  std::vector<std::string> ControllerFlags() const override {
    return {
        "--pick-auth",         "kubernetes",       "--pick-tls-cert-file",      pki_.Cert("server"),
        "--pick-tls-key-file", pki_.Key("server"), "--pick-client-ca-file",     pki_.Cert("ca"),
        "--pick-client-certs", "require",          "--client-cert-user-prefix", "eoc:"};
  }

  // The fail-closed recipe for `pool` ("namespace/name") calling the picker over https with
  // client certificate `cert` ("" for none: the rendered TLS lines without
  // proxy_ssl_certificate), or over plain HTTP when `tls` is false.
  std::unique_ptr<Nginx> Gateway(const std::string& pool, const std::string& cert = "gateway",
                                 bool tls = true) const {
    const int port = testing::FreePort();
    std::vector<std::string> placeholders{"PICKER=127.0.0.1:" + std::to_string(pick_port_),
                                          "POOL=" + pool,
                                          "LISTEN=127.0.0.1:" + std::to_string(port)};
    if (tls) {
      const std::string shown = cert.empty() ? "gateway" : cert;
      placeholders.insert(
          placeholders.end(),
          {"PICKER_CERT=" + pki_.Cert(shown), "PICKER_KEY=" + pki_.Key(shown),
           "PICKER_CA=" + pki_.Cert("ca"), std::string("PICKER_NAME=") + kPickerName});
    }
    std::function<void(const std::string&)> edit;
    if (tls && cert.empty()) edit = WithoutClientCertificate;
    return std::make_unique<Nginx>("gateway-fail-closed.conf", placeholders, port, edit);
  }

  // Takes the client certificate out of a rendered eoc-picker-tls.conf.
  static void WithoutClientCertificate(const std::string& dir) {
    const std::string path = dir + "/eoc-picker-tls.conf";
    std::ifstream in(path);
    std::string kept;
    std::string line;
    bool cut = false;
    while (std::getline(in, line)) {
      if (line.starts_with("proxy_ssl_certificate")) {
        cut = true;
        continue;
      }
      kept += line + "\n";
    }
    in.close();
    if (!cut) throw std::runtime_error(path + " names no proxy_ssl_certificate");
    std::ofstream(path) << kept;
  }

  // One request through `gateway` on a new connection.
  static RawResponse Through(const Nginx& gateway) {
    const auto client = gateway.Connect();
    if (client == nullptr || !client->Send(Completion())) return {};
    return client->ReadResponse().value_or(RawResponse{});
  }

  double HandshakeFailures() const { return testing::Sample(Metrics(), kHandshakeFailures); }

  const std::string other_ = testing::UniqueName("tenant");
  testing::Pki pki_;
};

TEST_F(GatewayMtlsTest, TheGatewaysCertificatePicksWhereARoleGrantsItAndNowhereElse) {
  ASSERT_TRUE(client_->Create(resources::kDeployments, ns_, testing::WorkerDeployment("w", 1)));
  const nlohmann::json pool = testing::PoolOf("w", {{"intervalSeconds", 1}, {"timeoutSeconds", 1}});
  ASSERT_TRUE(client_->Create(kPools, ns_, pool));
  ASSERT_TRUE(client_->Create(kPools, other_, pool));
  ASSERT_NO_FATAL_FAILURE(GrantPickTo(
      {{"kind", "User"}, {"name", "eoc:gateway"}, {"apiGroup", "rbac.authorization.k8s.io"}},
      {"create"}));
  const auto pods = AwaitRunningPods("w", 1);
  ASSERT_EQ(pods.size(), 1U);
  const std::string worker = ns_ + "/" + pods.front();

  // In the granted namespace: the worker the picker named answers.
  const auto granted = Gateway(ns_ + "/w");
  auto client = granted->Connect();
  ASSERT_NE(client, nullptr);
  RawResponse answer;
  ASSERT_TRUE(Eventually(
      [&] {
        if (!client->Send(Completion())) client = granted->Connect();
        answer = client->ReadResponse().value_or(RawResponse{});
        return answer.status == 200;
      },
      kPatience))
      << answer.status << " " << answer.body << "\n"
      << granted->Output() << controller_->Output();
  EXPECT_EQ(answer.header("x-eoc-pod"), worker);
  EXPECT_EQ(answer.header("x-eoc-fake-worker"), worker);

  // nginx keeps its connection to the picker: the same one (or ones, one per nginx worker that
  // has served a pick) stays open through kRequests more picks. Without keepalive, each pick
  // would be a connection and a TLS handshake of its own, closed after its answer.
  const double failures = HandshakeFailures();
  ASSERT_GE(failures, 0) << kHandshakeFailures << " is not exposed";
  const std::set<std::uint16_t> kept = OpenConnectionsTo(pick_port_);
  ASSERT_FALSE(kept.empty()) << "nginx keeps no connection to the picker between picks";
  for (int i = 0; i < kRequests; ++i) {
    ASSERT_TRUE(client->Send(Completion())) << "request " << i;
    answer = client->ReadResponse().value_or(RawResponse{});
    ASSERT_EQ(answer.status, 200) << "request " << i << "\n" << granted->Output();
    EXPECT_EQ(answer.header("x-eoc-fake-worker"), worker);
    ASSERT_EQ(OpenConnectionsTo(pick_port_), kept) << "after request " << i;
  }
  EXPECT_EQ(HandshakeFailures(), failures);

  // Another namespace: 403, alike for a pool that exists and one that does not.
  const RawResponse exists = Through(*Gateway(other_ + "/w"));
  const RawResponse missing = Through(*Gateway(other_ + "/missing"));
  EXPECT_EQ(exists.status, 403);
  EXPECT_EQ(missing.status, 403);
  EXPECT_EQ(exists.body, missing.body);
  EXPECT_THAT(exists.body, ::testing::HasSubstr("\"code\":403"));

  // A gateway the picker cannot identify never gets to ask: the handshake fails (counted), and
  // the fail-closed recipe answers 503 as when the picker is unreachable.
  for (const auto& [name, gateway] :
       std::vector<std::pair<std::string, std::function<std::unique_ptr<Nginx>()>>>{
           {"no client certificate", [&] { return Gateway(ns_ + "/w", ""); }},
           {"another CA's certificate", [&] { return Gateway(ns_ + "/w", "rogue"); }},
           {"plain HTTP", [&] { return Gateway(ns_ + "/w", "", false); }}}) {
    const double counted = HandshakeFailures();
    const auto refused = gateway();
    const RawResponse response = Through(*refused);
    EXPECT_EQ(response.status, 503) << name << "\n" << refused->Output();
    EXPECT_THAT(response.body, ::testing::HasSubstr("cannot be reached")) << name;
    EXPECT_TRUE(Eventually([&] { return HandshakeFailures() > counted; }, kPatience)) << name;
  }
}

}  // namespace
}  // namespace eoc::controller
