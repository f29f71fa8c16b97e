// A `helm upgrade` from the chart before authentication (main at a297031, from git) keeps a
// working gateway when the upgrade notes (README, "Upgrading from a chart before authentication")
// are followed. The previous chart is installed with real helm for the test's namespace, and
// eoc-controller runs as its pods would (ChartPodOf: the ServiceAccount's token, the Deployment's
// arguments: plain HTTP, no authentication); the shipped fail-closed nginx recipe, rendered
// plain, reaches the worker the picker names. Then `helm upgrade` to this chart, and the
// controller is stopped and started again with the upgraded Deployment's arguments and Secrets,
// as the Deployment's rollout would:
// - with the values the notes name (the gateway's user eoc:gateway in auth.pickers for the
//   pools' namespace; the gateway's namespace in gateway.clientCertSecret.namespace, where the
//   chart then makes its certificate's Secret, and in networkPolicy.gatewayNamespaces, which
//   nothing enforces here), nginx rendered again with PICKER_CERT, PICKER_KEY, PICKER_CA and
//   PICKER_NAME from that Secret reaches the worker again, and the old plain render, still
//   running, answers 503 (it cannot speak to a TLS port);
// - with the notes' four values that keep the old behaviour, the old plain render keeps
//   answering without being rendered again.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <memory>
#include <string>
#include <vector>

#include "chart_release.h"
#include "child_process.h"
#include "eventually.h"
#include "files.h"
#include "fleet_test.h"
#include "manifests.h"
#include "nginx.h"
#include "raw_client.h"

namespace eoc::controller {
namespace {

using testing::Completion;
using ::testing::Contains;
using testing::Eventually;
using ::testing::HasSubstr;
using testing::kNginx;
using testing::kPatience;
using testing::kPools;
using testing::Nginx;
using ::testing::Not;
using testing::RawResponse;
namespace resources = kube::resources;

// The chart before authentication, TLS and the NetworkPolicy came on by default.
constexpr const char* kPreviousChart = "a297031";
class ChartUpgradeTest : public testing::FleetTest {
 protected:
  void SetUp() override {
    if (access(kNginx, X_OK) != 0) GTEST_SKIP() << kNginx << " is not installed";
    FleetTest::SetUp();
  }

  // The previous chart, from git, installed for the test's namespace in a namespace of its own;
  // the controller runs with its ServiceAccount's token and its Deployment's arguments.
  void BeforeController() override {
    release_ns_ = ns_ + "-eoc";
    ASSERT_TRUE(
        client_->Create(resources::kNamespaces, "", {{"metadata", {{"name", release_ns_}}}}));
    gateway_ns_ = ns_ + "-gw";
    ASSERT_TRUE(
        client_->Create(resources::kNamespaces, "", {{"metadata", {{"name", gateway_ns_}}}}));
    const std::string previous = dir_.Path("previous");
    const testing::RunResult archived = testing::RunToExit(
        {"/bin/sh", "-c",
         R"(mkdir -p "$2" && git -C "$0" archive "$1" charts/eoc-operator | tar -x -C "$2")",
         EOC_SOURCE_DIR, kPreviousChart, previous});
    ASSERT_TRUE(archived.ok) << "the previous chart (" << kPreviousChart
                             << ") from git: " << archived.output;
    values_ = dir_.Write("values.yaml", "watchNamespaces: [" + ns_ + "]\n");
    installed_ = true;  // uninstalled after the test, also when installing fails halfway
    ASSERT_TRUE(testing::Helm(*plane_, {"install", release_, previous + "/charts/eoc-operator",
                                        "--namespace", release_ns_, "--values", values_}));
    const std::string token = TokenOf(release_ns_, fullname_);
    ASSERT_FALSE(token.empty());
    kubeconfig_ = testing::TokenKubeconfig(*plane_, dir_, token);
    chart_args_ = testing::ChartPodOf(*client_, release_ns_, fullname_, dir_).args;
    ASSERT_THAT(chart_args_, Contains("--leader-elect"));
  }
  std::string ControllerKubeconfig() const override { return kubeconfig_; }
  std::vector<std::string> ControllerFlags() const override { return chart_args_; }

  void TearDown() override {
    FleetTest::TearDown();
    if (installed_)
      (void)testing::Helm(*plane_, {"uninstall", release_, "--namespace", release_ns_});
    for (const std::string& ns : {release_ns_, gateway_ns_}) {
      if (!ns.empty()) (void)client_->Delete(resources::kNamespaces, "", ns);
    }
  }

  // A pool of one worker in the test's namespace; the worker, as "namespace/pod".
  std::string StartPool() {
    EXPECT_TRUE(client_->Create(resources::kDeployments, ns_, testing::WorkerDeployment("w", 1)));
    EXPECT_TRUE(client_->Create(
        kPools, ns_, testing::PoolOf("w", {{"intervalSeconds", 1}, {"timeoutSeconds", 1}})));
    const auto pods = AwaitRunningPods("w", 1);
    return pods.size() == 1 ? ns_ + "/" + pods.front() : "";
  }

