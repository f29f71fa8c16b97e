// The weighted strategies end to end: the eoc-controller binary on the shared control plane, the
// node agent playing the kubelet for two nodes that differ in GPU product and region, one fake
// vLLM worker pinned to each (spec.nodeSelector). The published weights are the formulas of
// routing/weights.h, computed here by hand: for each worker, headroom h = 1 - busyness
// (running / maxConcurrencyPerWorker), score h / J (JouleWeighted; J the profile's
// (maxWatts - idleWatts) / maxTokensPerSecond) or h / (J x g/kWh) (CarbonWeighted; g/kWh the
// worker's zone's in spec.carbon.static) or R / (running + 1) (LatencyWeighted; R the profile's
// maxTokensPerSecond while the worker's measured token rate, 0 here, is below it), weight
// round(1000 x score / best score). They move when a worker's load or the pool's intensities
// change: the static map, a watched ConfigMap, or a Carbon Aware SDK (a local fake the controller
// polls every second) whose failure keeps the last values for spec.carbon.maxStaleSeconds, then
// sets CarbonIntensityAvailable False naming the zone and the error. Measured joules replace the
// profile's, from DCGM's series on a worker's own page or on its node's exporter (a DaemonSet).
// A hundred pools on dead SDKs leave another pool's intensities fresh. Assertions are on what is
// published, never on how fast.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "api/inference_pool.h"
#include "common/files.h"
#include "eventually.h"
#include "fake_carbon_sdk.h"
#include "fake_worker.h"
#include "fleet_test.h"
#include "manifests.h"

namespace eoc::controller {
namespace {

using nlohmann::json;
using testing::Eventually;
using testing::kPatience;
namespace resources = kube::resources;

constexpr const char* kProductLabel = "nvidia.com/gpu.product";
constexpr const char* kRegionLabel = "topology.kubernetes.io/region";
constexpr int kMaxConcurrency = 8;
// A label only this test's nodes carry, for its DaemonSets (whose pods on other tests' nodes no
// agent here would run).
constexpr const char* kTestLabel = "eoc.dev/test";
constexpr int kExporterPort = 9400;  // dcgm-exporter's

// Node "a": an A100 in a clean zone; node "b": an H100 in a dirtier one.
struct NodeKind {
  const char* prefix;
  const char* product;
  const char* region;
};
constexpr NodeKind kNodeA{.prefix = "a100", .product = "NVIDIA-A100", .region = "zone-a"};
constexpr NodeKind kNodeB{.prefix = "h100", .product = "NVIDIA-H100", .region = "zone-b"};

// An energy profile as spec.energy.profiles lists it, and its marginal joules per token.
struct Profile {
  const char* accelerator;
  double idle_watts;
  double max_watts;
  double max_tokens_per_second;

