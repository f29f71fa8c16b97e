// Least privilege, proven on the API server's audit log (the shared control plane runs with
// `scripts/control-plane start --audit-log`): the chart is installed with real helm for the
// test's namespace, with its secure defaults (auth kubernetes on the pick port and /metrics, TLS
// with the certificates it makes); the eoc-controller binary runs with the token of the chart's
// ServiceAccount, the arguments of the chart's Deployment and the files of the Secrets it mounts,
// and goes through a scenario that uses every permission: pools scraped through pods/proxy and
// weighed by a watched ConfigMap's grid intensities, scaling up and down with a drain that pins
// pods, down to zero and back up on a pick waiting on a second replica (its demand annotation),
// status writes (one after a conflict), Events (a repeat counted by a patch), the Lease (taken
// again after another held it), and picks and scrapes with ServiceAccount tokens (TokenReviews
// and SubjectAccessReviews), granted by the chart's auth.pickers and auth.metricsReaders or
// refused without them. Then: no request was refused (no 403), the set of (namespace, group,
// resource, verb) it used, read from the audit log, equals the set the chart grants its
// ServiceAccount, and what it does not need is refused (Secrets, deleting Deployments, other
// namespaces).
// The chart is installed with rbac.scaleTargets at Deployments only (the scenario scales one;
// StatefulSets take the same two verbs). Assertions are on what was asked and granted, never on
// how fast.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "chart_release.h"
#include "common/rfc3339.h"
#include "eventually.h"
#include "files.h"
#include "fleet_test.h"
#include "http_get.h"
#include "manifests.h"
#include "proxyable_addresses.h"
#include "raw_client.h"
#include "tls_client.h"

namespace eoc::controller {
namespace {

using nlohmann::json;
using testing::Eventually;
using testing::kClusterRoleBindings;
using testing::kClusterRoles;
using testing::kPatience;
using testing::kRoleBindings;
using testing::kRoles;
using testing::Sample;
namespace resources = kube::resources;

const kube::ResourceRef kAccessReviews{"authorization.k8s.io", "v1", "subjectaccessreviews", false};

constexpr const char* kRelease = "eoc-operator";  // names the chart's objects eoc-operator
constexpr const char* kRegion = "zone-rbac";

// A permission as RBAC and the audit log both name it.
std::string Access(const std::string& ns, const std::string& group, const std::string& resource,
                   const std::string& verb) {
  return verb + " " + (group.empty() ? "" : group + "/") + resource +
         (ns.empty() ? " (cluster)" : " in " + ns);
}

class ChartRbacTest : public testing::FleetTest {
 protected:
  void MakeAddresses() override {
    addresses_ = std::make_unique<testing::ProxyableAddresses>();
    if (const std::string why = addresses_->Create(); !why.empty()) {
      GTEST_SKIP() << "cannot make pod addresses for the API server to proxy to: " << why;
    }
  }
  std::string AddressBase() const override { return addresses_->base(); }
  std::vector<testing::NodeSpec> Nodes() const override {
    return {{.name = testing::UniqueName("node"),
             .labels = {{"nvidia.com/gpu.product", "NVIDIA-A100"},
                        {"topology.kubernetes.io/region", kRegion}},
             .gpus = 8}};
  }

  // The chart, for the test's namespace, in a namespace of its own, with a picker and a metrics
  // reader; the ServiceAccount's token in a kubeconfig; the Deployment's arguments for the
  // controller, with the files of the Secrets it mounts.
  void BeforeController() override {
    if (plane_->Var("EOC_KUBE_AUDIT_LOG").empty()) {
      GTEST_SKIP() << "the control plane runs without an audit log (start it with --audit-log)";
    }
    release_ns_ = ns_ + "-eoc";
    ASSERT_TRUE(
        client_->Create(resources::kNamespaces, "", {{"metadata", {{"name", release_ns_}}}}));
    values_ = dir_.Write(
        "values.yaml", "watchNamespaces: [" + ns_ + "]\n" +
                           "rbac:\n  podsProxy: true\n"
                           "  scaleTargets:\n    - apiGroup: apps\n      resources: [deployments]\n"
                           "controller:\n  podDeletionCost: always\n"
                           "auth:\n  pickers:\n    - namespace: " +
                           ns_ + "\n      serviceAccounts: [" + ns_ +
                           "/picker]\n"
                           "  metricsReaders:\n    serviceAccounts: [" +
                           ns_ + "/scraper]\n");
    installed_ = true;  // uninstalled after the test, also when installing fails halfway
    ASSERT_TRUE(testing::Helm(*plane_, {"install", kRelease, testing::kChart, "--namespace",
                                        release_ns_, "--values", values_}));
    picker_ = AccountToken("picker");
    scraper_ = AccountToken("scraper");
    stranger_ = AccountToken("stranger");

    const std::string token = TokenOf(release_ns_, kRelease);
    ASSERT_FALSE(token.empty());
    kubeconfig_ = testing::TokenKubeconfig(*plane_, dir_, token);

    // The controller's arguments, as the chart's Deployment gives them, with the files of the
    // Secrets it mounts.
    const testing::ChartPod pod = testing::ChartPodOf(*client_, release_ns_, kRelease, dir_);
    ASSERT_FALSE(pod.secrets.empty()) << "the chart mounts no Secret (TLS off?)";
    chart_args_ = pod.args;
    ASSERT_THAT(chart_args_, ::testing::IsSupersetOf({"--leader-elect", "--pick-auth=kubernetes",
                                                      "--metrics-auth=kubernetes"}));
  }