  // `helm upgrade` to this chart with `values` (helm's --set arguments); then the controller
  // stopped (it exits cleanly) and started again with the upgraded Deployment's arguments and
  // Secrets, as the Deployment's rollout would.
  void UpgradeTo(const std::vector<std::string>& values) {
    std::vector<std::string> upgrade{"upgrade",   release_,   testing::kChart, "--namespace",
                                     release_ns_, "--values", values_};
    upgrade.insert(upgrade.end(), values.begin(), values.end());
    ASSERT_TRUE(testing::Helm(*plane_, upgrade));
    controller_->Signal(SIGTERM);
    const auto status = controller_->WaitFor(std::chrono::seconds(30));
    ASSERT_TRUE(status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << controller_->Output();
    chart_args_ = testing::ChartPodOf(*client_, release_ns_, fullname_, dir_).args;
    controller_ = std::make_unique<testing::ChildProcess>(
        ControllerArgs(metrics_port_, pick_port_, health_port_), /*merge_stderr=*/true);
  }

  // The fail-closed recipe for the pool, calling the picker over plain HTTP, or over https with
  // the client certificate of the gateway Secret written to `secret` (WriteSecret) when given,
  // as the notes say.
  std::unique_ptr<Nginx> Gateway(const std::string& secret = "") const {
    const int port = testing::FreePort();
    std::vector<std::string> placeholders{"PICKER=127.0.0.1:" + std::to_string(pick_port_),
                                          "POOL=" + ns_ + "/w",
                                          "LISTEN=127.0.0.1:" + std::to_string(port)};
    if (!secret.empty()) {
      placeholders.insert(placeholders.end(),
                          {"PICKER_CERT=" + secret + "/tls.crt",
                           "PICKER_KEY=" + secret + "/tls.key", "PICKER_CA=" + secret + "/ca.crt",
                           "PICKER_NAME=" + fullname_ + "-pick." + release_ns_ + ".svc"});
    }
    return std::make_unique<Nginx>("gateway-fail-closed.conf", placeholders, port);
  }

  // One request through `gateway` on a new connection.
  static RawResponse Through(const Nginx& gateway) {
    const auto client = gateway.Connect();
    if (client == nullptr || !client->Send(Completion())) return {};
    return client->ReadResponse().value_or(RawResponse{});
  }
  // The answer through `gateway` once it is 200 (a controller just started has not yet seen the
  // pool), or the last one when kPatience has passed.
  RawResponse Answered(const Nginx& gateway) const {
    RawResponse answer;
    (void)Eventually(
        [&] {
          answer = Through(gateway);
          return answer.status == 200;
        },
        kPatience);
    return answer;
  }

  const std::string release_ = testing::UniqueName("eoc-up");
  const std::string fullname_ = release_ + "-eoc-operator";  // the chart's objects' name
  testing::TempDir dir_;
  std::string release_ns_;
  std::string gateway_ns_;  // nginx's, were it in the cluster
  std::string values_;      // the user's values, the same for the install and the upgrade
  std::string kubeconfig_;
  std::vector<std::string> chart_args_;
  bool installed_ = false;
};

TEST_F(ChartUpgradeTest, TheUpgradeNotesKeepTheGatewayPickingOverMtls) {
  ASSERT_THAT(chart_args_, Not(Contains(HasSubstr("--pick-auth"))));
  const std::string worker = StartPool();
  ASSERT_FALSE(worker.empty());
  const auto plain = Gateway();
  RawResponse answer = Answered(*plain);
  ASSERT_EQ(answer.status, 200) << answer.body << "\n" << plain->Output() << controller_->Output();
  EXPECT_EQ(answer.header("x-eoc-fake-worker"), worker);

  // The notes: the gateway's user may pick in the pools' namespace, its certificate is made in
  // its namespace (to be mounted there), and its namespace may reach the pick port.
  ASSERT_NO_FATAL_FAILURE(UpgradeTo({"--set", "auth.pickers[0].namespace=" + ns_, "--set",
                                     "auth.pickers[0].users={eoc:gateway}", "--set",
                                     "gateway.clientCertSecret.namespace=" + gateway_ns_, "--set",
                                     "networkPolicy.gatewayNamespaces={" + gateway_ns_ + "}"}));
  ASSERT_THAT(chart_args_,
              ::testing::IsSupersetOf({"--pick-auth=kubernetes", "--pick-client-certs=request"}));

  // nginx rendered again with the chart's gateway certificate: the worker answers again.
  const std::string secret =
      testing::WriteSecret(*client_, gateway_ns_, fullname_ + "-gateway-client", dir_, "gateway");
  ASSERT_FALSE(secret.empty());
  const auto mtls = Gateway(secret);
  answer = Answered(*mtls);
  ASSERT_EQ(answer.status, 200) << answer.body << "\n" << mtls->Output() << controller_->Output();
  EXPECT_EQ(answer.header("x-eoc-fake-worker"), worker);

  // The old render, not rendered again: plain HTTP to a TLS port fails, and the fail-closed
  // recipe answers 503 as when the picker is unreachable.
  answer = Through(*plain);
  EXPECT_EQ(answer.status, 503) << answer.body;
  EXPECT_THAT(answer.body, HasSubstr("the pick endpoint cannot be reached"));
}

TEST_F(ChartUpgradeTest, TheNotesFourValuesKeepThePlainGatewayAsItWas) {
  const std::string worker = StartPool();
  ASSERT_FALSE(worker.empty());
  const auto plain = Gateway();
  RawResponse answer = Answered(*plain);
  ASSERT_EQ(answer.status, 200) << answer.body << "\n" << plain->Output() << controller_->Output();

  ASSERT_NO_FATAL_FAILURE(
      UpgradeTo({"--set", "auth.pick=none", "--set", "auth.metrics=none", "--set",
                 "tls.enabled=false", "--set", "networkPolicy.enabled=false"}));
  EXPECT_THAT(chart_args_, Not(Contains(HasSubstr("--pick-auth"))));
  EXPECT_THAT(chart_args_, Not(Contains(HasSubstr("--pick-tls"))));

  // The same nginx, not rendered again, reaches the worker through the upgraded controller.
  answer = Answered(*plain);
  ASSERT_EQ(answer.status, 200) << answer.body << "\n" << plain->Output() << controller_->Output();
  EXPECT_EQ(answer.header("x-eoc-fake-worker"), worker);
}

}  // namespace
}  // namespace eoc::controller
