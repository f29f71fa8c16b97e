// The pick endpoint through a real gateway: Debian's nginx with the shipped recipes
// (examples/nginx/, rendered by its render script), auth_request to the gateway form, and
// requests proxied to the node agent's fake workers on the shared control plane. The share of
// each worker matches what PoolState gives in-process for the same table and order (chi-square at
// p = 0.001), and the worker of weight 1000 takes more than the one of 500; a session sticks; the
// picker's 429, 503 and 504 reach the client as such, not as nginx's 500; with the picker
// unreachable, the fail-open recipe reaches the fallback and the fail-closed one answers 503.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "eventually.h"
#include "fleet_test.h"
#include "manifests.h"
#include "nginx.h"
#include "raw_client.h"
#include "routing/pool_snapshot.h"
#include "routing/pool_state.h"

namespace eoc::controller {
namespace {

using nlohmann::json;
using testing::Completion;
using testing::Eventually;
using testing::kNginx;
using testing::kPatience;
using testing::Nginx;
using testing::RawClient;
namespace resources = kube::resources;

constexpr const char* kRegionLabel = "topology.kubernetes.io/region";
// Both nodes' GPUs, so that both workers take the pool's GPU profile and only their zones differ.
constexpr const char* kProductLabel = "nvidia.com/gpu.product";
// The chi-square bound of one degree of freedom at p = 0.001.
constexpr double kChiSquare1 = 10.83;
constexpr int kRequests = 1000;

// A CarbonWeighted pool of the pods labelled pool=`name` (zone a at 100 g/kWh, zone b at 200: the
// worker in zone a weighs 1000, the one in zone b 500, while their loads are alike), scraped every
// second; a request through the gateway counts as one token each way (the recipe drops the
// client's own sizing headers), so no worker's KV budget runs out.
json CarbonPool(const std::string& name) {
  json pool = testing::PoolOf(name, {{"intervalSeconds", 1}, {"timeoutSeconds", 1}});
  pool["spec"]["selector"] = {{"matchLabels", {{"pool", name}}}};
  pool["spec"]["routing"] = {{"strategy", "CarbonWeighted"},
                             {"sessionAffinity", {{"enabled", true}}},
                             {"defaultPromptTokens", 1},
                             {"defaultExpectedTokens", 1}};
  pool["spec"]["energy"] = {{"source", "Static"},
                            {"profiles", json::array({{{"accelerator", "GPU"},
                                                       {"idleWatts", 100},
                                                       {"maxWatts", 400},
                                                       {"maxTokensPerSecond", 2400}}})}};
  pool["spec"]["carbon"] = {{"static", {{"zone-a", 100}, {"zone-b", 200}}}};
  return pool;
}

class GatewayTest : public testing::FleetTest {
 protected:
  void SetUp() override {
    if (access(kNginx, X_OK) != 0) GTEST_SKIP() << kNginx << " is not installed";
    FleetTest::SetUp();
  }

  std::vector<testing::NodeSpec> Nodes() const override {
    std::vector<testing::NodeSpec> nodes;
    for (const char* zone : {"zone-a", "zone-b"}) {
      nodes.push_back({.name = testing::UniqueName(zone),
                       .labels = {{kRegionLabel, zone}, {kProductLabel, "NVIDIA-L4"}},
                       .gpus = 8});
    }
    return nodes;
  }

  // Renders and starts a recipe for pool `pool` of the test's namespace.
  std::unique_ptr<Nginx> Gateway(const std::string& pool,
                                 const std::string& recipe = "gateway-fail-closed.conf",
                                 int picker_port = 0, const std::string& fallback = "") {
    const int port = testing::FreePort();
    std::vector<std::string> placeholders{
        "PICKER=127.0.0.1:" + std::to_string(picker_port == 0 ? pick_port_ : picker_port),
        "POOL=" + ns_ + "/" + pool, "LISTEN=127.0.0.1:" + std::to_string(port)};
    if (!fallback.empty()) placeholders.push_back("FALLBACK=" + fallback);
    return std::make_unique<Nginx>(recipe, placeholders, port);
  }

  // One request on `client`: the status, and the fake worker that answered ("" for none).
  static std::pair<int, std::string> Send(RawClient& client, const std::string& request) {
    if (!client.Send(request)) return {0, ""};
    const auto response = client.ReadResponse();
    if (!response) return {0, ""};
    return {response->status, response->header("x-eoc-fake-worker")};
  }

