#include "kube/client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>

#include "clock_steps.h"
#include "fake_transport.h"

namespace eoc::kube {
namespace {

using nlohmann::json;
using testing::AwaitSleep;
using testing::CallAdvancing;
using ::testing::ElementsAre;
using testing::FakeClient;
using testing::FakeTransport;
using ::testing::HasSubstr;

class ClientTest : public ::testing::Test {
 protected:
  ClientTest() { MakeClient(FakeClient::Unlimited()); }  // no rate limit unless a test sets one

  void MakeClient(const ClientOptions& options) {
    fake_ = std::make_unique<FakeClient>(clock_, options);
    transport_ = fake_->transport;
    client_ = fake_->client.get();
  }

  // GetPath on a thread of its own, the clock moved on over each of its waits (into slept_).
  Result<nlohmann::json> GetPathAdvancing(const std::string& path) {
    return CallAdvancing(
        clock_, [&] { return client_->GetPath(path); }, &slept_);
  }

  ManualClock clock_;
  std::unique_ptr<FakeClient> fake_;
  FakeTransport* transport_ = nullptr;
  Client* client_ = nullptr;
  std::vector<std::chrono::nanoseconds> slept_;
};

TEST_F(ClientTest, GetBuildsPathAndParses) {
  transport_->Reply(200, R"({"metadata":{"name":"web"}})");
  auto r = client_->Get(resources::kDeployments, "prod", "web");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ((*r)["metadata"]["name"], "web");
  ASSERT_EQ(transport_->requests.size(), 1U);
  EXPECT_EQ(transport_->requests[0].method, "GET");
  EXPECT_EQ(transport_->requests[0].path, "/apis/apps/v1/namespaces/prod/deployments/web");
}

TEST_F(ClientTest, ErrorsDecodeStatus) {
  transport_->Reply(404, R"({"kind":"Status","code":404,"reason":"NotFound",
      "message":"deployments.apps \"web\" not found"})");
  auto r = client_->Get(resources::kDeployments, "prod", "web");
  ASSERT_FALSE(r);
  EXPECT_TRUE(r.error().IsNotFound());
  EXPECT_EQ(r.error().message, "deployments.apps \"web\" not found");
}

TEST_F(ClientTest, TransportFailuresBecomeStatus) {
  transport_->Fail(kReasonTimeout, "GET https://x/api: timed out");
  auto r = client_->GetPath("/api");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, 0);
  EXPECT_EQ(r.error().reason, kReasonTimeout);
}

TEST_F(ClientTest, NonJsonSuccessIsAnError) {
  transport_->Reply(200, "<html>");
  auto r = client_->GetPath("/version");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().reason, "InvalidResponse");
}

TEST_F(ClientTest, GetTextReturnsTheBodyAsItCame) {
  transport_->Reply(200, "# HELP up\nup 1\n");
  auto r = client_->GetText("/api/v1/namespaces/ns/pods/w-0:8000/proxy/metrics",
                            "text/plain;version=0.0.4", std::chrono::milliseconds(2000));
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(*r, "# HELP up\nup 1\n");
  ASSERT_EQ(transport_->requests.size(), 1U);
  EXPECT_EQ(transport_->requests[0].path, "/api/v1/namespaces/ns/pods/w-0:8000/proxy/metrics");
  EXPECT_EQ(transport_->requests[0].accept, "text/plain;version=0.0.4");
  EXPECT_EQ(transport_->requests[0].deadline, std::chrono::milliseconds(2000));
}

TEST_F(ClientTest, GetTextErrorsDecodeStatus) {
  transport_->Reply(503, R"({"kind":"Status","code":503,"reason":"ServiceUnavailable",
      "message":"error trying to reach service: dial tcp 10.0.0.5:8000: connect: connection refused"})");
  auto r = client_->GetText("/api/v1/namespaces/ns/pods/w-0:8000/proxy/metrics", "", {});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, 503);
  EXPECT_THAT(r.error().message, HasSubstr("connection refused"));
  EXPECT_FALSE(client_->GetText("metrics", "", {}));  // not under the root: refused unsent
  EXPECT_EQ(transport_->requests.size(), 1U);
}

