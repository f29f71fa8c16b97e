// The reflector and informer over a scripted transport: what they ask for, and what the cache and
// the handlers see.
#include "kube/reflector.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <future>

#include "clock_steps.h"
#include "common/backoff.h"
#include "common/rfc3339.h"
#include "fake_transport.h"
#include "kube/informer.h"
#include "kube/pod_view.h"

namespace eoc::kube {
namespace {

using nlohmann::json;
using testing::AwaitSleep;
using testing::CallAdvancing;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

StreamResult Answer(int status, const json& body) { return testing::Answer(status, body.dump()); }

json PodList(const std::string& rv,
             std::initializer_list<std::pair<const char*, const char*>> pods) {
  json items = json::array();
  for (const auto& [name, pod_rv] : pods) {
    items.push_back(
        {{"metadata", {{"name", name}, {"namespace", "ns"}, {"resourceVersion", pod_rv}}}});
  }
  return {{"metadata", {{"resourceVersion", rv}}}, {"items", items}};
}

std::string Event(const char* type, const char* name, const char* rv) {
  return json{
      {"type", type},
      {"object", {{"metadata", {{"name", name}, {"namespace", "ns"}, {"resourceVersion", rv}}}}}}
      .dump();
}

std::string Bookmark(const char* rv) {
  return json{{"type", "BOOKMARK"}, {"object", {{"metadata", {{"resourceVersion", rv}}}}}}.dump();
}

struct Seen {
  std::vector<std::string> added, updated, deleted;
};

class ReflectorTest : public ::testing::Test {
 protected:
  ReflectorTest() : transport_(fake_.transport) {}

  // The reflector's own backoff is under test here, not the client's retries.
  static ClientOptions NoRetries() {
    ClientOptions o = testing::FakeClient::Unlimited();
    o.max_retries = 0;
    return o;
  }

  ReflectorOptions Options() {
    ReflectorOptions o;
    o.resource = resources::kPods;
    o.ns = "ns";
    o.initial_backoff = std::chrono::milliseconds(1);
    o.max_backoff = std::chrono::milliseconds(2);
    o.random = [] { return 0.0; };  // no jitter: waits of exactly 1 ms, then 2 ms
    return o;
  }

  // Runs an informer over the script until the script ends, moving the clock over each backoff
  // wait; returns what the handlers saw.
  Seen RunInformer(Informer<PodView>& informer) {
    Seen seen;
    informer.AddHandlers(
        {.on_add = [&](const PodView& p) { seen.added.push_back(p.name); },
         .on_update = [&](const PodView&, const PodView& p) { seen.updated.push_back(p.name); },
         .on_delete = [&](const PodView& p) { seen.deleted.push_back(p.name); }});
    std::promise<void> done;
    transport_->on_empty = [&] { done.set_value(); };
    informer.Start();
    CallAdvancing(clock_, [&] { done.get_future().wait(); });
    informer.Stop();
    return seen;
  }