  std::string ControllerKubeconfig() const override { return kubeconfig_; }
  std::vector<std::string> ControllerFlags() const override {
    std::vector<std::string> flags = chart_args_;
    flags.emplace_back("--autoscaler-tick-ms=250");
    return flags;
  }

  void TearDown() override {
    FleetTest::TearDown();
    if (installed_)
      (void)testing::Helm(*plane_, {"uninstall", kRelease, "--namespace", release_ns_});
    if (!release_ns_.empty()) (void)client_->Delete(resources::kNamespaces, "", release_ns_);
    addresses_.reset();  // after the workers stopped
  }

  std::string User() const { return "system:serviceaccount:" + release_ns_ + ":" + kRelease; }

  // What the ServiceAccount asked for, from the audit log: the permissions, and the requests
  // refused with 403.
  struct Audited {
    std::set<std::string> used;
    std::vector<std::string> forbidden;
  };
  Audited ReadAudit() const {
    Audited out;
    std::ifstream log(plane_->Var("EOC_KUBE_AUDIT_LOG"));
    std::string line;
    while (std::getline(log, line)) {
      const json e = json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (!e.is_object() || e["user"].value("username", "") != User()) continue;
      if (!e.contains("objectRef")) continue;  // /version, discovery: every client may read them
      const json& ref = e["objectRef"];
      std::string resource = ref.value("resource", "");
      if (ref.contains("subresource")) resource += "/" + ref.value("subresource", "");
      const std::string access = Access(ref.value("namespace", ""), ref.value("apiGroup", ""),
                                        resource, e.value("verb", ""));
      out.used.insert(access);
      if (e.contains("responseStatus") && e["responseStatus"].value("code", 0) == 403) {
        out.forbidden.push_back(access + ": " + e.value("requestURI", ""));
      }
    }
    return out;
  }
  bool Used(const std::string& access) const { return ReadAudit().used.contains(access); }

  // What the chart grants the ServiceAccount: the rules of the Roles and ClusterRoles that the
  // chart's RoleBindings and ClusterRoleBindings bind it to (not those it makes for others, the
  // pickers' Role and the metrics readers' ClusterRole).
  std::set<std::string> Granted() const {
    std::set<std::string> out;
    const kube::ListOptions chart{.label_selector =
                                      "app.kubernetes.io/instance=" + std::string(kRelease)};
    auto add = [&](const std::string& ns, const json& binding) {
      const json& subjects = binding.value("subjects", json::array());
      if (std::ranges::none_of(subjects, [&](const json& s) {
            return s.value("kind", "") == "ServiceAccount" && s.value("name", "") == kRelease &&
                   s.value("namespace", "") == release_ns_;
          })) {
        return;
      }
      const json& ref = binding["roleRef"];
      const bool cluster_role = ref.value("kind", "") == "ClusterRole";
      auto role = client_->Get(cluster_role ? kClusterRoles : kRoles, cluster_role ? "" : ns,
                               ref.value("name", ""));
      EXPECT_TRUE(role) << ref.dump();
      if (!role) return;
      for (const json& rule : role->value("rules", json::array())) {
        for (const json& v : rule["verbs"]) {
          for (const json& url : rule.value("nonResourceURLs", json::array())) {
            out.insert(Access("", "", url, v));
          }
          for (const json& g : rule.value("apiGroups", json::array())) {
            for (const json& r : rule.value("resources", json::array())) {
              out.insert(Access(ns, g, r, v));
            }
          }
        }
      }
    };
    for (const std::string& ns : {ns_, release_ns_}) {
      auto bindings = client_->List(kRoleBindings, ns, chart);
      EXPECT_TRUE(bindings);
      if (bindings) {
        for (const json& binding : bindings->items) add(ns, binding);
      }
    }
    auto cluster = client_->List(kClusterRoleBindings, "", chart);
    EXPECT_TRUE(cluster);
    if (cluster) {
      for (const json& binding : cluster->items) add("", binding);
    }
    return out;
  }

