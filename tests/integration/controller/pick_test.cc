// The pick endpoint end to end: eoc-controller binaries on the shared control plane, the node
// agent playing the kubelet with fake vLLM workers. A pick answers a live worker's address; once
// the controller has seen a pod go, no pick answers it; two controllers (one leader) place 10,000
// new sessions alike from the published table; and SIGKILLing the leader leaves the other serving
// picks throughout. Assertions are on answers, never on how fast they came.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <csignal>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "eventually.h"
#include "fleet_test.h"
#include "manifests.h"
#include "raw_client.h"

namespace eoc::controller {
namespace {

using nlohmann::json;
using testing::Eventually;
using testing::kPatience;
using testing::RawClient;
using testing::Sample;
namespace resources = kube::resources;

using testing::kPools;

// A RoundRobin pool of `app`, scraped every second, whose weights never move its table (each
// worker weighs 1000 whatever its load: a publishThreshold of the whole scale), so that every
// replica routes from one unchanging table while the test picks.
json Pool(const std::string& app) {
  json pool = testing::PoolOf(app, {{"intervalSeconds", 1}, {"timeoutSeconds", 1}});
  pool["spec"]["routing"] = {{"strategy", "RoundRobin"},
                             {"maxConcurrencyPerWorker", 1000000},
                             {"publishThreshold", 1000},
                             {"sessionAffinity", {{"enabled", true}}}};
  return pool;
}

// A JSON pick of one token in and one out: far from any KV budget (a fake worker has 8,192 blocks
// of 16 tokens), so that the same workers have room on every replica and placement is the
// consistent-hash table's alone.
std::string PickRequest(const std::string& pool, const std::string& session = "") {
  json body = {{"pool", pool}, {"prompt_tokens", 1}, {"expected_tokens", 1}};
  if (!session.empty()) body["session_id"] = session;
  const std::string text = body.dump();
  return "POST /v1/pick HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(text.size()) +
         "\r\n\r\n" + text;
}

class PickIntegrationTest : public testing::FleetTest {
 protected:
  std::vector<std::string> ControllerFlags() const override {
    return {"--leader-elect", "--leader-election-namespace", ns_, "--leader-election-id",
            "eoc-" + ns_};
  }

  // The pod IP:8000 of each Running pod of `app`.
  std::set<std::string> Addresses(const std::string& app) const {
    std::set<std::string> out;
    auto list = client_->List(resources::kPods, ns_, {.label_selector = "app=" + app});
    if (!list) return out;
    for (const json& pod : list->items) {
      if (pod.contains("status") && pod["status"].value("phase", "") == "Running") {
        out.insert(pod["status"].value("podIP", "") + ":8000");
      }
    }
    return out;
  }

  // One JSON pick on `client`'s connection: its parsed answer, or null when it was not a 200.
  static json Pick(RawClient& client, const std::string& pool, const std::string& session = "") {
    if (!client.Send(PickRequest(pool, session))) return nullptr;
    const auto response = client.ReadResponse();
    if (!response || response->status != 200) return nullptr;
    return json::parse(response->body, nullptr, /*allow_exceptions=*/false);
  }

  std::string Key(const std::string& pool) const { return ns_ + "/" + pool; }
};

TEST_F(PickIntegrationTest, APickAnswersALiveWorkerAndNeverOneTheControllerSawGo) {
  ASSERT_TRUE(client_->Create(resources::kDeployments, ns_, testing::WorkerDeployment("w", 3)));
  ASSERT_TRUE(client_->Create(kPools, ns_, Pool("w")));
  ASSERT_EQ(AwaitRunningPods("w", 3).size(), 3U);
  ASSERT_TRUE(Eventually(
      [&] {
        const auto w = PublishedWeights("w");
        return w && w->size() == 3;
      },
      kPatience))
      << controller_->Output();
  const std::set<std::string> before = Addresses("w");
  ASSERT_EQ(before.size(), 3U);
  RawClient client(static_cast<std::uint16_t>(pick_port_));
  // The controller routes from the table once its own informer has seen it, which may be a
  // moment after this test's read of it.
  ASSERT_TRUE(Eventually([&] { return Pick(client, Key("w")).is_object(); }, kPatience))
      << controller_->Output();
  std::set<std::string> answered;
  for (int i = 0; i < 30; ++i) {
    const json answer = Pick(client, Key("w"));
    ASSERT_TRUE(answer.is_object()) << controller_->Output();
    EXPECT_EQ(answer["reason"], "strategy");
    answered.insert(answer.value("endpoint", ""));
  }
  EXPECT_EQ(answered, before) << "round robin over the three live workers";

  // One pod goes (the Deployment scales down): once the controller counts two workers, no pick
  // answers the one that went.
  ASSERT_TRUE(client_->Patch(resources::kDeployments, ns_, "w", kube::PatchType::kMerge,
                             {{"spec", {{"replicas", 2}}}}));
  std::set<std::string> after;
  ASSERT_TRUE(Eventually(
      [&] {
        after = Addresses("w");
        return after.size() == 2;
      },
      kPatience));
  const std::string workers = "eoc_pool_workers{namespace=\"" + ns_ + R"(",pool="w"})";
  ASSERT_TRUE(Eventually([&] { return Sample(Metrics(), workers) == 2; }, kPatience)) << Metrics();
  std::string gone;
  for (const std::string& address : before) {
    if (!after.contains(address)) gone = address;
  }
  ASSERT_FALSE(gone.empty());
  for (int i = 0; i < 200; ++i) {
    const json answer = Pick(client, Key("w"));
    ASSERT_TRUE(answer.is_object());
    ASSERT_NE(answer.value("endpoint", ""), gone) << "pick " << i;
    EXPECT_TRUE(after.contains(answer.value("endpoint", "")));
  }
}