  json Json() const {
    return {{"accelerator", accelerator},
            {"idleWatts", idle_watts},
            {"maxWatts", max_watts},
            {"maxTokensPerSecond", max_tokens_per_second}};
  }
  double Joules() const { return (max_watts - idle_watts) / max_tokens_per_second; }
};

// J: A100 300 W / 2400 tok/s = 0.125 J/token; H100 600 W / 8000 tok/s = 0.075 J/token.
constexpr Profile kA100{.accelerator = "NVIDIA-A100",
                        .idle_watts = 100,
                        .max_watts = 400,
                        .max_tokens_per_second = 2400};
constexpr Profile kH100{.accelerator = "NVIDIA-H100",
                        .idle_watts = 100,
                        .max_watts = 700,
                        .max_tokens_per_second = 8000};

// The class both workers share in the tests where their products must not set them apart: 0.125
// J/token, until measured.
constexpr Profile kGpu{
    .accelerator = "GPU", .idle_watts = 100, .max_watts = 400, .max_tokens_per_second = 2400};

// A fake worker's power curve (kPowerCurveAnnotation) of `joules_per_token` over 20 W idle, its
// token rate sweeping 100 to 900 tokens/s and back every 4 s. A low idle: the scraper divides each
// counter's growth by the time between its own scrapes, not the page's, so their jitter on a busy
// machine scales the idle draw into noise around the slope.
std::string Curve(double joules_per_token) {
  return "idle=20,joules-per-token=" + std::to_string(joules_per_token) +
         ",tokens-per-second=100-900,period-ms=4000";
}

// A measured figure within 2% of `want`.
bool Near(std::optional<double> measured, double want) {
  return measured && std::abs(*measured - want) < want * 0.02;
}

// The weight of a worker whose score is `score` in a pool whose best score is `best`.
std::int64_t Weight(double score, double best) { return std::lround(1000 * score / best); }

double Headroom(int running) { return 1 - (static_cast<double>(running) / kMaxConcurrency); }

// A pool of the pods labelled pool=w under `strategy`, scraped every second, its table
// republished for moved weights at most every second.
json Pool(const std::string& strategy, const json& profiles) {
  json pool = testing::PoolOf("w", {{"intervalSeconds", 1}, {"timeoutSeconds", 1}});
  pool["spec"]["selector"] = {{"matchLabels", {{"pool", "w"}}}};
  pool["spec"]["routing"] = {{"strategy", strategy},
                             {"maxConcurrencyPerWorker", kMaxConcurrency},
                             {"publishIntervalSeconds", 1},
                             {"publishThreshold", 50}};
  pool["spec"]["energy"] = {{"source", "Static"}, {"profiles", profiles}};
  return pool;
}

class WeightsIntegrationTest : public testing::FleetTest {
 protected:
  std::vector<testing::NodeSpec> Nodes() const override {
    std::vector<testing::NodeSpec> nodes;
    for (const NodeKind& kind : {kNodeA, kNodeB}) {
      nodes.push_back({.name = testing::UniqueName(kind.prefix),
                       .labels = {{kProductLabel, kind.product},
                                  {kRegionLabel, kind.region},
                                  {kTestLabel, ns_}},
                       .gpus = 8});
    }
    return nodes;
  }
  // The SDK is polled every second, and a poll that takes over a second has failed.
  std::vector<std::string> ControllerFlags() const override {
    std::vector<std::string> flags = {"--carbon-poll-interval", "1", "--carbon-timeout", "1"};
    // The fake SDKs listen on 127.0.0.1, refused unless allowed.
    flags.insert(flags.end(), {"--carbon-sdk-allowed-cidrs", "127.0.0.1/32"});
    return flags;
  }

  // Starts one worker on each node (Deployments w-a100 and w-h100, pods labelled pool=w and
  // annotated with `annotations`) and creates `pool`; their pods' names in pod_a_ and pod_b_.
  void StartWorkers(const json& pool, const std::map<std::string, std::string>& annotations = {}) {
    for (const NodeKind& kind : {kNodeA, kNodeB}) {
      const std::string app = std::string("w-") + kind.prefix;
      ASSERT_TRUE(client_->Create(
          resources::kDeployments, ns_,
          testing::WorkerDeployment(app, 1,
                                    {.pod_labels = {{"pool", "w"}},
                                     .node_selector = {{kProductLabel, kind.product}},
                                     .pod_annotations = annotations})));
    }
    ASSERT_TRUE(client_->Create(testing::kPools, ns_, pool));
    const std::vector<std::string> a = AwaitRunningPods(std::string("w-") + kNodeA.prefix, 1);
    const std::vector<std::string> b = AwaitRunningPods(std::string("w-") + kNodeB.prefix, 1);
    ASSERT_EQ(a.size(), 1U);
    ASSERT_EQ(b.size(), 1U);
    pod_a_ = a.front();
    pod_b_ = b.front();
  }

  void SetRunning(const std::string& pod, int running) {
    const auto worker = agent_->Worker(ns_, pod);
    ASSERT_NE(worker, nullptr) << pod;
    sim::PageFigures load = worker->load();  // its power curve, if any, goes on
    load.running = running;
    worker->SetLoad(load);
  }

  // Whether the published table weighs the worker on node a `a` and the one on node b `b`.
  bool Published(std::int64_t a, std::int64_t b) const {
    const auto w = PublishedWeights("w");
    return w && w->size() == 2 && w->count(pod_a_) == 1 && w->at(pod_a_) == a &&
           w->count(pod_b_) == 1 && w->at(pod_b_) == b;
  }

