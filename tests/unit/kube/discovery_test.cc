#include "kube/discovery.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fake_transport.h"

namespace eoc::kube {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

constexpr const char* kAppsV1 = R"({"kind":"APIResourceList","groupVersion":"apps/v1",
  "resources":[
    {"name":"deployments","namespaced":true,"kind":"Deployment","verbs":["get","list","patch"]},
    {"name":"deployments/scale","namespaced":true,"group":"autoscaling","version":"v1","kind":"Scale"},
    {"name":"deployments/status","namespaced":true,"kind":"Deployment"},
    {"name":"controllerrevisions","namespaced":true,"kind":"ControllerRevision"}]})";

TEST(ParseApiResourceList, FoldsSubresources) {
  const auto resources = ParseApiResourceList(json::parse(kAppsV1));
  ASSERT_EQ(resources.size(), 2U);
  const ApiResource& d = resources[0];
  EXPECT_EQ(d.group, "apps");
  EXPECT_EQ(d.version, "v1");
  EXPECT_EQ(d.kind, "Deployment");
  EXPECT_EQ(d.name, "deployments");
  EXPECT_TRUE(d.namespaced);
  EXPECT_TRUE(d.has_scale);
  EXPECT_TRUE(d.has_status);
  EXPECT_EQ(d.verbs.size(), 3U);
  EXPECT_FALSE(resources[1].has_scale);
  EXPECT_EQ(d.Ref().CollectionPath("x"), "/apis/apps/v1/namespaces/x/deployments");
}

TEST(ParseApiResourceList, CoreGroupAndErrors) {
  const auto core = ParseApiResourceList(json::parse(
      R"({"groupVersion":"v1","resources":[{"name":"nodes","namespaced":false,"kind":"Node"}]})"));
  ASSERT_EQ(core.size(), 1U);
  EXPECT_EQ(core[0].group, "");
  EXPECT_FALSE(core[0].namespaced);
  try {
    ParseApiResourceList(json::parse(R"({"groupVersion":"v1","resources":[{"name":"x"}]})"));
    FAIL() << "expected MappingError";
  } catch (const MappingError& e) {
    EXPECT_THAT(e.what(), HasSubstr("resources[0].kind: missing"));
  }
}

TEST(Discovery, CachesAndRefetchesForAnUnknownKind) {
  ManualClock clock;
  testing::FakeClient fake(clock);
  testing::FakeTransport* transport = fake.transport;
  Discovery discovery(*fake.client);

  transport->Reply(200, kAppsV1);
  auto d = discovery.ResourceFor("apps/v1", "Deployment");
  ASSERT_TRUE(d) << d.error().ToString();
  EXPECT_TRUE(d->has_scale);
  EXPECT_EQ(transport->requests[0].path, "/apis/apps/v1");
  ASSERT_TRUE(discovery.ResourceFor("apps/v1", "ControllerRevision"));
  EXPECT_EQ(transport->requests.size(), 1U);  // served from the cache

  transport->Reply(200, kAppsV1);
  auto missing = discovery.ResourceFor("apps/v1", "StatefulSet");
  ASSERT_FALSE(missing);
  EXPECT_TRUE(missing.error().IsNotFound());
  EXPECT_THAT(missing.error().message, HasSubstr("StatefulSet"));
  EXPECT_EQ(transport->requests.size(), 2U);  // looked up once more, then gave up

  transport->Reply(200, R"({"groupVersion":"v1","resources":[]})");
  ASSERT_TRUE(discovery.Resources("v1"));
  EXPECT_EQ(transport->requests[2].path, "/api/v1");
}

}  // namespace
}  // namespace eoc::kube
