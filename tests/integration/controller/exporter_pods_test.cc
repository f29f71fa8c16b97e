// ExporterPods against the shared real control plane: each pool's spec.energy.exporter pods come
// from one list and watch per namespace and selector that some pool names, shared between pools
// and stopped when the last one lets it go; a change of an exporter pod reconciles the pools that
// read it. The pods are plain Pods (no kubelet: they stay Pending, which is all a list needs).
#include "controller/exporter_pods.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "api/defaults.h"
#include "eventually.h"
#include "namespaced_test.h"

namespace eoc::controller {
namespace {

using nlohmann::json;
using testing::Eventually;
namespace resources = kube::resources;

constexpr auto kPatience = std::chrono::seconds(60);

class ExporterPodsTest : public testing::NamespacedTest {
 protected:
  void SetUp() override {
    NamespacedTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    Make({});
  }
  // Replaces exporters_ with one made with `options`.
  void Make(ExporterPodsOptions options) {
    exporters_.reset();
    exporters_ = std::make_unique<ExporterPods>(*client_, std::move(options), RealClock(),
                                                [this](const std::string& key) {
                                                  const std::lock_guard lock(mu_);
                                                  changed_.push_back(key);
                                                });
  }
  void TearDown() override {
    exporters_.reset();  // stops the watches
    NamespacedTest::TearDown();
  }

  void CreatePod(const std::string& ns, const std::string& name, const std::string& app) {
    const json pod = {
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"metadata", {{"name", name}, {"labels", {{"app", app}}}}},
        {"spec",
         {{"automountServiceAccountToken", false},
          {"containers", json::array({{{"name", "exporter"}, {"image", "exporter:latest"}}})}}}};
    auto created = client_->Create(resources::kPods, ns, pod);
    ASSERT_TRUE(created) << created.error().ToString();
  }

  // A pool named `name` in ns_ whose exporter is the pods labelled app=`app` in `exporter_ns`
  // ("": the pool's); `app` "": no exporter.
  api::InferencePool Pool(const std::string& name, const std::string& app,
                          const std::string& exporter_ns = "") const {
    api::InferencePool pool;
    pool.ns = ns_;
    pool.name = name;
    pool.spec = api::DefaultSpec();
    if (!app.empty()) {
      pool.spec.energy.exporter = api::EnergyExporterSpec{
          .namespace_name = exporter_ns,
          .selector = api::LabelSelector({{"app", api::LabelRequirement::Operator::kIn, {app}}}),
          .port = 9400,
          .path = "/metrics"};
    }
    return pool;
  }

  // The names of the pods Track gives `pool` once its watch has listed them all (`want`).
  bool Tracks(const std::string& key, const api::InferencePool& pool,
              const std::set<std::string>& want) {
    return Eventually(
        [&] {
          std::set<std::string> names;
          for (const auto& pod : exporters_->Track(key, pool).pods) names.insert(pod->name);
          return names == want;
        },
        kPatience);
  }

  std::size_t ChangedCount(const std::string& key) {
    const std::lock_guard lock(mu_);
    return static_cast<std::size_t>(std::count(changed_.begin(), changed_.end(), key));
  }