TEST_F(PickIntegrationTest, TwoReplicasPlaceNewSessionsAlikeAndTheFollowerOutlivesTheLeader) {
  ASSERT_TRUE(client_->Create(resources::kDeployments, ns_, testing::WorkerDeployment("w", 4)));
  ASSERT_TRUE(client_->Create(kPools, ns_, Pool("w")));
  ASSERT_EQ(AwaitRunningPods("w", 4).size(), 4U);
  std::int64_t generation = 0;
  ASSERT_TRUE(Eventually(
      [&] {
        const auto w = PublishedWeights("w", &generation);
        return w && w->size() == 4;
      },
      kPatience))
      << controller_->Output();

  // A second replica, as the first: the same Lease, its own addresses.
  const int second_pick_port = testing::FreePort();
  const int second_metrics_port = testing::FreePort();
  auto second = std::make_unique<testing::ChildProcess>(
      ControllerArgs(second_metrics_port, second_pick_port), /*merge_stderr=*/true);

  RawClient a(static_cast<std::uint16_t>(pick_port_));
  std::unique_ptr<RawClient> b;
  // Both route from the same published generation.
  ASSERT_TRUE(Eventually(
      [&] {
        if (!b) {
          try {
            b = std::make_unique<RawClient>(static_cast<std::uint16_t>(second_pick_port));
          } catch (const std::runtime_error&) {
            return false;  // not listening yet
          }
        }
        const json answer = Pick(*b, Key("w"));
        return answer.is_object() && answer.value("generation", std::int64_t{0}) == generation;
      },
      kPatience))
      << second->Output();

  int agreed = 0;
  for (int i = 0; i < 10'000; ++i) {
    const std::string session = "session-" + std::to_string(i);
    const json first = Pick(a, Key("w"), session);
    const json other = Pick(*b, Key("w"), session);
    ASSERT_TRUE(first.is_object() && other.is_object()) << "session " << i;
    ASSERT_EQ(first.value("generation", std::int64_t{0}), generation) << "the table moved";
    ASSERT_EQ(other.value("generation", std::int64_t{0}), generation) << "the table moved";
    EXPECT_EQ(first["reason"], "session");
    if (first.value("pod", "") == other.value("pod", "")) ++agreed;
  }
  EXPECT_EQ(agreed, 10'000);

  // SIGKILL the leader; the other answers every pick throughout, before and after.
  const std::string leading = "eoc_leader_election_leading{lease=\"eoc-" + ns_ + "\"}";
  const bool first_leads = Sample(Metrics(), leading) == 1;
  ASSERT_TRUE(first_leads ||
              Sample(testing::HttpGet(second_metrics_port, "/metrics").body, leading) == 1);
  std::unique_ptr<testing::ChildProcess>& leader = first_leads ? controller_ : second;
  RawClient& survivor = first_leads ? *b : a;
  leader->Signal(SIGKILL);
  (void)leader->WaitFor(std::chrono::seconds(30));
  leader.reset();  // killed: no clean exit to check
  // Throughout: from the kill until the survivor has taken the Lease over (15 to 20 s), and on.
  const int survivor_metrics = first_leads ? second_metrics_port : metrics_port_;
  int picks = 0;
  const bool took_over = Eventually(
      [&] {
        for (int i = 0; i < 100; ++i, ++picks) {
          const json answer = Pick(survivor, Key("w"), "after-" + std::to_string(picks));
          if (!answer.is_object()) {
            ADD_FAILURE() << "pick " << picks << " after the leader died was not answered";
            return true;
          }
        }
        return Sample(testing::HttpGet(survivor_metrics, "/metrics").body, leading) == 1;
      },
      kPatience);
  EXPECT_TRUE(took_over);
  EXPECT_GT(picks, 1000);
  if (!first_leads) {
    second->Signal(SIGTERM);
    const auto status = second->WaitFor(std::chrono::seconds(30));
    EXPECT_TRUE(status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << second->Output();
  }
}

}  // namespace
}  // namespace eoc::controller