  // One request over TLS to `port` on a new connection, with `token` as its bearer token when one
  // is given (the server's certificate is not checked here: the chart's test verifies it); its
  // answer, waited for up to `reads` times RawClient's patience (a pick may wait for a worker),
  // or status 0.
  static testing::RawResponse Call(int port, const std::string& method, const std::string& path,
                                   const std::string& token, const std::string& body = "",
                                   int reads = 1) {
    std::optional<testing::TlsClient> client;
    try {
      client.emplace(static_cast<std::uint16_t>(port));
    } catch (const std::runtime_error&) {
      return {};  // nothing listens yet
    }
    if (!client->Handshake()) return {};
    std::string request = method + " " + path + " HTTP/1.1\r\nHost: t\r\n";
    if (!token.empty()) request += "Authorization: Bearer " + token + "\r\n";
    request += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    if (!client->Send(request)) return {};
    std::optional<testing::RawResponse> answer;
    for (int i = 0; i < reads && !answer; ++i) answer = client->ReadResponse();
    return answer.value_or(testing::RawResponse{});
  }
  // A pick of pool `pool` on `port` with `token`.
  static testing::RawResponse Pick(int port, const std::string& pool, const std::string& token,
                                   int reads = 1) {
    const std::string body = json{{"pool", pool}, {"prompt_tokens", 1}}.dump();
    return Call(port, "POST", "/v1/pick", token, body, reads);
  }
  // The /metrics page on `port`, read with the metrics reader's token; "" unless answered 200.
  std::string MetricsPage(int port) const {
    const testing::RawResponse page = Call(port, "GET", "/metrics", scraper_);
    return page.status == 200 ? page.body : "";
  }

  // Whether the ServiceAccount may `verb` `resource` (of `group`) in `ns` ("" cluster-wide).
  bool Allowed(const std::string& verb, const std::string& group, const std::string& resource,
               const std::string& ns) const {
    json attributes = {{"verb", verb}, {"group", group}, {"resource", resource}};
    if (!ns.empty()) attributes["namespace"] = ns;
    const json review = {{"apiVersion", "authorization.k8s.io/v1"},
                         {"kind", "SubjectAccessReview"},
                         {"spec",
                          {{"user", User()},
                           {"groups",
                            {"system:serviceaccounts", "system:serviceaccounts:" + release_ns_,
                             "system:authenticated"}},
                           {"resourceAttributes", attributes}}}};
    auto answer = client_->Create(kAccessReviews, "", review);
    EXPECT_TRUE(answer) << answer.error().ToString();
    return answer && (*answer)["status"].value("allowed", false);
  }

  std::int32_t SpecReplicas() const {
    auto d = client_->Get(resources::kDeployments, ns_, "w");
    return d ? (*d)["spec"].value("replicas", -1) : -1;
  }
  void SetLoad(std::int64_t running) {
    for (const std::string& pod : RunningPods("w")) {
      if (auto worker = agent_->Worker(ns_, pod)) worker->SetLoad({.running = running});
    }
  }
  // The largest count of the Events of `reason` in `ns`.
  std::int64_t EventCount(const std::string& ns, const std::string& reason) const {
    std::int64_t most = 0;
    auto list = client_->List(resources::kEvents, ns, {.field_selector = "reason=" + reason});
    if (list) {
      for (const json& e : list->items) {
        most = std::max(most, e.value("count", std::int64_t{1}));  // a first one may carry none
      }
    }
    return most;
  }
  // The Events of `ns`, as "reason count message" lines, for failure messages.
  std::string Events(const std::string& ns) const {
    std::string out;
    auto list = client_->List(resources::kEvents, ns, {});
    if (list) {
      for (const json& e : list->items) {
        out += e.value("reason", "") + " " + std::to_string(e.value("count", 0)) + " " +
               e.value("message", "") + "\n";
      }
    }
    return out;
  }
  bool SetSpec(const json& spec) {
    return static_cast<bool>(
        client_->Patch(testing::kPools, ns_, "w", kube::PatchType::kMerge, {{"spec", spec}}));
  }