  std::mutex mu_;
  std::vector<std::string> changed_;  // guarded by mu_
  std::unique_ptr<ExporterPods> exporters_;
};

TEST_F(ExporterPodsTest, PoolsShareAWatchPerNamespaceAndSelectorUntilTheLastLetsItGo) {
  const std::string other_ns = testing::UniqueName("exp");
  ASSERT_TRUE(
      client_->Create(resources::kNamespaces, "", json{{"metadata", {{"name", other_ns}}}}));
  Make({.allowed_namespaces = {other_ns}});
  ASSERT_NO_FATAL_FAILURE(CreatePod(ns_, "dcgm-a", "dcgm"));
  ASSERT_NO_FATAL_FAILURE(CreatePod(ns_, "dcgm-b", "dcgm"));
  ASSERT_NO_FATAL_FAILURE(CreatePod(ns_, "kepler-a", "kepler"));
  ASSERT_NO_FATAL_FAILURE(CreatePod(other_ns, "dcgm-x", "dcgm"));
  const std::string one = ns_ + "/one";
  const std::string two = ns_ + "/two";

  // Two pools, one selector in the pools' namespace: one watch, the selected pods only.
  EXPECT_TRUE(Tracks(one, Pool("one", "dcgm"), {"dcgm-a", "dcgm-b"}));
  EXPECT_TRUE(Tracks(two, Pool("two", "dcgm"), {"dcgm-a", "dcgm-b"}));
  EXPECT_EQ(exporters_->Watches(), 1U);

  // A new exporter pod reconciles both pools, and is listed.
  const std::size_t before = ChangedCount(one);
  ASSERT_NO_FATAL_FAILURE(CreatePod(ns_, "dcgm-c", "dcgm"));
  EXPECT_TRUE(
      Eventually([&] { return ChangedCount(one) > before && ChangedCount(two) > 0; }, kPatience));
  EXPECT_TRUE(Tracks(one, Pool("one", "dcgm"), {"dcgm-a", "dcgm-b", "dcgm-c"}));

  // Pool one names another selector, then another namespace: a watch each, the last let go.
  EXPECT_TRUE(Tracks(one, Pool("one", "kepler"), {"kepler-a"}));
  EXPECT_EQ(exporters_->Watches(), 2U);
  EXPECT_TRUE(Tracks(one, Pool("one", "dcgm", other_ns), {"dcgm-x"}));
  EXPECT_EQ(exporters_->Watches(), 2U);  // two's, and other_ns's

  // Pool two goes, pool one names none: no watch is left.
  exporters_->Forget(two);
  EXPECT_EQ(exporters_->Watches(), 1U);
  EXPECT_TRUE(exporters_->Track(one, Pool("one", "")).pods.empty());
  EXPECT_EQ(exporters_->Watches(), 0U);
  exporters_->Forget(one);  // forgetting a pool with no watch is nothing
  EXPECT_EQ(exporters_->Watches(), 0U);

  (void)client_->Delete(resources::kNamespaces, "", other_ns);
}

// The pools of a namespace name at most 4 distinct exporters (the default): a fifth gets no watch
// and says which cap refused it; it gets one once a pool lets its own go.
TEST_F(ExporterPodsTest, APoolPastItsNamespacesCapGetsNoWatchUntilThereIsRoom) {
  ASSERT_NO_FATAL_FAILURE(CreatePod(ns_, "e-4", "e4"));
  for (int i = 0; i < 4; ++i) {
    const std::string name = "p" + std::to_string(i);
    EXPECT_EQ(exporters_->Track(ns_ + "/" + name, Pool(name, "e" + std::to_string(i))).refused, "");
  }
  EXPECT_EQ(exporters_->Watches(), 4U);
  const ExporterRead refused = exporters_->Track(ns_ + "/p4", Pool("p4", "e4"));
  EXPECT_NE(refused.refused.find("already uses 4 distinct exporters"), std::string::npos)
      << refused.refused;
  EXPECT_NE(refused.refused.find("--max-exporter-selectors-per-namespace"), std::string::npos)
      << refused.refused;
  EXPECT_TRUE(refused.pods.empty());
  EXPECT_EQ(exporters_->Watches(), 4U);

  exporters_->Forget(ns_ + "/p0");
  EXPECT_TRUE(Tracks(ns_ + "/p4", Pool("p4", "e4"), {"e-4"}));
  EXPECT_EQ(exporters_->Watches(), 4U);
}

// A pool reads exporter pods in its own namespace, or in one --exporter-namespaces allows: one
// naming any other gets no watch and no pods, and the answer names the namespace and the flag.
TEST_F(ExporterPodsTest, APoolNamingANamespaceNotAllowedGetsNoWatch) {
  const std::string other_ns = testing::UniqueName("exp");
  ASSERT_TRUE(
      client_->Create(resources::kNamespaces, "", json{{"metadata", {{"name", other_ns}}}}));
  ASSERT_NO_FATAL_FAILURE(CreatePod(other_ns, "dcgm-x", "dcgm"));
  ASSERT_NO_FATAL_FAILURE(CreatePod(ns_, "dcgm-a", "dcgm"));
  const std::string key = ns_ + "/p";

  const ExporterRead refused = exporters_->Track(key, Pool("p", "dcgm", other_ns));
  EXPECT_NE(refused.refused.find("namespace \"" + other_ns + "\" is not allowed"),
            std::string::npos)
      << refused.refused;
  EXPECT_NE(refused.refused.find("--exporter-namespaces"), std::string::npos) << refused.refused;
  EXPECT_TRUE(refused.pods.empty());
  EXPECT_EQ(exporters_->Watches(), 0U);
  // Still none later (no watch was started to fill in).
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_TRUE(exporters_->Track(key, Pool("p", "dcgm", other_ns)).pods.empty());

  // Its own namespace, named or not, is always allowed.
  EXPECT_TRUE(Tracks(key, Pool("p", "dcgm", ns_), {"dcgm-a"}));
  EXPECT_EQ(exporters_->Track(key, Pool("p", "dcgm")).refused, "");

  // Allowed (--exporter-namespaces), the other namespace's pods are read.
  Make({.allowed_namespaces = {other_ns}});
  EXPECT_TRUE(Tracks(key, Pool("p", "dcgm", other_ns), {"dcgm-x"}));

  (void)client_->Delete(resources::kNamespaces, "", other_ns);
}

}  // namespace
}  // namespace eoc::controller