  // The worker's power curve changes (its pod's annotation, as `kubectl annotate` would).
  void SetCurve(const std::string& pod, double joules_per_token) {
    ASSERT_TRUE(client_->Patch(
        resources::kPods, ns_, pod, kube::PatchType::kMerge,
        {{"metadata",
          {{"annotations", {{testing::kPowerCurveAnnotation, Curve(joules_per_token)}}}}}}));
  }

  // Whether the published table weighs the worker on node b half the one on node a, which leads:
  // 1000 x 0.1 / 0.2 = 500 once b's estimator window holds its steeper curve alone, within 5%
  // (each fit within 2%, as Near() allows, on a loaded machine: 489 was seen).
  bool PublishedHalved() const {
    const auto w = PublishedWeights("w");
    return w && w->count(pod_a_) == 1 && w->at(pod_a_) == 1000 && w->count(pod_b_) == 1 &&
           std::abs(w->at(pod_b_) - 500) <= 25;
  }

  // Whether the published table weighs the two workers within 4% of each other (the same
  // curve, each measured within 2%).
  bool PublishedAlike() const {
    const auto w = PublishedWeights("w");
    if (!w || w->size() != 2 || w->count(pod_a_) == 0 || w->count(pod_b_) == 0) return false;
    const std::int64_t a = w->at(pod_a_);
    const std::int64_t b = w->at(pod_b_);
    return std::max(a, b) == 1000 && std::min(a, b) >= 960;
  }

  // The worker's power as the controller's /metrics shows it, with the source it names; nullopt
  // while it has none.
  std::optional<double> Watts(const std::string& pod, const std::string& source) const {
    return Gauge("eoc_worker_watts{", "pod=\"" + pod + "\"", "source=\"" + source + "\"");
  }

  // The worker's measured marginal joules per token as the controller's /metrics shows it;
  // nullopt while it has none (or only the profile's).
  std::optional<double> MeasuredJoules(const std::string& pod) const {
    return Gauge("eoc_worker_marginal_joules_per_token{", "pod=\"" + pod + "\"",
                 "estimate=\"measured\"");
  }

  // The value of the first sample on the controller's /metrics that starts with `prefix` and
  // carries both labels (as `name="value"`); nullopt when none does.
  std::optional<double> Gauge(const std::string& prefix, const std::string& label,
                              const std::string& other_label) const {
    std::istringstream lines(Metrics());
    std::string line;
    while (std::getline(lines, line)) {
      if (line.rfind(prefix, 0) == 0 && line.find(label) != std::string::npos &&
          line.find(other_label) != std::string::npos) {
        return std::stod(line.substr(line.rfind(' ') + 1));
      }
    }
    return std::nullopt;
  }

  std::string Table() const {
    std::string out;
    if (const auto w = PublishedWeights("w")) {
      for (const auto& [pod, weight] : *w) out += pod + "=" + std::to_string(weight) + " ";
    }
    return out + "(" + pod_a_ + " on a, " + pod_b_ + " on b)\n" + controller_->Output();
  }

  // The condition of `type` of pool w in namespace `ns` as now published (empty when it has none).
  api::Condition PoolCondition(const std::string& ns, std::string_view type) const {
    const auto object = client_->Get(testing::kPools, ns, "w");
    if (!object || !object->contains("status")) return {};
    const api::InferencePoolStatus status = api::ParseStatus((*object)["status"]);
    const api::Condition* c = api::FindCondition(status.conditions, type);
    return c != nullptr ? *c : api::Condition{};
  }
  api::Condition Condition(std::string_view type) const { return PoolCondition(ns_, type); }
  bool CarbonCondition(const std::string& status, const std::string& reason) const {
    const api::Condition c = Condition(api::kConditionCarbonIntensityAvailable);
    return c.status == status && c.reason == reason;
  }
  std::string CarbonMessage() const {
    const api::Condition c = Condition(api::kConditionCarbonIntensityAvailable);
    return c.status + " " + c.reason + ": " + c.message;
  }