  ManualClock clock_;
  testing::FakeClient fake_{clock_, NoRetries()};
  testing::FakeTransport* transport_;
};

TEST_F(ReflectorTest, ListsThenWatchesAndRewatchesFromTheLastVersion) {
  transport_->Then([](const HttpRequest&) { return Answer(200, PodList("10", {{"a", "5"}})); });
  transport_->Then([](const HttpRequest&) {
    return testing::StreamOf(
        {Event("ADDED", "b", "11"), Event("MODIFIED", "a", "12"), Bookmark("15")});
  });
  transport_->Then(
      [](const HttpRequest&) { return testing::StreamOf({Event("DELETED", "b", "16")}); });
  Informer<PodView> informer(*fake_.client, Options(), ToPodView, clock_);
  const Seen seen = RunInformer(informer);

  ASSERT_GE(transport_->Paths().size(), 3U);
  EXPECT_EQ(transport_->Paths()[0], "/api/v1/namespaces/ns/pods?resourceVersion=0&limit=500");
  EXPECT_THAT(transport_->Paths()[1],
              HasSubstr("watch=1&resourceVersion=10&allowWatchBookmarks=true"));
  // The server ended the first watch: the next starts where the bookmark left off, no relist.
  EXPECT_THAT(transport_->Paths()[2], HasSubstr("watch=1&resourceVersion=15&"));
  EXPECT_THAT(seen.added, ElementsAre("a", "b"));
  EXPECT_THAT(seen.updated, ElementsAre("a"));
  EXPECT_THAT(seen.deleted, ElementsAre("b"));
  EXPECT_TRUE(informer.HasSynced());
  EXPECT_EQ(informer.Size(), 1U);
  EXPECT_NE(informer.Get("ns/a"), nullptr);
  EXPECT_EQ(informer.Get("ns/b"), nullptr);
}

TEST_F(ReflectorTest, ExpiredWatchRelistsFromLastVersionThenFromNewest) {
  transport_->Then([](const HttpRequest&) {
    return Answer(200, PodList("10", {{"a", "5"}, {"gone", "6"}}));
  });
  transport_->Then([](const HttpRequest&) {
    return testing::StreamOf({json{
        {"type", "ERROR"}, {"object", {{"kind", "Status"}, {"code", 410}, {"reason", "Expired"}}}}
                                  .dump()});
  });
  const json expired = {{"kind", "Status"}, {"code", 410}, {"reason", "Expired"}};
  transport_->Then([&](const HttpRequest&) { return Answer(410, expired); });
  transport_->Then([](const HttpRequest&) {
    return Answer(200, PodList("30", {{"a", "20"}, {"new", "25"}}));
  });
  Informer<PodView> informer(*fake_.client, Options(), ToPodView, clock_);
  const Seen seen = RunInformer(informer);

  ASSERT_GE(transport_->Paths().size(), 4U);
  EXPECT_EQ(transport_->Paths()[2], "/api/v1/namespaces/ns/pods?resourceVersion=10");  // whole
  EXPECT_EQ(transport_->Paths()[3], "/api/v1/namespaces/ns/pods?limit=500");           // the newest
  // The relist found what changed while no watch ran.
  EXPECT_THAT(seen.added, UnorderedElementsAre("a", "gone", "new"));
  EXPECT_THAT(seen.updated, ElementsAre("a"));
  EXPECT_THAT(seen.deleted, ElementsAre("gone"));
  EXPECT_EQ(informer.Size(), 2U);
  EXPECT_EQ(informer.LastResourceVersion(), "30");
}

TEST_F(ReflectorTest, BrokenStreamRelistsAndUnchangedObjectsAreNoUpdates) {
  transport_->Then([](const HttpRequest&) { return Answer(200, PodList("10", {{"a", "5"}})); });
  transport_->Then([](const HttpRequest&) {
    return testing::StreamOf({Event("ADDED", "b", "11"), "<broken>"});
  });
  transport_->Then([](const HttpRequest&) {
    return Answer(200, PodList("11", {{"a", "5"}, {"b", "11"}}));
  });
  Informer<PodView> informer(*fake_.client, Options(), ToPodView, clock_);
  const Seen seen = RunInformer(informer);
  EXPECT_EQ(transport_->Paths()[2], "/api/v1/namespaces/ns/pods?resourceVersion=11");
  EXPECT_THAT(seen.added, ElementsAre("a", "b"));
  EXPECT_TRUE(seen.updated.empty());
  EXPECT_TRUE(seen.deleted.empty());
}

// What the reflector's hooks were told, in order (the reflector's thread writes; the test reads
// once the informer has stopped).
struct RecordingHooks final : ReflectorMetrics {
  void OnStale(bool stale, std::chrono::nanoseconds failing_for) override {
    stale_reports.emplace_back(stale, failing_for);
  }
  void OnInvalidObject(const std::string& key, const std::string& rv,
                       const std::string& why) override {
    invalid.push_back(key + "@" + rv);
    reasons.push_back(why);
  }
  std::vector<std::pair<bool, std::chrono::nanoseconds>> stale_reports;
  std::vector<std::string> invalid;
  std::vector<std::string> reasons;
};

json BadPod(const char* name, const char* rv) {
  return {{"metadata",
           {{"name", name}, {"namespace", "ns"}, {"resourceVersion", rv}, {"labels", {{"x", 1}}}}}};
}

TEST_F(ReflectorTest, FailedListsBackOffAndInvalidObjectsAreSkipped) {
  transport_->Then([](const HttpRequest&) {
    return Answer(500, json{{"kind", "Status"}, {"code", 500}, {"message", "etcd"}});
  });
  json list = PodList("10", {{"a", "5"}});
  list["items"].push_back(BadPod("bad", "4"));
  transport_->Then([list](const HttpRequest&) { return Answer(200, list); });
  RecordingHooks hooks;
  ReflectorOptions options = Options();
  options.metrics = &hooks;
  Informer<PodView> informer(*fake_.client, options, ToPodView, clock_);
  const Seen seen = RunInformer(informer);
  EXPECT_THAT(seen.added, ElementsAre("a"));
  EXPECT_EQ(informer.Invalid(), 1U);
  EXPECT_THAT(hooks.invalid, ElementsAre("ns/bad@4"));
  ASSERT_EQ(hooks.reasons.size(), 1U);
  EXPECT_THAT(hooks.reasons[0], HasSubstr("labels"));
}

// Each object left out is reported once per version, however often a relist brings it back; one
// that turns invalid leaves the cache (as the next relist would have it), and one that is mapped
// again comes back.
TEST_F(ReflectorTest, InvalidObjectsAreReportedOncePerVersionAndLeaveTheCache) {
  json list = PodList("10", {{"a", "5"}});
  list["items"].push_back(BadPod("bad", "4"));
  transport_->Then([list](const HttpRequest&) { return Answer(200, list); });
  transport_->Then([](const HttpRequest&) {
    return testing::StreamOf({json{{"type", "MODIFIED"}, {"object", BadPod("bad", "11")}}.dump(),
                              json{{"type", "MODIFIED"}, {"object", BadPod("a", "12")}}.dump(),
                              "<broken>"});
  });
  json relist = PodList("13", {});
  relist["items"].push_back(BadPod("a", "12"));
  relist["items"].push_back(BadPod("bad", "11"));
  transport_->Then([relist](const HttpRequest&) { return Answer(200, relist); });
  transport_->Then(
      [](const HttpRequest&) { return testing::StreamOf({Event("MODIFIED", "a", "14")}); });
  RecordingHooks hooks;
  ReflectorOptions options = Options();
  options.metrics = &hooks;
  Informer<PodView> informer(*fake_.client, options, ToPodView, clock_);
  const Seen seen = RunInformer(informer);
  EXPECT_THAT(hooks.invalid, ElementsAre("ns/bad@4", "ns/bad@11", "ns/a@12"));
  EXPECT_EQ(informer.Invalid(), 3U);
  EXPECT_THAT(seen.added, ElementsAre("a", "a"));
  EXPECT_THAT(seen.deleted, ElementsAre("a"));
  EXPECT_NE(informer.Get("ns/a"), nullptr);
  EXPECT_EQ(informer.Get("ns/bad"), nullptr);
}

const json kUnavailable = {{"kind", "Status"}, {"code", 503}, {"message", "etcd"}};
const std::string kTooOld = json{{"type", "ERROR"},
                                 {"object",
                                  {{"kind", "Status"},
                                   {"code", 410},
                                   {"reason", "Expired"},
                                   {"message", "too old resource version: 10 (30)"}}}}
                                .dump();

// Lists failing for stale_after make the informer stale (reported once); a successful list is not
// enough to end it, a held watch is. The script advances the manual clock from the reflector's own
// thread.
TEST_F(ReflectorTest, FailingForStaleAfterIsStaleUntilAWatchIsHeld) {
  Informer<PodView>* watched = nullptr;
  bool stale_before_recovery = false;
  bool stale_after_the_list = false;
  transport_->Then([&](const HttpRequest&) { return Answer(503, kUnavailable); });
  transport_->Then([&](const HttpRequest&) {
    clock_.Advance(std::chrono::seconds(59));
    return Answer(503, kUnavailable);
  });
  transport_->Then([&](const HttpRequest&) {
    EXPECT_FALSE(watched->Stale());  // 59 s of failures: not yet
    clock_.Advance(std::chrono::seconds(2));
    return Answer(503, kUnavailable);
  });
  transport_->Then([&](const HttpRequest&) {
    stale_before_recovery = watched->Stale();
    return Answer(200, PodList("10", {{"a", "5"}}));
  });
  transport_->Then([&](const HttpRequest&) {
    stale_after_the_list = watched->Stale();
    return testing::StreamOf({Event("ADDED", "b", "11")});
  });
  RecordingHooks hooks;
  ReflectorOptions options = Options();
  options.metrics = &hooks;
  options.stale_after = std::chrono::seconds(60);
  Informer<PodView> informer(*fake_.client, options, ToPodView, clock_);
  watched = &informer;
  RunInformer(informer);
  EXPECT_TRUE(stale_before_recovery);
  EXPECT_TRUE(stale_after_the_list);
  ASSERT_EQ(hooks.stale_reports.size(), 2U);
  EXPECT_TRUE(hooks.stale_reports[0].first);
  // The script's 61 s, and the backoff waits of 1 ms and 2 ms between the three failures.
  EXPECT_EQ(hooks.stale_reports[0].second, std::chrono::seconds(61) + std::chrono::milliseconds(3));
  EXPECT_FALSE(hooks.stale_reports[1].first);
  // The script's end fails the next watch, but only just: not stale.
  EXPECT_FALSE(informer.Stale());
}

// A quiet watch (no events: an API server without its watch cache sends no bookmarks) is held once
// it has stayed open for watch_hold.
TEST_F(ReflectorTest, AQuietWatchOpenForWatchHoldIsHeld) {
  Informer<PodView>* watched = nullptr;
  std::vector<bool> stale_while_open;
  transport_->Then([&](const HttpRequest&) { return Answer(503, kUnavailable); });
  transport_->Then([&](const HttpRequest&) {
    clock_.Advance(std::chrono::seconds(61));
    return Answer(503, kUnavailable);
  });
  transport_->Then([&](const HttpRequest&) { return Answer(200, PodList("10", {{"a", "5"}})); });
  transport_->Then([&](const HttpRequest&) {
    return testing::StreamOf({}, [&] {
      stale_while_open.push_back(watched->Stale());
      clock_.Advance(std::chrono::seconds(9));
      stale_while_open.push_back(watched->Stale());
      clock_.Advance(std::chrono::seconds(1));
      stale_while_open.push_back(watched->Stale());
    });
  });
  RecordingHooks hooks;
  ReflectorOptions options = Options();
  options.metrics = &hooks;
  options.stale_after = std::chrono::seconds(60);
  options.watch_hold = std::chrono::seconds(10);
  Informer<PodView> informer(*fake_.client, options, ToPodView, clock_);
  watched = &informer;
  RunInformer(informer);
  // Stale when it opens and 9 s on; held at 10 s.
  EXPECT_THAT(stale_while_open, ElementsAre(true, true, false));
  ASSERT_EQ(hooks.stale_reports.size(), 2U);
  EXPECT_TRUE(hooks.stale_reports[0].first);
  EXPECT_FALSE(hooks.stale_reports[1].first);  // when the watch ended
}

// After an API-server restart its watch cache starts at the newest revision and refuses a watch
// from any older one with a 410 inside the watch. The relist names the informer's last version
// and is asked whole, so that the cache answers with its own version, and the next watch starts
// there. (Paged, the 1.20 API server reads such a list from etcd at exactly the old version, and
// the watch from it is refused again, in a loop.)
TEST_F(ReflectorTest, AWatchRefusedAfterARestartRelistsWholeAndWatchesFromTheAnswer) {
  transport_->Then([](const HttpRequest&) { return Answer(200, PodList("10", {{"a", "5"}})); });
  transport_->Then([](const HttpRequest&) { return testing::StreamOf({kTooOld}); });
  transport_->Then([](const HttpRequest&) {
    return Answer(200, PodList("30", {{"a", "5"}, {"born-after", "25"}}));
  });
  transport_->Then(
      [](const HttpRequest&) { return testing::StreamOf({Event("ADDED", "later", "31")}); });
  Informer<PodView> informer(*fake_.client, Options(), ToPodView, clock_);
  const Seen seen = RunInformer(informer);
  const auto paths = transport_->Paths();
  ASSERT_GE(paths.size(), 4U);
  EXPECT_EQ(paths[0], "/api/v1/namespaces/ns/pods?resourceVersion=0&limit=500");
  EXPECT_EQ(paths[2], "/api/v1/namespaces/ns/pods?resourceVersion=10");
  EXPECT_THAT(paths[3], HasSubstr("watch=1&resourceVersion=30&"));
  EXPECT_THAT(seen.added, ElementsAre("a", "born-after", "later"));
}

// A server that answers the relist with the version its watch refused (one without a watch cache
// that has not compacted it, or any server that misbehaves) is not asked for that version a third
// time: after two 410s in a row from watches, the next list names the newest version ("").
TEST_F(ReflectorTest, TwoRefusedWatchesInARowListTheNewest) {
  for (int i = 0; i < 2; ++i) {
    transport_->Then([](const HttpRequest&) { return Answer(200, PodList("10", {{"a", "5"}})); });
    transport_->Then([](const HttpRequest&) { return testing::StreamOf({kTooOld}); });
  }
  transport_->Then([](const HttpRequest&) { return Answer(200, PodList("40", {{"a", "5"}})); });
  transport_->Then(
      [](const HttpRequest&) { return testing::StreamOf({Event("ADDED", "b", "41")}); });
  Informer<PodView> informer(*fake_.client, Options(), ToPodView, clock_);
  RunInformer(informer);
  const auto paths = transport_->Paths();
  ASSERT_GE(paths.size(), 6U);
  EXPECT_EQ(paths[2], "/api/v1/namespaces/ns/pods?resourceVersion=10");
  EXPECT_EQ(paths[4], "/api/v1/namespaces/ns/pods?limit=500");
  EXPECT_THAT(paths[5], HasSubstr("watch=1&resourceVersion=40&"));
  const auto lists_at_10 = std::count_if(paths.begin(), paths.end(), [](const std::string& p) {
    return p.find("watch=1") == std::string::npos &&
           p.find("resourceVersion=10") != std::string::npos;
  });
  EXPECT_EQ(lists_at_10, 1);  // the first list named "0"; one relist at 10, not two
}

// A reflector whose every watch is refused at once is stale after stale_after, however well its
// lists go (each list used to count as a success, and such a loop looked healthy).
TEST_F(ReflectorTest, ListsThatSucceedWithoutAHeldWatchTurnStale) {
  Informer<PodView>* watched = nullptr;
  bool stale_at_the_end = false;
  for (int i = 0; i < 4; ++i) {
    transport_->Then([&](const HttpRequest&) {
      clock_.Advance(std::chrono::seconds(20));
      return Answer(200, PodList("10", {{"a", "5"}}));
    });
    transport_->Then([](const HttpRequest&) { return testing::StreamOf({kTooOld}); });
  }
  transport_->Then([&](const HttpRequest&) {
    stale_at_the_end = watched->Stale();
    return Answer(503, kUnavailable);
  });
  RecordingHooks hooks;
  ReflectorOptions options = Options();
  options.metrics = &hooks;
  options.stale_after = std::chrono::seconds(60);
  Informer<PodView> informer(*fake_.client, options, ToPodView, clock_);
  watched = &informer;
  RunInformer(informer);
  EXPECT_TRUE(stale_at_the_end);
  ASSERT_FALSE(hooks.stale_reports.empty());
  EXPECT_TRUE(hooks.stale_reports[0].first);
}

// A server that pages (it has no watch cache for the resource: the first list, at "0", came in
// pages) is relisted in pages, as client-go does: a whole list would be one large read from etcd.
TEST_F(ReflectorTest, AServerThatPagesIsRelistedInPages) {
  transport_->Then([](const HttpRequest&) {
    json first = PodList("10", {{"a", "5"}});
    first["metadata"]["continue"] = "token";
    return Answer(200, first);
  });
  transport_->Then([](const HttpRequest&) { return Answer(200, PodList("10", {{"b", "6"}})); });
  transport_->Then([](const HttpRequest&) { return testing::StreamOf({"<broken>"}); });
  transport_->Then([](const HttpRequest&) {
    return Answer(200, PodList("12", {{"a", "5"}, {"b", "6"}}));
  });
  Informer<PodView> informer(*fake_.client, Options(), ToPodView, clock_);
  const Seen seen = RunInformer(informer);
  const auto paths = transport_->Paths();
  ASSERT_GE(paths.size(), 4U);
  EXPECT_EQ(paths[1], "/api/v1/namespaces/ns/pods?limit=500&continue=token");
  EXPECT_EQ(paths[3], "/api/v1/namespaces/ns/pods?resourceVersion=10&limit=500");
  EXPECT_THAT(seen.added, UnorderedElementsAre("a", "b"));
}

// The backoff on the clock, exactly, with the randomness fixed at 0.5 (each wait 1.5 times its
// base): 800 ms doubling, a Retry-After as a floor for its own wait only, and a fresh start after
// 120 s without failures.
TEST_F(ReflectorTest, BacksOffExactlyAsThePolicySays) {
  const json failure = {{"kind", "Status"}, {"code", 500}, {"message", "etcd"}};
  const json busy = {{"kind", "Status"}, {"code", 429}, {"reason", "TooManyRequests"}};
  transport_->Then([&](const HttpRequest&) { return Answer(500, failure); });
  transport_->Then([&](const HttpRequest&) { return Answer(500, failure); });
  transport_->Then([&](const HttpRequest&) { return testing::Answer(429, busy.dump(), "10"); });
  transport_->Then([&](const HttpRequest&) { return Answer(500, failure); });
  transport_->Then([](const HttpRequest&) { return Answer(200, PodList("10", {{"a", "5"}})); });
  transport_->Then([&](const HttpRequest&) {
    clock_.Advance(std::chrono::seconds(121));  // a watch healthy for 121 s, then broken
    return testing::StreamOf({"<broken>"});
  });
  // Then the script has run out: the relist fails.
  ReflectorOptions options = Options();
  options.initial_backoff = std::chrono::milliseconds(800);
  options.max_backoff = std::chrono::seconds(30);
  options.random = [] { return 0.5; };
  Informer<PodView> informer(*fake_.client, options, ToPodView, clock_);
  informer.Start();
  using std::chrono::milliseconds;
  for (const milliseconds wait : {milliseconds(1200), milliseconds(2400),
                                  milliseconds(10000),  // Retry-After 10 s over 4.8 s
                                  milliseconds(9600),   // 6.4 s: the growth went on beneath it
                                  milliseconds(1200),   // healthy for 120 s: from the start
                                  milliseconds(2400)}) {
    ASSERT_EQ(AwaitSleep(clock_, wait), wait);
    clock_.Advance(wait);
  }
  EXPECT_TRUE(informer.HasSynced());
  informer.Stop();
}

TEST_F(ReflectorTest, TheWaitsGrowToTheCapJitteredUpToTwice) {
  ReflectorOptions options = Options();
  options.initial_backoff = std::chrono::milliseconds(800);
  options.max_backoff = std::chrono::seconds(30);
  options.random = [] { return 0.999; };
  Informer<PodView> informer(*fake_.client, options, ToPodView, clock_);  // every list fails
  informer.Start();
  std::chrono::nanoseconds base = std::chrono::milliseconds(800);
  for (int i = 0; i < 8; ++i) {
    const auto wait = Jittered(base, 1.0, 0.999);
    ASSERT_EQ(AwaitSleep(clock_, wait), wait) << i;
    clock_.Advance(wait);
    base = std::min<std::chrono::nanoseconds>(base * 2, std::chrono::seconds(30));
  }
  informer.Stop();
}

// Stop() during an hour-long backoff returns at once: the clock need not move.
TEST_F(ReflectorTest, StopDuringALongBackoffReturnsWithoutTheClockMoving) {
  ReflectorOptions options = Options();
  options.initial_backoff = std::chrono::hours(1);
  options.max_backoff = std::chrono::hours(1);
  Informer<PodView> informer(*fake_.client, options, ToPodView, clock_);  // the list fails
  informer.Start();
  ASSERT_EQ(AwaitSleep(clock_, std::chrono::hours(1)), std::chrono::hours(1));
  const auto before = clock_.Now();
  informer.Stop();
  EXPECT_EQ(clock_.Now(), before);
  EXPECT_EQ(transport_->Paths().size(), 1U);
}

// WaitForSync times out on the informer's clock, and Stop() ends it early.
TEST_F(ReflectorTest, WaitForSyncTimesOutOnTheClockAndStopEndsIt) {
  ReflectorOptions options = Options();
  options.initial_backoff = std::chrono::hours(1);
  options.max_backoff = std::chrono::hours(1);
  Informer<PodView> informer(*fake_.client, options, ToPodView, clock_);  // never synced
  informer.Start();
  ASSERT_EQ(AwaitSleep(clock_, std::chrono::hours(1)), std::chrono::hours(1));  // backing off
  auto waited = std::async(std::launch::async,
                           [&] { return informer.WaitForSync(std::chrono::seconds(30)); });
  ASSERT_EQ(AwaitSleep(clock_, std::chrono::seconds(30)), std::chrono::seconds(30));
  clock_.Advance(std::chrono::seconds(30));
  EXPECT_FALSE(waited.get());
  auto stopped =
      std::async(std::launch::async, [&] { return informer.WaitForSync(std::chrono::hours(24)); });
  ASSERT_EQ(AwaitSleep(clock_, std::chrono::hours(1) - std::chrono::seconds(30)),
            std::chrono::hours(1) - std::chrono::seconds(30));  // the earliest: the backoff
  ASSERT_TRUE(clock_.AwaitSleepers(2));
  informer.Stop();
  EXPECT_FALSE(stopped.get());
}

TEST(PodView, KeepsWhatTheOperatorReads) {
  const json pod = json::parse(R"({
    "metadata": {"name": "w-1", "namespace": "llm", "uid": "u1", "resourceVersion": "7",
      "labels": {"app": "vllm", "tier": "gpu"},
      "annotations": {"eoc.dev/models": "llama-3-8b", "kubectl.kubernetes.io/last-applied-configuration": "{...}",
        "controller.kubernetes.io/pod-deletion-cost": "-5"},
      "creationTimestamp": "2026-11-30T09:00:00Z", "deletionTimestamp": "2026-11-30T10:00:00Z"},
    "spec": {"nodeName": "node-a", "containers": [
      {"name": "a", "resources": {"requests": {"cpu": "4", "nvidia.com/gpu": "2"}}},
      {"name": "b", "resources": {"limits": {"nvidia.com/gpu": 1, "memory": "1Gi"}}}]},
    "status": {"phase": "Running", "podIP": "10.0.0.7",
      "conditions": [{"type": "PodScheduled", "status": "True"},
        {"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-30T09:01:00Z"}],
      "containerStatuses": [{"name": "a", "restartCount": 2}, {"name": "b", "restartCount": 5}]}})");
  const PodView v = ToPodView(pod);
  EXPECT_EQ(v.ns, "llm");
  EXPECT_EQ(v.name, "w-1");
  EXPECT_EQ(*Lookup(v.labels, "tier"), "gpu");
  EXPECT_EQ(Lookup(v.labels, "nope"), nullptr);
  ASSERT_EQ(v.annotations.size(), 2U);  // the operator's own and the deletion cost
  EXPECT_EQ(*Lookup(v.annotations, "eoc.dev/models"), "llama-3-8b");
  EXPECT_EQ(*Lookup(v.annotations, kDeletionCostAnnotation), "-5");
  EXPECT_EQ(v.node_name, "node-a");
  EXPECT_EQ(v.pod_ip, "10.0.0.7");
  EXPECT_EQ(v.phase, PodPhase::kRunning);
  EXPECT_TRUE(v.ready);
  EXPECT_EQ(v.ready_since, ParseRfc3339("2026-11-30T09:01:00Z"));
  EXPECT_EQ(v.created, ParseRfc3339("2026-11-30T09:00:00Z"));
  EXPECT_EQ(v.restarts, 5);
  EXPECT_TRUE(v.terminating());
  EXPECT_EQ(v.deletion_timestamp, ParseRfc3339("2026-11-30T10:00:00Z"));
  EXPECT_THAT(v.extended_requests,
              ElementsAre(std::pair<std::string, std::int64_t>{"nvidia.com/gpu", 3}));
}

TEST(PodView, NotReadyWithoutATrueReadyCondition) {
  const PodView v = ToPodView(json::parse(R"({"metadata": {"name": "p"},
      "status": {"conditions": [{"type": "Ready", "status": "False"}]}})"));
  EXPECT_FALSE(v.ready);
  EXPECT_FALSE(v.ready_since.has_value());
  EXPECT_FALSE(v.created.has_value());
  EXPECT_EQ(v.restarts, 0);
  EXPECT_FALSE(v.terminating());
  EXPECT_EQ(v.phase, PodPhase::kUnknown);
  EXPECT_THROW(ToPodView(json::parse(R"({"metadata": {}})")), MappingError);
  EXPECT_THROW(
      ToPodView(json::parse(R"({"metadata": {"name": "p", "deletionTimestamp": "soon"}})")),
      MappingError);
  EXPECT_THROW(ToPodView(json::parse(R"({"metadata": {"name": "p", "creationTimestamp": 7}})")),
               MappingError);
  EXPECT_THROW(ToPodView(json::parse(R"({"metadata": {"name": "p"}, "status": {"conditions":
      [{"type": "Ready", "status": "True", "lastTransitionTime": "later"}]}})")),
               MappingError);
}

}  // namespace
}  // namespace eoc::kube