  // Starts a worker in each zone (Deployments <pool>-a and <pool>-b, pods labelled pool=<pool>)
  // and the pool; waits for its table of both.
  void StartPool(const std::string& pool,
                 const std::map<std::string, std::string>& annotations = {}) {
    for (const char* zone : {"a", "b"}) {
      ASSERT_TRUE(client_->Create(
          resources::kDeployments, ns_,
          testing::WorkerDeployment(pool + "-" + zone, 1,
                                    {.pod_labels = {{"pool", pool}},
                                     .node_selector = {{kRegionLabel, std::string("zone-") + zone}},
                                     .pod_annotations = annotations})));
    }
    ASSERT_TRUE(client_->Create(testing::kPools, ns_, CarbonPool(pool)));
    ASSERT_EQ(AwaitRunningPods(pool + "-a", 1).size(), 1U);
    ASSERT_EQ(AwaitRunningPods(pool + "-b", 1).size(), 1U);
    ASSERT_TRUE(Eventually(
        [&] {
          const auto w = PublishedWeights(pool);
          return w && w->size() == 2;
        },
        kPatience))
        << controller_->Output();
  }
};

TEST_F(GatewayTest, SharesFollowTheEngineSessionsStickAndRefusalsKeepTheirStatus) {
  ASSERT_NO_FATAL_FAILURE(StartPool("w"));
  const std::string pod_a = AwaitRunningPods("w-a", 1).front();
  const std::string pod_b = AwaitRunningPods("w-b", 1).front();
  std::map<std::string, std::int64_t> weights;
  ASSERT_TRUE(Eventually(
      [&] {
        const auto w = PublishedWeights("w");
        if (w) weights = *w;
        return w && w->count(pod_a) == 1 && w->at(pod_a) == 1000 && w->count(pod_b) == 1 &&
               w->at(pod_b) == 500;
      },
      kPatience))
      << pod_a << "=" << weights[pod_a] << " " << pod_b << "=" << weights[pod_b] << "\n"
      << controller_->Output();

  // What the engine gives in-process for this table, these loads and this order: the mean share
  // over many runs of kRequests picks.
  constexpr int kRuns = 50;
  std::map<std::string, double> expected;
  for (int run = 0; run < kRuns; ++run) {
    routing::SessionBudget budget(1000);
    routing::PrefixBudget prefix_budget;
    routing::PoolState state({}, budget, prefix_budget);
    std::vector<routing::Worker> workers;
    for (const std::string& pod : {pod_a, pod_b}) {
      routing::Worker w;
      w.pod = ns_ + "/" + pod;
      w.key = routing::WorkerKeyOf(w.pod);
      w.address = pod;
      w.weight = static_cast<std::int32_t>(weights.at(pod));
      workers.push_back(std::move(w));
    }
    const auto now = std::chrono::steady_clock::now();
    state.SetSnapshot(routing::PoolSnapshot::Build(workers, 1, routing::Strategy::kCarbonWeighted),
                      now);
    for (const auto& w : workers) {
      state.ObserveLoad(
          w.key,
          {.kv_blocks_total = 8192, .kv_blocks_free = 8192, .block_size = 16, .available = true},
          now);
    }
    std::mt19937_64 rng(run);
    for (int i = 0; i < kRequests; ++i) {
      const auto out = state.TryPick({.prompt_tokens = 1, .expected_tokens = 1}, rng(), now);
      ASSERT_TRUE(out.picked());
      expected[out.worker().address] += 1.0 / kRuns;
    }
  }

  const auto gateway = Gateway("w");
  auto client = gateway->Connect();
  ASSERT_NE(client, nullptr);
  std::map<std::string, int> observed;
  for (int i = 0; i < kRequests; ++i) {
    const auto [status, worker] = Send(*client, Completion());
    ASSERT_EQ(status, 200) << "request " << i << "\n" << gateway->Output();
    ++observed[worker];
  }
  double chi_square = 0;
  for (const std::string& pod : {pod_a, pod_b}) {
    const double o = observed[ns_ + "/" + pod];
    const double e = expected[pod];
    chi_square += (o - e) * (o - e) / e;
  }
  EXPECT_LT(chi_square, kChiSquare1)
      << "a " << observed[ns_ + "/" + pod_a] << " of " << expected[pod_a] << ", b "
      << observed[ns_ + "/" + pod_b] << " of " << expected[pod_b];
  // Weights 2:1: the favoured worker takes more, near twice as many (binomial: 667 +- 15).
  EXPECT_GT(observed[ns_ + "/" + pod_a], 1.5 * observed[ns_ + "/" + pod_b])
      << "a " << observed[ns_ + "/" + pod_a] << ", b " << observed[ns_ + "/" + pod_b];

  // Sessions stick (on a new connection: nginx closes one after 1,000 requests).
  client = gateway->Connect();
  ASSERT_NE(client, nullptr);
  for (int s = 0; s < 5; ++s) {
    const std::string header = "x-session-id: user-" + std::to_string(s) + "\r\n";
    const auto [first_status, first] = Send(*client, Completion(header));
    ASSERT_EQ(first_status, 200);
    for (int i = 0; i < 20; ++i) EXPECT_EQ(Send(*client, Completion(header)).second, first);
  }

  // An empty pool (no worker, no autoscaling): the picker's 503, as a 503.
  ASSERT_TRUE(client_->Create(testing::kPools, ns_, CarbonPool("empty")));
  const auto empty = Gateway("empty");
  auto empty_client = empty->Connect();
  ASSERT_NE(empty_client, nullptr);
  ASSERT_TRUE(Eventually([&] { return Send(*empty_client, Completion()).first == 503; }, kPatience))
      << empty->Output();
}

TEST_F(GatewayTest, AFullQueueIs429AndAWaitPastItsDeadline504) {
  // Workers whose KV caches are full: every pick waits, one at most, for 2 s.
  ASSERT_NO_FATAL_FAILURE(StartPool("full", {{testing::kKvCacheUsageAnnotation, "1"}}));
  ASSERT_TRUE(client_->Patch(
      testing::kPools, ns_, "full", kube::PatchType::kMerge,
      {{"spec", {{"routing", {{"admission", {{"maxQueue", 1}, {"queueTimeoutSeconds", 2}}}}}}}}));
  const auto gateway = Gateway("full");
  auto waiting = gateway->Connect();
  auto other = gateway->Connect();
  ASSERT_NE(waiting, nullptr);
  ASSERT_NE(other, nullptr);
  ASSERT_TRUE(Eventually(
      [&] {
        // Until the pool's new admission settings and the full caches are in: one waits, the
        // next is shed.
        if (!waiting->Send(Completion())) return false;
        const auto [status, worker] = Send(*other, Completion());
        const auto late = waiting->ReadResponse();
        return status == 429 && late && late->status == 504;
      },
      kPatience))
      << gateway->Output() << controller_->Output();
}

// A client does not size its own request, nor name the end user it is: the recipe drops every
// x-eoc-* header the picker reads (and sets the fairness key itself), so the pool's defaults
// apply. Each header below, sent to the picker itself, is refused (400: more KV blocks than the
// largest worker holds, or malformed); sent through nginx, it never reaches the picker and the
// request is served.
TEST_F(GatewayTest, AClientsOwnSizingHeadersAreDroppedSoThePoolsDefaultsApply) {
  ASSERT_NO_FATAL_FAILURE(StartPool("w"));
  const auto gateway = Gateway("w");
  auto client = gateway->Connect();
  ASSERT_NE(client, nullptr);
  RawClient picker(static_cast<std::uint16_t>(pick_port_));
  for (const std::string& header : std::vector<std::string>{
           "x-eoc-prompt-tokens: 1000000000", "x-eoc-expected-tokens: 1000000000",
           "x-eoc-prefix-hashes: not-a-hash", "x-eoc-wait-ms: soon",
           "x-eoc-fairness-key: " + std::string(300, 'k')}) {
    // Once the workers' KV caches are scraped, a billion tokens are more than either holds.
    ASSERT_TRUE(Eventually(
        [&] {
          if (!picker.Send("GET /v1/pools/" + ns_ + "/w/pick HTTP/1.1\r\nHost: t\r\n" + header +
                           "\r\n\r\n")) {
            return false;
          }
          const auto refused = picker.ReadResponse();
          return refused && refused->status == 400;
        },
        kPatience))
        << header << "\n"
        << controller_->Output();
    const auto [status, worker] = Send(*client, Completion(header + "\r\n"));
    EXPECT_EQ(status, 200) << header << "\n" << gateway->Output();
    EXPECT_FALSE(worker.empty()) << header;
  }
}

TEST_F(GatewayTest, WithThePickerUnreachableFailOpenReachesTheFallbackAndFailClosedIs503) {
  ASSERT_NO_FATAL_FAILURE(StartPool("w"));
  const auto pods = AwaitRunningPods("w-a", 1);
  auto pod = client_->Get(resources::kPods, ns_, pods.front());
  ASSERT_TRUE(pod);
  const std::string fallback = (*pod)["status"].value("podIP", "") + ":8000";
  const int nobody = testing::FreePort();  // nothing listens there
  const auto open = Gateway("w", "gateway-fail-open.conf", nobody, fallback);
  const auto closed = Gateway("w", "gateway-fail-closed.conf", nobody);
  auto open_client = open->Connect();
  auto closed_client = closed->Connect();
  ASSERT_NE(open_client, nullptr);
  ASSERT_NE(closed_client, nullptr);
  const auto [open_status, open_worker] = Send(*open_client, Completion());
  EXPECT_EQ(open_status, 200) << open->Output();
  EXPECT_EQ(open_worker, ns_ + "/" + pods.front());
  EXPECT_EQ(Send(*closed_client, Completion()).first, 503) << closed->Output();
}

}  // namespace
}  // namespace eoc::controller