TEST_F(ClientTest, ListQueryIsEncoded) {
  transport_->Reply(200, R"({"metadata":{"resourceVersion":"7"},"items":[]})");
  ListOptions o;
  o.label_selector = "app=web,tier in (a,b)";
  o.field_selector = "status.phase=Running";
  o.limit = 50;
  o.continue_token = "abc==";
  auto r = client_->List(resources::kPods, "", o);
  ASSERT_TRUE(r);
  EXPECT_EQ(transport_->requests[0].path,
            "/api/v1/pods?labelSelector=app%3Dweb%2Ctier%20in%20%28a%2Cb%29"
            "&fieldSelector=status.phase%3DRunning&limit=50&continue=abc%3D%3D");
}

TEST_F(ClientTest, ListAllFollowsContinue) {
  transport_->Reply(200, R"({"metadata":{"resourceVersion":"10","continue":"p2"},
      "items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]})");
  transport_->Reply(200,
                    R"({"metadata":{"resourceVersion":"10"},"items":[{"metadata":{"name":"c"}}]})");
  auto r = client_->ListAll(resources::kPods, "default", {.limit = 2});
  ASSERT_TRUE(r) << r.error().ToString();
  ASSERT_EQ(r->items.size(), 3U);
  EXPECT_EQ(r->items[2]["metadata"]["name"], "c");
  EXPECT_EQ(r->resource_version, "10");
  EXPECT_EQ(transport_->requests[1].path, "/api/v1/namespaces/default/pods?limit=2&continue=p2");
}

// The API server refuses a page that carries both continue and a resourceVersion (400, "specifying
// resource version is not allowed when using continue"): the version goes with the first page only.
TEST_F(ClientTest, ListAllSendsTheVersionWithTheFirstPageOnly) {
  transport_->Reply(200, R"({"metadata":{"resourceVersion":"42","continue":"p2"},"items":[]})");
  transport_->Reply(200, R"({"metadata":{"resourceVersion":"42","continue":"p3"},"items":[]})");
  transport_->Reply(200, R"({"metadata":{"resourceVersion":"42"},"items":[]})");
  auto r = client_->ListAll(resources::kPods, "default", {.limit = 2, .resource_version = "40"});
  ASSERT_TRUE(r) << r.error().ToString();
  ASSERT_EQ(transport_->requests.size(), 3U);
  EXPECT_EQ(transport_->requests[0].path,
            "/api/v1/namespaces/default/pods?resourceVersion=40&limit=2");
  EXPECT_EQ(transport_->requests[1].path, "/api/v1/namespaces/default/pods?limit=2&continue=p2");
  EXPECT_EQ(transport_->requests[2].path, "/api/v1/namespaces/default/pods?limit=2&continue=p3");
}

// As client-go's pager: a continue token that expired mid-list falls back to one full list at the
// version first asked for.
TEST_F(ClientTest, ListAllListsEverythingWhenAContinueTokenExpires) {
  transport_->Reply(200, R"({"metadata":{"resourceVersion":"42","continue":"p2"},
      "items":[{"metadata":{"name":"a"}}]})");
  transport_->Reply(410, R"({"kind":"Status","code":410,"reason":"Expired","message":"too old"})");
  transport_->Reply(200, R"({"metadata":{"resourceVersion":"50"},
      "items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]})");
  auto r = client_->ListAll(resources::kPods, "default", {.limit = 1, .resource_version = "40"});
  ASSERT_TRUE(r) << r.error().ToString();
  ASSERT_EQ(r->items.size(), 2U);
  EXPECT_EQ(r->resource_version, "50");
  ASSERT_EQ(transport_->requests.size(), 3U);
  EXPECT_EQ(transport_->requests[2].path, "/api/v1/namespaces/default/pods?resourceVersion=40");
}

