// Which namespaces a pool's spec.energy.exporter may name: its own, and those the operator allows
// (--exporter-namespaces); ExporterPods starts no watch for any other, and says why.
#include "controller/exporter_pods.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "api/defaults.h"
#include "common/clock.h"
#include "fake_transport.h"

namespace eoc::controller {
namespace {

using ::testing::HasSubstr;

// A pool in "team-a" whose exporter is the app=dcgm pods of `exporter_ns` ("": the pool's).
api::InferencePool Pool(const std::string& exporter_ns) {
  api::InferencePool pool;
  pool.ns = "team-a";
  pool.name = "chat";
  pool.spec = api::DefaultSpec();
  pool.spec.energy.exporter = api::EnergyExporterSpec{
      .namespace_name = exporter_ns,
      .selector = api::LabelSelector({{"app", api::LabelRequirement::Operator::kIn, {"dcgm"}}}),
      .port = 9400,
      .path = "/metrics"};
  return pool;
}

TEST(ExporterNamespaceRefusalTest, ItsOwnNamespaceOrAnAllowedOne) {
  const std::set<std::string> allowed = {"gpu-operator"};
  EXPECT_EQ(ExporterNamespaceRefusal(Pool(""), {}), "");
  EXPECT_EQ(ExporterNamespaceRefusal(Pool("team-a"), {}), "");
  EXPECT_EQ(ExporterNamespaceRefusal(Pool("gpu-operator"), allowed), "");
  api::InferencePool none = Pool("");
  none.spec.energy.exporter.reset();
  EXPECT_EQ(ExporterNamespaceRefusal(none, {}), "");

  EXPECT_EQ(ExporterNamespaceRefusal(Pool("team-b"), allowed),
            "its namespace \"team-b\" is not allowed: a pool reads exporter pods in its own "
            "namespace, or in one that --exporter-namespaces names (the chart's "
            "rbac.exporterNamespaces)");
  EXPECT_THAT(ExporterNamespaceRefusal(Pool("gpu-operator"), {}), HasSubstr("\"gpu-operator\""));
}

// A pool naming a namespace not allowed gets no watch, whatever watches the others have, and is
// not counted at its namespace's cap; allowed, it is watched.
TEST(ExporterPodsTest, ANamespaceNotAllowedStartsNoWatch) {
  const ManualClock clock;
  kube::testing::FakeClient kube(clock);
  ExporterPods refusing(*kube.client, {.max_selectors_per_namespace = 1}, clock, {});
  const ExporterRead read = refusing.Track("team-a/chat", Pool("kube-system"));
  EXPECT_TRUE(read.not_allowed);
  EXPECT_THAT(read.refused, HasSubstr("its namespace \"kube-system\" is not allowed"));
  EXPECT_TRUE(read.pods.empty());
  EXPECT_EQ(refusing.Watches(), 0U);
  // The refused one took no place at the cap of 1: another pool's own exporter is watched.
  EXPECT_EQ(refusing.Track("team-a/other", Pool("")).refused, "");
  EXPECT_EQ(refusing.Watches(), 1U);
  EXPECT_THAT(kube.transport->Paths(),
              ::testing::Not(::testing::Contains(HasSubstr("/namespaces/kube-system/"))));

  ExporterPods allowing(*kube.client, {.allowed_namespaces = {"gpu-operator"}}, clock, {});
  const ExporterRead allowed = allowing.Track("team-a/chat", Pool("gpu-operator"));
  EXPECT_EQ(allowed.refused, "");
  EXPECT_FALSE(allowed.not_allowed);
  EXPECT_EQ(allowing.Watches(), 1U);
}

}  // namespace
}  // namespace eoc::controller