  // Both workers under CarbonWeighted with one profile (their class, GPU), so that the zones'
  // intensities alone set them apart, both 2 of 8 busy; `carbon` is spec.carbon.
  void StartCarbonWeighted(const json& carbon) {
    json pool = Pool("CarbonWeighted", json::array({kGpu.Json()}));
    pool["spec"]["carbon"] = carbon;
    ASSERT_NO_FATAL_FAILURE(StartWorkers(pool));
    ASSERT_NO_FATAL_FAILURE(SetRunning(pod_a_, 2));
    ASSERT_NO_FATAL_FAILURE(SetRunning(pod_b_, 2));
  }

  std::string pod_a_;
  std::string pod_b_;
};

TEST_F(WeightsIntegrationTest, JouleWeightedFollowsEachProductsJoulesAndTheLoad) {
  ASSERT_NO_FATAL_FAILURE(
      StartWorkers(Pool("JouleWeighted", json::array({kA100.Json(), kH100.Json()}))));

  // Equal loads (2 of 8 running, headroom 0.75 each): the H100 is cheaper, 1000; the A100
  // 1000 x 0.075 / 0.125 = 600.
  ASSERT_NO_FATAL_FAILURE(SetRunning(pod_a_, 2));
  ASSERT_NO_FATAL_FAILURE(SetRunning(pod_b_, 2));
  const double a = Headroom(2) / kA100.Joules();
  double b = Headroom(2) / kH100.Joules();
  ASSERT_EQ(Weight(a, b), 600);
  ASSERT_TRUE(Eventually([&] { return Published(Weight(a, b), 1000); }, kPatience)) << Table();

  // The H100 gets busier (6 of 8, headroom 0.25, score 3.33 against the A100's 6): the A100 now
  // leads with 1000 and the H100 falls to 1000 x 3.33 / 6 = 556.
  ASSERT_NO_FATAL_FAILURE(SetRunning(pod_b_, 6));
  b = Headroom(6) / kH100.Joules();
  ASSERT_EQ(Weight(b, a), 556);
  ASSERT_TRUE(Eventually([&] { return Published(1000, Weight(b, a)); }, kPatience)) << Table();
}

TEST_F(WeightsIntegrationTest, CarbonWeightedFollowsEachZonesStaticIntensity) {
  // One profile for both workers (their class, GPU): the zones' intensities alone set them apart.
  json pool = Pool("CarbonWeighted", json::array({kGpu.Json()}));
  pool["spec"]["carbon"] = {{"static", {{kNodeA.region, 100}, {kNodeB.region, 400}}}};
  ASSERT_NO_FATAL_FAILURE(StartWorkers(pool));

  // Equal loads: zone a at 100 g/kWh 1000, zone b at 400 g/kWh 1000 x 100 / 400 = 250.
  ASSERT_NO_FATAL_FAILURE(SetRunning(pod_a_, 2));
  ASSERT_NO_FATAL_FAILURE(SetRunning(pod_b_, 2));
  ASSERT_TRUE(Eventually([&] { return Published(1000, 250); }, kPatience)) << Table();

  // Zone b's grid gets cleaner (200 g/kWh): its worker rises to 1000 x 100 / 200 = 500.
  ASSERT_TRUE(client_->Patch(testing::kPools, ns_, "w", kube::PatchType::kMerge,
                             {{"spec", {{"carbon", {{"static", {{kNodeB.region, 200}}}}}}}}));
  ASSERT_TRUE(Eventually([&] { return Published(1000, 500); }, kPatience)) << Table();
}

TEST_F(WeightsIntegrationTest, CarbonWeightedFollowsAWatchedConfigMap) {
  const json grid = {{"apiVersion", "v1"},
                     {"kind", "ConfigMap"},
                     {"metadata", {{"name", "grid"}, {"namespace", ns_}}},
                     {"data", {{kNodeA.region, "100"}, {kNodeB.region, "400"}}}};
  ASSERT_TRUE(client_->Create(resources::kConfigMaps, ns_, grid));
  ASSERT_NO_FATAL_FAILURE(StartCarbonWeighted({{"configMapRef", {{"name", "grid"}}}}));
  ASSERT_TRUE(Eventually([&] { return Published(1000, 250); }, kPatience)) << Table();
  EXPECT_TRUE(CarbonCondition("True", "AllZonesKnown")) << CarbonMessage();

  // Zone b's grid gets cleaner in the ConfigMap (200 g/kWh): 1000 x 100 / 200 = 500.
  ASSERT_TRUE(client_->Patch(resources::kConfigMaps, ns_, "grid", kube::PatchType::kMerge,
                             {{"data", {{kNodeB.region, "200"}}}}));
  ASSERT_TRUE(Eventually([&] { return Published(1000, 500); }, kPatience)) << Table();

  // Zone b's key is removed and zone a's value goes bad: their last values are used for
  // maxStaleSeconds (the default hour), and the condition says why.
  ASSERT_TRUE(client_->Patch(resources::kConfigMaps, ns_, "grid", kube::PatchType::kMerge,
                             {{"data", {{kNodeA.region, "dirty"}, {kNodeB.region, nullptr}}}}));
  ASSERT_TRUE(Eventually([&] { return CarbonCondition("True", "LastValuesHeld"); }, kPatience))
      << CarbonMessage();
  const std::string message = CarbonMessage();
  EXPECT_NE(
      message.find("zone " + std::string(kNodeB.region) + ": ConfigMap " + ns_ + "/grid: no key"),
      std::string::npos)
      << message;
  EXPECT_NE(message.find("\"dirty\" is not a number"), std::string::npos) << message;
  EXPECT_TRUE(Published(1000, 500)) << Table();
}

TEST_F(WeightsIntegrationTest, ADeadCarbonAwareSdkKeepsTheLastValuesThenSetsTheCondition) {
  const std::string answer = R"([{"location":")" + std::string(kNodeA.region) +
                             R"(","time":"2026-12-02T10:00:00Z","rating":100},)" +
                             R"({"location":")" + std::string(kNodeB.region) +
                             R"(","time":"2026-12-02T10:00:00Z","rating":400}])";
  testing::FakeCarbonSdk sdk(answer);
  ASSERT_NO_FATAL_FAILURE(
      StartCarbonWeighted({{"carbonAwareSdk", {{"url", sdk.url()}}}, {"maxStaleSeconds", 8}}));
  ASSERT_TRUE(Eventually([&] { return Published(1000, 250); }, kPatience)) << Table();
  EXPECT_TRUE(CarbonCondition("True", "AllZonesKnown")) << CarbonMessage();

  // The SDK fails: the last values are kept (the weights stay) and the condition says why...
  sdk.Set("oops", "503 Service Unavailable");
  ASSERT_TRUE(Eventually([&] { return CarbonCondition("True", "LastValuesHeld"); }, kPatience))
      << CarbonMessage();
  EXPECT_NE(CarbonMessage().find("HTTP 503"), std::string::npos) << CarbonMessage();
  EXPECT_TRUE(Published(1000, 250)) << Table();
  // ... until the hold has passed: both zones unknown, named with the error, and equal weights.
  ASSERT_TRUE(Eventually([&] { return CarbonCondition("False", "ZonesUnknown"); }, kPatience))
      << CarbonMessage();
  EXPECT_NE(CarbonMessage().find("zone " + std::string(kNodeA.region) + ": "), std::string::npos)
      << CarbonMessage();
  EXPECT_NE(CarbonMessage().find("HTTP 503"), std::string::npos) << CarbonMessage();
  ASSERT_TRUE(Eventually([&] { return Published(1000, 1000); }, kPatience)) << Table();

  // It answers again: the zones are known again.
  sdk.Set(answer);
  ASSERT_TRUE(Eventually([&] { return Published(1000, 250); }, kPatience)) << Table();
  EXPECT_TRUE(CarbonCondition("True", "AllZonesKnown")) << CarbonMessage();
}