// A 410 on the first page is the caller's: its version is gone (the reflector relists from "").
TEST_F(ClientTest, ListAllReturnsAnExpiredFirstPage) {
  transport_->Reply(410, R"({"kind":"Status","code":410,"reason":"Expired","message":"too old"})");
  auto r = client_->ListAll(resources::kPods, "default", {.resource_version = "40"});
  ASSERT_FALSE(r);
  EXPECT_TRUE(r.error().IsGone());
  EXPECT_EQ(transport_->requests.size(), 1U);
}

TEST_F(ClientTest, UpdateUsesTheObjectsNameAndRefusesNone) {
  transport_->Reply(200, R"({"metadata":{"name":"web","resourceVersion":"2"}})");
  auto ok = client_->Update(resources::kDeployments, "default",
                            json{{"metadata", {{"name", "web"}, {"resourceVersion", "1"}}}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(transport_->requests[0].method, "PUT");
  EXPECT_EQ(transport_->requests[0].path, "/apis/apps/v1/namespaces/default/deployments/web");
  auto bad = client_->Update(resources::kDeployments, "default", json{{"spec", {}}});
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error().message, HasSubstr("metadata: missing"));
  EXPECT_EQ(transport_->requests.size(), 1U);
}

TEST_F(ClientTest, CreatePostsToTheCollectionOrASubresourceOfTheNamedObject) {
  transport_->Reply(201, R"({"metadata":{"name":"p"}})");
  transport_->Reply(201, R"({"kind":"Status","status":"Success"})");
  ASSERT_TRUE(client_->Create(resources::kPods, "ns", json{{"metadata", {{"name", "p"}}}}));
  const json binding = {{"kind", "Binding"},
                        {"metadata", {{"name", "p"}}},
                        {"target", {{"kind", "Node"}, {"name", "n1"}}}};
  ASSERT_TRUE(client_->Create(resources::kPods, "ns", binding, "binding"));
  ASSERT_EQ(transport_->requests.size(), 2U);
  EXPECT_EQ(transport_->requests[0].method, "POST");
  EXPECT_EQ(transport_->requests[0].path, "/api/v1/namespaces/ns/pods");
  EXPECT_EQ(transport_->requests[1].method, "POST");
  EXPECT_EQ(transport_->requests[1].path, "/api/v1/namespaces/ns/pods/p/binding");
  auto nameless = client_->Create(resources::kPods, "ns", json{{"kind", "Binding"}}, "binding");
  ASSERT_FALSE(nameless);
  EXPECT_THAT(nameless.error().message, HasSubstr("metadata: missing"));
  EXPECT_EQ(transport_->requests.size(), 2U);
}

TEST_F(ClientTest, PatchContentTypes) {
  transport_->Reply(200, "{}");
  transport_->Reply(200, "{}");
  ASSERT_TRUE(client_->Patch(resources::kPods, "d", "p", PatchType::kMerge,
                             {{"metadata", {{"labels", {{"a", "b"}}}}}}));
  ASSERT_TRUE(client_->Patch(resources::kPods, "d", "p", PatchType::kJson,
                             json::array({{{"op", "add"}, {"path", "/x"}, {"value", 1}}}),
                             "status"));
  EXPECT_EQ(transport_->requests[0].content_type, "application/merge-patch+json");
  EXPECT_EQ(transport_->requests[1].content_type, "application/json-patch+json");
  EXPECT_EQ(transport_->requests[1].path, "/api/v1/namespaces/d/pods/p/status");
  auto bad = client_->Patch(resources::kPods, "d", "p", PatchType::kJson, json::object());
  EXPECT_FALSE(bad);
  EXPECT_EQ(transport_->requests.size(), 2U);
}

TEST_F(ClientTest, SetReplicasPatchesScale) {
  transport_->Reply(200,
                    R"({"metadata":{"name":"web"},"spec":{"replicas":4},"status":{"replicas":2}})");
  auto s = client_->SetReplicas(resources::kDeployments, "default", "web", 4);
  ASSERT_TRUE(s) << s.error().ToString();
  EXPECT_EQ(s->spec_replicas, 4);
  EXPECT_EQ(transport_->requests[0].path, "/apis/apps/v1/namespaces/default/deployments/web/scale");
  EXPECT_EQ(json::parse(transport_->requests[0].body), json::parse(R"({"spec":{"replicas":4}})"));
  EXPECT_FALSE(client_->SetReplicas(resources::kDeployments, "default", "web", -1));
}

TEST_F(ClientTest, DeleteSendsOptions) {
  transport_->Reply(200, R"({"kind":"Status","status":"Success"})");
  DeleteOptions o;
  o.grace_period_seconds = 0;
  o.propagation_policy = "Foreground";
  ASSERT_TRUE(client_->Delete(resources::kPods, "d", "p", o));
  const json body = json::parse(transport_->requests[0].body);
  EXPECT_EQ(body["gracePeriodSeconds"], 0);
  EXPECT_EQ(body["propagationPolicy"], "Foreground");
}

TEST_F(ClientTest, RetriesTooManyRequestsAfterRetryAfter) {
  transport_->Reply(429, R"({"kind":"Status","code":429,"reason":"TooManyRequests"})", "2");
  transport_->Reply(429, R"({"kind":"Status","code":429,"reason":"TooManyRequests"})", "1");
  transport_->Reply(200, "{}");
  ASSERT_TRUE(GetPathAdvancing("/api"));
  EXPECT_EQ(transport_->requests.size(), 3U);
  EXPECT_THAT(slept_, ElementsAre(std::chrono::seconds(2), std::chrono::seconds(1)));
}

TEST_F(ClientTest, TooManyRequestsWithoutRetryAfterIsReturned) {
  transport_->Reply(429, R"({"kind":"Status","code":429,"reason":"TooManyRequests"})");
  auto r = client_->GetPath("/api");
  ASSERT_FALSE(r);
  EXPECT_TRUE(r.error().IsTooManyRequests());
  EXPECT_EQ(transport_->requests.size(), 1U);
}

TEST_F(ClientTest, RetriesAreBoundedAndWaitsCapped) {
  ClientOptions o;
  o.qps = 0;
  o.max_retries = 2;
  o.max_retry_after = std::chrono::seconds(5);
  MakeClient(o);
  for (int i = 0; i < 3; ++i) transport_->Reply(429, "", "3600");
  auto r = GetPathAdvancing("/api");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().retry_after, std::chrono::seconds(3600));
  EXPECT_EQ(transport_->requests.size(), 3U);
  EXPECT_THAT(slept_, ElementsAre(std::chrono::seconds(5), std::chrono::seconds(5)));
}