  std::unique_ptr<testing::ProxyableAddresses> addresses_;
  testing::TempDir dir_;
  std::string release_ns_;
  std::string values_;
  std::string kubeconfig_;
  std::vector<std::string> chart_args_;
  bool installed_ = false;
  // Tokens of ServiceAccounts in the test's namespace: one granted picks there by the chart's
  // auth.pickers, one /metrics by auth.metricsReaders, one neither.
  std::string picker_;
  std::string scraper_;
  std::string stranger_;
};

TEST_F(ChartRbacTest, TheControllerUsesExactlyWhatTheChartGrantsAndNothingElse) {
  const std::string leading = "eoc_leader_election_leading{lease=\"eoc-operator\"}";
  ASSERT_TRUE(
      Eventually([&] { return Sample(MetricsPage(metrics_port_), leading) == 1; }, kPatience))
      << controller_->Output();
  // /metrics for the chart's metrics readers alone: the others are refused, by the controller.
  EXPECT_EQ(Call(metrics_port_, "GET", "/metrics", "").status, 401);
  EXPECT_EQ(Call(metrics_port_, "GET", "/metrics", stranger_).status, 403);
  EXPECT_EQ(Call(metrics_port_, "GET", "/metrics", picker_).status, 403);

  // A pool scraped through pods/proxy, weighed by a ConfigMap's grid intensity, scaling its
  // Deployment between 0 and 3 with short delays.
  ASSERT_TRUE(client_->Create(resources::kConfigMaps, ns_,
                              {{"metadata", {{"name", "grid"}}}, {"data", {{kRegion, "100"}}}}));
  ASSERT_TRUE(client_->Create(resources::kDeployments, ns_, testing::WorkerDeployment("w", 1)));
  json pool = testing::PoolOf(
      "w", {{"intervalSeconds", 1}, {"timeoutSeconds", 1}, {"access", "APIServerProxy"}});
  pool["spec"]["scaleTargetRef"] = {
      {"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", "w"}};
  pool["spec"]["routing"] = {{"strategy", "CarbonWeighted"}};
  pool["spec"]["energy"] = {{"source", "Static"},
                            {"profiles",
                             {{{"accelerator", "NVIDIA-A100"},
                               {"idleWatts", 100},
                               {"maxWatts", 400},
                               {"maxTokensPerSecond", 2400}}}}};
  pool["spec"]["carbon"] = {{"configMapRef", {{"name", "grid"}}}};
  pool["spec"]["autoscaling"] = {{"minReplicas", 0},           {"maxReplicas", 3},
                                 {"targetOngoingRequests", 4}, {"upscaleDelaySeconds", 2},
                                 {"downscaleDelaySeconds", 2}, {"downscaleToZeroDelaySeconds", 2},
                                 {"lookBackPeriodSeconds", 2}, {"drainTimeoutSeconds", 5}};
  ASSERT_TRUE(client_->Create(testing::kPools, ns_, pool));
  ASSERT_EQ(AwaitRunningPods("w", 1).size(), 1U);
  // Picks for the chart's pickers alone: the others are refused, by the controller.
  ASSERT_TRUE(
      Eventually([&] { return Pick(pick_port_, ns_ + "/w", picker_).status == 200; }, kPatience))
      << controller_->Output();
  EXPECT_EQ(Pick(pick_port_, ns_ + "/w", stranger_).status, 403);
  EXPECT_EQ(Pick(pick_port_, ns_ + "/w", scraper_).status, 403);
  EXPECT_EQ(Pick(pick_port_, ns_ + "/w", "").status, 401);
  SetLoad(12);
  ASSERT_TRUE(Eventually([&] { return Sample(MetricsPage(metrics_port_), Scrapes("w", "ok")) > 0; },
                         kPatience))
      << controller_->Output();

  // Up to 3 under load, then down (draining, the pods pinned) to zero without it.
  ASSERT_TRUE(Eventually([&] { return SpecReplicas() == 3; }, kPatience)) << controller_->Output();
  ASSERT_EQ(AwaitRunningPods("w", 3).size(), 3U);
  SetLoad(0);
  ASSERT_TRUE(
      Eventually([&] { return SpecReplicas() == 0 && RunningPods("w").empty(); }, kPatience))
      << controller_->Output();

  // A second replica, as the chart runs two: a pick waiting on it brings the pool back (its
  // demand annotation).
  const int follower_metrics = testing::FreePort();
  const int follower_picks = testing::FreePort();
  testing::ChildProcess follower(ControllerArgs(follower_metrics, follower_picks),
                                 /*merge_stderr=*/true);
  const std::string workers = R"(eoc_pool_workers{namespace=")" + ns_ + R"(",pool="w"})";
  ASSERT_TRUE(Eventually(
      [&] {
        const std::string page = MetricsPage(follower_metrics);
        return Sample(page, leading) == 0 && Sample(page, workers) == 0;
      },
      kPatience))
      << follower.Output();
  const testing::RawResponse answer = Pick(follower_picks, ns_ + "/w", picker_, /*reads=*/9);
  ASSERT_NE(answer.status, 0) << follower.Output() << controller_->Output();
  EXPECT_EQ(answer.status, 200) << answer.body;
  follower.Signal(SIGTERM);
  (void)follower.WaitFor(std::chrono::seconds(30));

  // The same invalid spec twice: its second InvalidSpec Event is the first, counted again.
  for (int round = 0; round < 2; ++round) {
    ASSERT_TRUE(SetSpec({{"autoscaling", {{"minReplicas", 5}}}}));  // above maxReplicas
    ASSERT_TRUE(Eventually([&] { return EventCount(ns_, "InvalidSpec") == round + 1; }, kPatience))
        << "round " << round << ":\n"
        << Events(ns_);
    ASSERT_TRUE(SetSpec({{"autoscaling", {{"minReplicas", 0}}}}));
    ASSERT_TRUE(Eventually([&] { return EventCount(ns_, "Valid") >= round + 1; }, kPatience));
  }

  // A status write that conflicts (the pool changed after the controller read it): it reads
  // the pool again. Spec changes each ask for a write, annotations race them.
  const std::string reread = Access(ns_, "eoc.dev", "inferencepools", "get");
  for (int i = 0; i < 300 && !Used(reread); ++i) {
    ASSERT_TRUE(SetSpec({{"routing", {{"publishThreshold", 50 + (i % 2)}}}}));
    std::this_thread::sleep_for(std::chrono::milliseconds(i % 20));
    ASSERT_TRUE(
        client_->Patch(testing::kPools, ns_, "w", kube::PatchType::kMerge,
                       {{"metadata", {{"annotations", {{"test/nudge", std::to_string(i)}}}}}}));
  }
  EXPECT_TRUE(Used(reread)) << "no status write conflicted";

  // The Lease taken by someone else (as by a replica cut off and back): the controller stops
  // leading, takes the Lease again once it lapses, and its LeaderElection Event counts twice.
  ASSERT_TRUE(
      client_->Patch(resources::kLeases, release_ns_, "eoc-operator", kube::PatchType::kMerge,
                     {{"spec",
                       {{"holderIdentity", "someone-else"},
                        {"renewTime", FormatRfc3339Micro(std::chrono::system_clock::now())}}}}));
  ASSERT_TRUE(Eventually([&] { return EventCount(release_ns_, "LeaderElection") >= 2; }, kPatience))
      << controller_->Output();

  // Nothing was refused, and what it used is what the chart grants.
  const Audited audited = ReadAudit();
  EXPECT_THAT(audited.forbidden, ::testing::IsEmpty());
  const std::set<std::string> granted = Granted();
  std::vector<std::string> unused;
  std::vector<std::string> ungranted;
  for (const std::string& g : granted) {
    if (!audited.used.contains(g)) unused.push_back(g);
  }
  for (const std::string& u : audited.used) {
    if (!granted.contains(u)) ungranted.push_back(u);
  }
  EXPECT_THAT(unused, ::testing::IsEmpty()) << "granted but never used";
  EXPECT_THAT(ungranted, ::testing::IsEmpty()) << "used but not granted";
  // Among them, the reviews behind the picks and scrapes (cluster-scoped, so a ClusterRole's).
  const std::vector<std::string> reviews = {
      Access("", "authentication.k8s.io", "tokenreviews", "create"),
      Access("", "authorization.k8s.io", "subjectaccessreviews", "create")};
  EXPECT_THAT(audited.used, ::testing::IsSupersetOf(reviews));
  EXPECT_THAT(granted, ::testing::IsSupersetOf(reviews));

  // What it does not need, it may not do.
  EXPECT_FALSE(Allowed("get", "", "secrets", ns_));
  EXPECT_FALSE(Allowed("list", "", "secrets", ""));
  EXPECT_FALSE(Allowed("delete", "apps", "deployments", ns_));
  EXPECT_FALSE(Allowed("update", "apps", "deployments", ns_));
  EXPECT_FALSE(Allowed("create", "", "pods", ns_));
  EXPECT_FALSE(Allowed("list", "", "pods", "default"));
  EXPECT_FALSE(Allowed("list", "eoc.dev", "inferencepools", "default"));
  EXPECT_TRUE(Allowed("list", "", "pods", ns_));  // and the check can say yes
}

}  // namespace
}  // namespace eoc::controller