// A TCP listener on 127.0.0.1 that never accepts: a connection completes in the kernel's backlog
// and is never answered (once the backlog is full, connecting hangs): a dead SDK.
class SilentListener {
 public:
  SilentListener() : fd_(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (bind(fd_.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        listen(fd_.get(), 1024) != 0 ||
        getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      throw std::runtime_error("SilentListener: cannot listen on 127.0.0.1");
    }
    port_ = ntohs(addr.sin_port);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  Fd fd_;
  int port_ = 0;
};

// A hundred pools may name SDKs in one namespace here (the cap is raised), so that they can all
// select the same two workers, whose zones they ask for.
class CarbonFanOutTest : public WeightsIntegrationTest {
 protected:
  std::vector<std::string> ControllerFlags() const override {
    std::vector<std::string> flags = WeightsIntegrationTest::ControllerFlags();
    flags.insert(flags.end(), {"--max-carbon-sdk-urls-per-namespace", "200"});
    return flags;
  }
};

// A hundred pools whose SDKs never answer (each poll takes its whole 1 s timeout) leave another
// pool's SDK polled as often as ever: its intensities stay fresh through three of its 10 s holds
// (polled one URL after another, it would wait 100 s between polls).
TEST_F(CarbonFanOutTest, AHundredPoolsOnDeadSdksLeaveAnotherPoolsIntensitiesFresh) {
  const std::string answer = R"([{"location":")" + std::string(kNodeA.region) +
                             R"(","time":"2026-12-02T10:00:00Z","rating":100},)" +
                             R"({"location":")" + std::string(kNodeB.region) +
                             R"(","time":"2026-12-02T10:00:00Z","rating":400}])";
  testing::FakeCarbonSdk sdk(answer);
  ASSERT_NO_FATAL_FAILURE(
      StartCarbonWeighted({{"carbonAwareSdk", {{"url", sdk.url()}}}, {"maxStaleSeconds", 10}}));
  ASSERT_TRUE(Eventually([&] { return Published(1000, 250); }, kPatience)) << Table();
  ASSERT_TRUE(CarbonCondition("True", "AllZonesKnown")) << CarbonMessage();

  const SilentListener dead;
  for (int i = 0; i < 100; ++i) {
    json pool = testing::PoolOf("dead-" + std::to_string(i), {{"intervalSeconds", 5}});
    pool["spec"]["selector"] = {{"matchLabels", {{"pool", "w"}}}};
    pool["spec"]["carbon"] = {
        {"carbonAwareSdk", {{"url", dead.url() + "/dead-" + std::to_string(i)}}}};
    ASSERT_TRUE(client_->Create(testing::kPools, ns_, pool));
  }
  // The dead SDKs are being asked: the first pool's polls fail.
  ASSERT_TRUE(Eventually(
      [&] {
        const auto object = client_->Get(testing::kPools, ns_, "dead-0");
        if (!object || !object->contains("status")) return false;
        const api::InferencePoolStatus status = api::ParseStatus((*object)["status"]);
        const api::Condition* c =
            api::FindCondition(status.conditions, api::kConditionCarbonIntensityAvailable);
        return c != nullptr && c->status == "False";
      },
      kPatience));

  const std::size_t polls = sdk.heads().size();
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < until) {
    ASSERT_TRUE(CarbonCondition("True", "AllZonesKnown")) << CarbonMessage();
    ASSERT_TRUE(Published(1000, 250)) << Table();
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  EXPECT_GT(sdk.heads().size(), polls);
}