TEST_F(ClientTest, EveryCallIsRateLimited) {
  ClientOptions o;
  o.qps = 10;
  o.burst = 2;
  MakeClient(o);
  for (int i = 0; i < 4; ++i) transport_->Reply(200, "{}");
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(GetPathAdvancing("/api"));
  // Two from the burst, then one every 100 ms of the clock.
  EXPECT_THAT(slept_, ElementsAre(std::chrono::milliseconds(100), std::chrono::milliseconds(100)));
}

// Waits queue up: calls made together, while the clock stands still, each wait their own turn.
TEST_F(ClientTest, RateLimitTurnsQueueWhileTheClockStandsStill) {
  ClientOptions o;
  o.qps = 10;
  o.burst = 1;
  MakeClient(o);
  for (int i = 0; i < 3; ++i) transport_->Reply(200, "{}");
  ASSERT_TRUE(client_->GetPath("/api"));  // the burst
  auto second = std::async(std::launch::async, [&] { return client_->GetPath("/api"); });
  EXPECT_EQ(AwaitSleep(clock_, std::chrono::milliseconds(100)), std::chrono::milliseconds(100));
  auto third = std::async(std::launch::async, [&] { return client_->GetPath("/api"); });
  ASSERT_TRUE(clock_.AwaitSleepers(2));
  EXPECT_EQ(clock_.NextDeadline(), clock_.Now() + std::chrono::milliseconds(100));
  clock_.Advance(std::chrono::milliseconds(100));
  EXPECT_TRUE(second.get());
  EXPECT_EQ(AwaitSleep(clock_, std::chrono::milliseconds(100)), std::chrono::milliseconds(100));
  clock_.Advance(std::chrono::milliseconds(100));
  EXPECT_TRUE(third.get());
}

