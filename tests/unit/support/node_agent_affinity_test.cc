// The node agent's reading of a pod's required node affinity: the DaemonSet controller's pin to
// one node (matchFields metadata.name), label expressions, and requirements it cannot evaluate.
#include "node_agent_affinity.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "node_agent_pods.h"

namespace eoc::testing::internal {
namespace {

using nlohmann::json;

const std::map<std::string, std::string> kLabels = {
    {"kubernetes.io/hostname", "gpu-a"}, {"nvidia.com/gpu.count", "8"}, {"zone", "eu-north-1a"}};

RequiredNodeAffinity Parse(const json& terms) {
  const json spec = {
      {"affinity",
       {{"nodeAffinity",
         {{"requiredDuringSchedulingIgnoredDuringExecution", {{"nodeSelectorTerms", terms}}}}}}}};
  return ParseRequiredNodeAffinity(&spec);
}

json Requirement(const std::string& key, const std::string& op, const json& values = nullptr) {
  json r = {{"key", key}, {"operator", op}};
  if (!values.is_null()) r["values"] = values;
  return r;
}

TEST(NodeAffinity, AbsentMatchesEveryNode) {
  const json spec = {{"containers", json::array()}};
  const RequiredNodeAffinity a = ParseRequiredNodeAffinity(&spec);
  EXPECT_FALSE(a.present);
  EXPECT_TRUE(a.problem.empty());
  EXPECT_TRUE(a.Matches("gpu-a", kLabels));
  EXPECT_TRUE(ParseRequiredNodeAffinity(nullptr).Matches("gpu-a", {}));
}

TEST(NodeAffinity, DaemonSetPodIsPinnedToItsNodeByName) {
  // What the DaemonSet controller (1.20, ReplaceDaemonSetPodNodeNameNodeAffinity) writes.
  const json pod = json::parse(R"({
    "metadata": {"name": "dcgm-exporter-x7k2p", "namespace": "ns", "uid": "u1"},
    "spec": {
      "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [
          {"key": "metadata.name", "operator": "In", "values": ["gpu-b"]}]}]}}},
      "tolerations": [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
        {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}],
      "containers": [{"name": "exporter", "image": "nvcr.io/nvidia/k8s/dcgm-exporter"}]}})");
  const AgentPod p = ToAgentPod(pod);
  EXPECT_TRUE(p.affinity.present);
  EXPECT_TRUE(p.affinity.problem.empty()) << p.affinity.problem;
  EXPECT_TRUE(p.node_name.empty());
  EXPECT_FALSE(p.affinity.Matches("gpu-a", kLabels));
  EXPECT_TRUE(p.affinity.Matches("gpu-b", {}));
}

TEST(NodeAffinity, TermsAreOredAndRequirementsAnded) {
  const RequiredNodeAffinity a = Parse(json::array(
      {{{"matchExpressions", json::array({Requirement("zone", "In", {"eu-west-1a"})})}},
       {{"matchExpressions", json::array({Requirement("zone", "In", {"eu-north-1a"}),
                                          Requirement("nvidia.com/gpu.count", "Gt", {"4"})})},
        {"matchFields", json::array({Requirement("metadata.name", "NotIn", {"gpu-c"})})}}}));
  ASSERT_TRUE(a.problem.empty()) << a.problem;
  EXPECT_TRUE(a.Matches("gpu-a", kLabels));
  EXPECT_FALSE(a.Matches("gpu-c", kLabels));  // the second term's field fails, the first's label
  EXPECT_FALSE(a.Matches("gpu-a", {{"zone", "eu-north-1a"}, {"nvidia.com/gpu.count", "2"}}));
  EXPECT_TRUE(a.Matches("gpu-z", {{"zone", "eu-west-1a"}}));
}

TEST(NodeAffinity, LabelOperators) {
  const auto matches = [](const json& requirement) {
    const RequiredNodeAffinity a =
        Parse(json::array({{{"matchExpressions", json::array({requirement})}}}));
    EXPECT_TRUE(a.problem.empty()) << a.problem;
    return a.Matches("gpu-a", kLabels);
  };
  EXPECT_TRUE(matches(Requirement("zone", "In", {"x", "eu-north-1a"})));
  EXPECT_FALSE(matches(Requirement("zone", "In", {"x"})));
  EXPECT_FALSE(matches(Requirement("zone", "NotIn", {"eu-north-1a"})));
  EXPECT_TRUE(matches(Requirement("missing", "NotIn", {"a"})));  // absent: not in
  EXPECT_FALSE(matches(Requirement("missing", "In", {"a"})));
  EXPECT_TRUE(matches(Requirement("zone", "Exists")));
  EXPECT_FALSE(matches(Requirement("missing", "Exists")));
  EXPECT_TRUE(matches(Requirement("missing", "DoesNotExist")));
  EXPECT_FALSE(matches(Requirement("zone", "DoesNotExist")));
  EXPECT_TRUE(matches(Requirement("nvidia.com/gpu.count", "Lt", {"9"})));
  EXPECT_FALSE(matches(Requirement("nvidia.com/gpu.count", "Gt", {"8"})));
  EXPECT_FALSE(matches(Requirement("zone", "Gt", {"1"})));  // not an integer label: false
}

TEST(NodeAffinity, AnEmptyTermMatchesNoNode) {
  EXPECT_FALSE(Parse(json::array({json::object()})).Matches("gpu-a", kLabels));
  EXPECT_FALSE(Parse(json::array()).Matches("gpu-a", kLabels));
}

TEST(NodeAffinity, WhatCannotBeEvaluatedIsAProblemAndMatchesNothing) {
  const auto problem = [](const json& terms) {
    const RequiredNodeAffinity a = Parse(terms);
    EXPECT_TRUE(a.present);
    EXPECT_FALSE(a.Matches("gpu-a", kLabels));
    return a.problem;
  };
  EXPECT_EQ(
      problem(json::array({{{"matchFields", json::array({Requirement("spec.x", "In", {"a"})})}}})),
      "matchFields spec.x In: only the field metadata.name is supported");
  EXPECT_EQ(problem(json::array(
                {{{"matchFields", json::array({Requirement("metadata.name", "Exists")})}}})),
            "matchFields metadata.name Exists: a field takes In or NotIn only");
  EXPECT_EQ(problem(json::array(
                {{{"matchExpressions", json::array({Requirement("zone", "Near", {"a"})})}}})),
            "matchExpressions zone Near: unknown operator");
  EXPECT_EQ(
      problem(json::array({{{"matchExpressions", json::array({Requirement("zone", "In")})}}})),
      "matchExpressions zone In: needs values");
  EXPECT_EQ(problem(json::array(
                {{{"matchExpressions", json::array({Requirement("zone", "Gt", {"a"})})}}})),
            "matchExpressions zone Gt: needs one integer value");
  EXPECT_EQ(problem(json::array({{{"matchExpressions", "zone"}}})),
            "matchExpressions is not a list");
  EXPECT_EQ(problem(json::array({"term"})), "nodeSelectorTerms has an entry that is not an object");
  const json spec = {
      {"affinity", {{"nodeAffinity", {{"requiredDuringSchedulingIgnoredDuringExecution", 3}}}}}};
  EXPECT_FALSE(ParseRequiredNodeAffinity(&spec).problem.empty());
}

}  // namespace
}  // namespace eoc::testing::internal