// Another tenant's pool, in a namespace of its own, names a Carbon Aware SDK that answers a rating
// nested 100,000 arrays deep (200 KB, under the 1 MiB limit of an answer). Writing that rating into
// the error message recursed once per level and overflowed the controller's stack: every replica
// polls, so every replica crash-looped and no pool was served. The answer is refused while it is
// parsed: the controller stays up, goes on serving the first tenant's pool, and the second
// tenant's pool says why in a short message.
class HostileCarbonSdkTest : public WeightsIntegrationTest {
 protected:
  std::vector<std::string> MoreNamespaces() const override { return {tenant_}; }

  const std::string tenant_ = testing::UniqueName("tenant");
};

TEST_F(HostileCarbonSdkTest, AnAnswerNestedTooDeepIsRefusedAndTheControllerStaysUp) {
  const std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
  testing::FakeCarbonSdk sdk(R"([{"location":")" + std::string(kNodeA.region) +
                             R"(","time":"2026-12-02T10:00:00Z","rating":)" + deep + "}]");
  ASSERT_NO_FATAL_FAILURE(
      StartCarbonWeighted({{"static", {{kNodeA.region, 100}, {kNodeB.region, 400}}}}));
  ASSERT_TRUE(Eventually([&] { return Published(1000, 250); }, kPatience)) << Table();

  // The other tenant's pool: one worker on node a, its zone's intensity from the SDK.
  json pool = Pool("CarbonWeighted", json::array({kGpu.Json()}));
  pool["spec"]["carbon"] = {{"carbonAwareSdk", {{"url", sdk.url()}}}};
  ASSERT_TRUE(client_->Create(
      resources::kDeployments, tenant_,
      testing::WorkerDeployment(
          "w-a100", 1,
          {.pod_labels = {{"pool", "w"}}, .node_selector = {{kProductLabel, kNodeA.product}}})));
  ASSERT_TRUE(client_->Create(testing::kPools, tenant_, pool));

  std::string message;
  const auto refused = [&] {
    const api::Condition c = PoolCondition(tenant_, api::kConditionCarbonIntensityAvailable);
    message = c.status + " " + c.reason + ": " + c.message;
    return c.status == "False" && c.reason == "ZonesUnknown" &&
           c.message.find("GET " + sdk.url() +
                          "/emissions/bylocations: the answer: nested deeper than 32 levels") !=
               std::string::npos;
  };
  ASSERT_TRUE(Eventually(refused, kPatience)) << message << "\n" << controller_->Output();
  EXPECT_LT(message.size(), 1024U) << message;

  // It has asked the SDK again since, and is still up.
  const std::size_t asked = sdk.heads().size();
  ASSERT_TRUE(Eventually([&] { return sdk.heads().size() > asked; }, kPatience));
  EXPECT_FALSE(controller_->WaitFor(std::chrono::milliseconds(0)).has_value())
      << controller_->Output();
  EXPECT_EQ(testing::HttpGet(health_port_, "/healthz").status, 200) << controller_->Output();

  // The first tenant's pool is still served: zone b's grid gets cleaner (200 g/kWh), and its
  // worker rises to 1000 x 100 / 200 = 500.
  ASSERT_TRUE(client_->Patch(testing::kPools, ns_, "w", kube::PatchType::kMerge,
                             {{"spec", {{"carbon", {{"static", {{kNodeB.region, 200}}}}}}}}));
  ASSERT_TRUE(Eventually([&] { return Published(1000, 500); }, kPatience)) << Table();
}