TEST_F(ClientTest, WatchStreamsEventsWithBookmarksAndErrors) {
  transport_->StreamLines({R"({"type":"ADDED","object":{"metadata":{"name":"a"}}})", "",
                           R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9"}}})",
                           R"({"type":"ERROR","object":{"kind":"Status","code":410}})"});
  ListOptions o;
  o.resource_version = "5";
  o.timeout_seconds = 300;
  o.allow_watch_bookmarks = true;
  auto w = client_->StartWatch(resources::kPods, "default", o);
  ASSERT_TRUE(w) << w.error().ToString();
  EXPECT_EQ(transport_->requests[0].path,
            "/api/v1/namespaces/default/pods?watch=1&resourceVersion=5&allowWatchBookmarks=true"
            "&timeoutSeconds=300");
  // The idle timeout outlasts the server's own timeout.
  EXPECT_GT(transport_->idle_timeouts[0], std::chrono::seconds(300));
  std::vector<WatchEventType> types;
  for (;;) {
    auto e = (*w)->Next();
    ASSERT_TRUE(e) << e.error().ToString();
    if (!*e) break;
    types.push_back((*e)->type);
  }
  EXPECT_THAT(types, ElementsAre(WatchEventType::kAdded, WatchEventType::kBookmark,
                                 WatchEventType::kError));
}

TEST_F(ClientTest, WatchReportsBrokenStreamsAndBadLines) {
  transport_->StreamLines({"{not json", "<broken>"});
  auto w = client_->StartWatch(resources::kPods, "", {});
  ASSERT_TRUE(w);
  auto bad = (*w)->Next();
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().reason, "InvalidWatchEvent");
  auto broken = (*w)->Next();
  ASSERT_FALSE(broken);
  EXPECT_EQ(broken.error().reason, kReasonTransport);
}

// An answer or a watch line nested 100,000 deep (200 KB) is refused while it is parsed, with a
// Status that says so: nothing that deep reaches the informers, whose copies, comparisons and
// dumps recurse once per level.
TEST_F(ClientTest, AnAnswerNestedTooDeepIsRefused) {
  const std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
  transport_->Reply(200, R"({"metadata":{"name":"web"},"spec":)" + deep + "}");
  auto r = client_->Get(resources::kDeployments, "prod", "web");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().reason, "InvalidResponse");
  EXPECT_EQ(r.error().message,
            "GET /apis/apps/v1/namespaces/prod/deployments/web: the answer: nested deeper than "
            "512 levels");

  // At the limit it reads: the object and `spec` are two of the 512 levels.
  const std::string at_limit = std::string(510, '[') + std::string(510, ']');
  transport_->Reply(200, R"({"metadata":{"name":"web"},"spec":)" + at_limit + "}");
  auto ok = client_->Get(resources::kDeployments, "prod", "web");
  ASSERT_TRUE(ok) << ok.error().ToString();
}

TEST_F(ClientTest, AWatchLineNestedTooDeepIsRefused) {
  const std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
  transport_->StreamLines(
      {R"({"type":"ADDED","object":{"metadata":{"name":"a"},"spec":)" + deep + "}}"});
  auto w = client_->StartWatch(resources::kPods, "", {});
  ASSERT_TRUE(w);
  auto bad = (*w)->Next();
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().reason, "InvalidWatchEvent");
  EXPECT_EQ(bad.error().message, "watch event: nested deeper than 512 levels");
}

TEST_F(ClientTest, WatchStartErrorsDecode) {
  transport_->Reply(403, R"({"kind":"Status","code":403,"reason":"Forbidden","message":"no"})");
  auto w = client_->StartWatch(resources::kPods, "", {});
  ASSERT_FALSE(w);
  EXPECT_TRUE(w.error().IsForbidden());
}

}  // namespace
}  // namespace eoc::kube
