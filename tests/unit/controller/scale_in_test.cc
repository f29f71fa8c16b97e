// Which pods a workload removes when it scales in: the ReplicaSet controller's ranking of
// Kubernetes 1.20 step by step, the deletion-cost order of 1.22 and later, a StatefulSet's
// ordinals.
#include "controller/scale_in.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "controller/scale_client.h"

namespace eoc::controller {
namespace {

using std::chrono::seconds;
using Time = std::chrono::system_clock::time_point;
using Names = std::vector<std::string>;

const Time kT0{seconds(1'700'000'000)};

// A ready, Running pod on `node`, ready since and created at kT0 + `age_rank` seconds (so a
// larger age_rank is newer), no restarts.
ScaleInPod Ready(const std::string& name, const std::string& node, int age_rank = 0) {
  return {.name = name,
          .node = node,
          .phase = kube::PodPhase::kRunning,
          .ready = true,
          .ready_since = kT0 + seconds(age_rank),
          .created = kT0 + seconds(age_rank)};
}

Names Ranked(std::vector<ScaleInPod> pods, std::size_t count) {
  return PodsToDrain(ScaleInOrder::kReplicaSetRanking, std::move(pods), count);
}

TEST(ScaleInTest, TheOrderFollowsTheKindAndTheVersion) {
  EXPECT_EQ(ScaleInOrderFor("Deployment", 20), ScaleInOrder::kReplicaSetRanking);
  EXPECT_EQ(ScaleInOrderFor("Deployment", 21), ScaleInOrder::kReplicaSetRanking);
  EXPECT_EQ(ScaleInOrderFor("Deployment", 22), ScaleInOrder::kDeletionCost);
  EXPECT_EQ(ScaleInOrderFor("StatefulSet", 20), ScaleInOrder::kHighestOrdinal);
  EXPECT_EQ(ScaleInOrderFor("LeaderWorkerSet", 30), ScaleInOrder::kNone);
  EXPECT_TRUE(PodsToDrain(ScaleInOrder::kNone, {Ready("a", "n")}, 1).empty());
}

TEST(ScaleInTest, TheReplicaSetRemovesTheLeastAvailableFirst) {
  ScaleInPod unassigned = Ready("e", "");
  unassigned.phase = kube::PodPhase::kPending;
  unassigned.ready = false;
  ScaleInPod pending = Ready("d", "n1");
  pending.phase = kube::PodPhase::kPending;
  pending.ready = false;
  ScaleInPod unready = Ready("c", "n2");
  unready.ready = false;
  const std::vector<ScaleInPod> pods = {Ready("a", "n3"), unready, pending, unassigned,
                                        Ready("b", "n4")};
  EXPECT_EQ(Ranked(pods, 1), Names{"e"});
  EXPECT_EQ(Ranked(pods, 2), (Names{"e", "d"}));
  EXPECT_EQ(Ranked(pods, 3), (Names{"e", "d", "c"}));
}

TEST(ScaleInTest, ThenPodsDoubledUpOnANode) {
  // n1 holds two of the set's pods: one of them goes before the pod alone on n2.
  const std::vector<ScaleInPod> pods = {Ready("a", "n2", 9), Ready("b", "n1", 1),
                                        Ready("c", "n1", 2)};
  EXPECT_EQ(Ranked(pods, 1), Names{"c"});  // of the two, the more recently ready
}

TEST(ScaleInTest, ThenTheMostRecentlyReadyThenRestartsThenTheNewest) {
  std::vector<ScaleInPod> pods = {Ready("a", "n1", 1), Ready("b", "n2", 3), Ready("c", "n3", 2)};
  EXPECT_EQ(Ranked(pods, 1), Names{"b"});
  // Ready at the same time: more restarts first.
  pods = {Ready("a", "n1", 1), Ready("b", "n2", 1), Ready("c", "n3", 1)};
  pods[0].restarts = 3;
  EXPECT_EQ(Ranked(pods, 1), Names{"a"});
  // Then the newest.
  pods[0].restarts = 0;
  pods[2].created = kT0 + seconds(5);
  EXPECT_EQ(Ranked(pods, 1), Names{"c"});
  // A ready pod whose ready time is missing goes before those with one.
  pods[1].ready_since.reset();
  EXPECT_EQ(Ranked(pods, 1), Names{"b"});
}

TEST(ScaleInTest, PodsTiedWithTheLastRemovedAreAllDrained) {
  // Created and ready in the same second on nodes of their own: the controller's sort, which is
  // not stable, may remove any of the three tied ones.
  const std::vector<ScaleInPod> pods = {Ready("a", "n1", 1), Ready("b", "n2", 1),
                                        Ready("c", "n3", 1), Ready("old", "n4", 0)};
  EXPECT_EQ(Ranked(pods, 1), (Names{"a", "b", "c"}));
  EXPECT_EQ(Ranked(pods, 3), (Names{"a", "b", "c"}));
  EXPECT_EQ(Ranked(pods, 4).size(), 4U);
}

TEST(ScaleInTest, WithDeletionCostsTheLeastLoadedReadyPodsGo) {
  std::vector<ScaleInPod> pods = {Ready("a", "n1"), Ready("b", "n1"), Ready("c", "n2"),
                                  Ready("d", "n3")};
  pods[0].load = 12;
  pods[1].load = 3;
  pods[2].load = 0;
  pods[3].load = 7;
  EXPECT_EQ(PodsToDrain(ScaleInOrder::kDeletionCost, pods, 2), (Names{"c", "b"}));
  // A pod that is not ready goes first whatever its cost.
  pods[0].ready = false;
  EXPECT_EQ(PodsToDrain(ScaleInOrder::kDeletionCost, pods, 2), (Names{"a", "c"}));
}

TEST(ScaleInTest, AStatefulSetRemovesItsHighestOrdinals) {
  const std::vector<ScaleInPod> pods = {Ready("db-2", "n"), Ready("db-10", "n"), Ready("db-9", "n"),
                                        Ready("db-0", "n")};
  EXPECT_EQ(PodsToDrain(ScaleInOrder::kHighestOrdinal, pods, 2), (Names{"db-10", "db-9"}));
  EXPECT_EQ(PodsToDrain(ScaleInOrder::kHighestOrdinal, pods, 0), Names{});
  EXPECT_EQ(PodsToDrain(ScaleInOrder::kHighestOrdinal, pods, 9).size(), 4U);
}

TEST(ScaleInTest, APodViewIsReadAsTheOrdersNeedIt) {
  kube::PodView pod;
  pod.name = "w-1";
  pod.node_name = "node-b";
  pod.phase = kube::PodPhase::kRunning;
  pod.ready = true;
  pod.ready_since = kT0 + seconds(5);
  pod.created = kT0;
  pod.restarts = 3;
  const ScaleInPod p = ScaleInPodOf(pod, 7);
  EXPECT_EQ(p.name, "w-1");
  EXPECT_EQ(p.node, "node-b");
  EXPECT_EQ(p.phase, kube::PodPhase::kRunning);
  EXPECT_TRUE(p.ready);
  EXPECT_EQ(p.ready_since, kT0 + seconds(5));
  EXPECT_EQ(p.created, kT0);
  EXPECT_EQ(p.restarts, 3);
  EXPECT_EQ(p.load, 7);
  EXPECT_TRUE(IsActive(pod));
  pod.phase = kube::PodPhase::kSucceeded;
  EXPECT_FALSE(IsActive(pod));
  pod.phase = kube::PodPhase::kPending;
  EXPECT_TRUE(IsActive(pod));
  pod.deletion_timestamp = kT0;
  EXPECT_FALSE(IsActive(pod));
}

TEST(ScaleInTest, TheServersMinorVersionIsReadFromVersion) {
  EXPECT_EQ(*ParseServerMinor({{"major", "1"}, {"minor", "20"}}), 20);
  EXPECT_EQ(*ParseServerMinor({{"major", "1"}, {"minor", "22+"}}), 22);  // as GKE and EKS say
  const auto missing = ParseServerMinor({{"major", "1"}});
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().ToString().find("/version: its minor is not a version number: ''"),
            std::string::npos)
      << missing.error().ToString();
  EXPECT_FALSE(ParseServerMinor({{"minor", 22}}));
  EXPECT_FALSE(ParseServerMinor(nlohmann::json::array()));
}

}  // namespace
}  // namespace eoc::controller