// Measured joules replace the profile's once the estimator has enough scrapes: each worker's own
// page carries DCGM's series for it, its watts following its token rate (a power curve of 0.1
// J/token), so both weigh the same; then one worker's curve is made steeper (0.2 J/token: twice
// the watts over idle for the same tokens) and its JouleWeighted weight halves.
TEST_F(WeightsIntegrationTest, ASteeperPowerCurveLowersAWorkersJouleWeightedWeight) {
  json pool = Pool("JouleWeighted", json::array({kGpu.Json()}));
  pool["spec"]["energy"]["source"] = "DCGM";
  // Weights within 5 of their candidates: else the table may stay up to 50 (the default
  // threshold) from where the measured joules settle.
  pool["spec"]["routing"]["publishThreshold"] = 5;
  ASSERT_NO_FATAL_FAILURE(StartWorkers(
      pool, {{testing::kDcgmAnnotation, "true"}, {testing::kPowerCurveAnnotation, Curve(0.1)}}));
  ASSERT_NO_FATAL_FAILURE(SetRunning(pod_a_, 2));
  ASSERT_NO_FATAL_FAILURE(SetRunning(pod_b_, 2));
  ASSERT_TRUE(Eventually(
      [&] { return Near(MeasuredJoules(pod_a_), 0.1) && Near(MeasuredJoules(pod_b_), 0.1); },
      std::chrono::seconds(90)))
      << Metrics();
  // The same curve, each measured within 2%: the weights within 4% of each other.
  ASSERT_TRUE(Eventually([&] { return PublishedAlike(); }, kPatience)) << Table();

  ASSERT_NO_FATAL_FAILURE(SetCurve(pod_b_, 0.2));
  ASSERT_TRUE(Eventually([&] { return PublishedHalved(); }, std::chrono::seconds(120)))
      << Table() << Metrics();
  EXPECT_TRUE(Near(MeasuredJoules(pod_b_), 0.2)) << Metrics();
}

// Workers whose own pages carry no power series are measured by the dcgm-exporter DaemonSet's pod
// on their node (spec.energy.exporter), one page a scrape round for all of a node's workers: each
// worker's watts gauge names DCGM, its measured joules follow its own curve (0.1 and 0.2 J/token),
// and the steeper one weighs half.
TEST_F(WeightsIntegrationTest, EachNodesExporterMeasuresItsWorkers) {
  ASSERT_TRUE(
      client_->Create(testing::kDaemonSets, ns_,
                      testing::ExporterDaemonSet("dcgm-exporter", testing::ExporterKind::kDcgm,
                                                 kExporterPort, {{kTestLabel, ns_}})));
  json pool = Pool("JouleWeighted", json::array({kGpu.Json()}));
  pool["spec"]["energy"]["source"] = "DCGM";
  // Weights within 5 of their candidates: else the table may stay up to 50 (the default
  // threshold) from where the measured joules settle.
  pool["spec"]["routing"]["publishThreshold"] = 5;
  pool["spec"]["energy"]["exporter"] = {{"selector", {{"matchLabels", {{"app", "dcgm-exporter"}}}}},
                                        {"port", kExporterPort}};
  ASSERT_NO_FATAL_FAILURE(StartWorkers(pool, {{testing::kPowerCurveAnnotation, Curve(0.1)}}));
  ASSERT_NO_FATAL_FAILURE(SetRunning(pod_a_, 2));
  ASSERT_NO_FATAL_FAILURE(SetRunning(pod_b_, 2));
  ASSERT_NO_FATAL_FAILURE(SetCurve(pod_b_, 0.2));

  ASSERT_TRUE(Eventually(
      [&] { return Near(MeasuredJoules(pod_a_), 0.1) && Near(MeasuredJoules(pod_b_), 0.2); },
      std::chrono::seconds(120)))
      << Metrics() << controller_->Output();
  // Above the curve's 20 W idle, from the exporter's counters.
  const std::optional<double> a = Watts(pod_a_, "DCGM");
  const std::optional<double> b = Watts(pod_b_, "DCGM");
  EXPECT_TRUE(a && *a > 20) << Metrics();
  EXPECT_TRUE(b && *b > 20) << Metrics();
  EXPECT_GT(testing::Sample(Metrics(), "eoc_exporter_scrapes_total{namespace=\"" + ns_ +
                                           "\",pool=\"w\",result=\"ok\"}"),
            0)
      << Metrics();
  ASSERT_TRUE(Eventually([&] { return PublishedHalved(); }, kPatience)) << Table();
}

TEST_F(WeightsIntegrationTest, LatencyWeightedFollowsEachProductsTokenRateAndTheQueue) {
  ASSERT_NO_FATAL_FAILURE(
      StartWorkers(Pool("LatencyWeighted", json::array({kA100.Json(), kH100.Json()}))));

  // Equal queues (2 running; score R / 3): the H100 (8000 tok/s) 1000, the A100 (2400) 300.
  ASSERT_NO_FATAL_FAILURE(SetRunning(pod_a_, 2));
  ASSERT_NO_FATAL_FAILURE(SetRunning(pod_b_, 2));
  const double a = kA100.max_tokens_per_second / 3;
  double b = kH100.max_tokens_per_second / 3;
  ASSERT_EQ(Weight(a, b), 300);
  ASSERT_TRUE(Eventually([&] { return Published(Weight(a, b), 1000); }, kPatience)) << Table();

  // The H100's queue grows to 6 (score 8000 / 7 = 1143 against the A100's 800): it still leads,
  // and the A100 rises to 1000 x 800 / 1143 = 700.
  ASSERT_NO_FATAL_FAILURE(SetRunning(pod_b_, 6));
  b = kH100.max_tokens_per_second / 7;
  ASSERT_EQ(Weight(a, b), 700);
  ASSERT_TRUE(Eventually([&] { return Published(Weight(a, b), 1000); }, kPatience)) << Table();
}

}  // namespace
}  // namespace eoc::controller
