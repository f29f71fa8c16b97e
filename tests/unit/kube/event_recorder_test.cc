// The event correlator (counting, aggregation, spam filter) on a ManualClock, and the recorder's
// queue and writes over a scripted transport.
#include "kube/event_recorder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>

#include "clock_steps.h"
#include "fake_transport.h"

namespace eoc::kube {
namespace {

using nlohmann::json;
using std::chrono::minutes;
using std::chrono::seconds;
using testing::AwaitSleep;
using testing::FakeTransport;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;

ObjectReference Pool(const std::string& name) {
  return {.kind = "InferencePool",
          .ns = "prod",
          .name = name,
          .uid = "uid-" + name,
          .api_version = "eoc.dev/v1alpha1"};
}

// An event as Record() builds it.
Event MakeEvent(const ObjectReference& object, std::string reason, std::string message,
                const Clock& clock, EventType type = EventType::kNormal) {
  Event e;
  e.involved = object;
  e.ns = object.ns;
  e.type = type;
  e.reason = std::move(reason);
  e.message = std::move(message);
  e.component = "eoc-controller";
  e.first_timestamp = e.last_timestamp = clock.WallNow();
  return e;
}

class EventCorrelatorTest : public ::testing::Test {
 protected:
  CorrelationResult Correlate(const ObjectReference& object, const std::string& reason,
                              const std::string& message, EventType type = EventType::kNormal) {
    return correlator_.Correlate(MakeEvent(object, reason, message, clock_, type));
  }

  ManualClock clock_;
  EventCorrelator correlator_{clock_};
};

TEST_F(EventCorrelatorTest, FirstOccurrenceIsCreatedAndRepeatsPatchIt) {
  const auto first = Correlate(Pool("web"), "Scaled", "to 3");
  EXPECT_FALSE(first.skip);
  EXPECT_FALSE(first.update);
  EXPECT_EQ(first.event.count, 1);
  EXPECT_THAT(first.event.name, MatchesRegex(R"(web\.[0-9a-f]{16})"));

  clock_.Advance(seconds(30));
  const auto second = Correlate(Pool("web"), "Scaled", "to 3");
  EXPECT_TRUE(second.update);
  EXPECT_EQ(second.event.name, first.event.name);
  EXPECT_EQ(second.event.count, 2);
  EXPECT_EQ(second.event.first_timestamp, first.event.first_timestamp);
  EXPECT_EQ(second.patch["count"], 2);
  EXPECT_EQ(second.patch["message"], "to 3");
  EXPECT_NE(second.patch["lastTimestamp"], first.event.ToJson()["lastTimestamp"]);

  const auto third = Correlate(Pool("web"), "Scaled", "to 3");
  EXPECT_EQ(third.event.count, 3);
  EXPECT_EQ(third.event.name, first.event.name);
}

TEST_F(EventCorrelatorTest, RepeatsFoldOnlyWithinTenMinutesOfTheLastOne) {
  const auto first = Correlate(Pool("web"), "Scaled", "to 3");
  // Nine minutes apart, twice: each within ten minutes of the one before.
  clock_.Advance(minutes(9));
  EXPECT_TRUE(Correlate(Pool("web"), "Scaled", "to 3").update);
  clock_.Advance(minutes(9));
  EXPECT_TRUE(Correlate(Pool("web"), "Scaled", "to 3").update);

  clock_.Advance(minutes(10) + seconds(1));
  const auto later = Correlate(Pool("web"), "Scaled", "to 3");
  EXPECT_FALSE(later.update);
  EXPECT_EQ(later.event.count, 1);
  EXPECT_NE(later.event.name, first.event.name);
}

TEST_F(EventCorrelatorTest, ObjectTypeReasonMessageAndSourceKeepEventsApart) {
  const auto base = Correlate(Pool("web"), "Scaled", "to 3");
  EXPECT_FALSE(Correlate(Pool("api"), "Scaled", "to 3").update);
  EXPECT_FALSE(Correlate(Pool("web"), "Scaled", "to 3", EventType::kWarning).update);
  EXPECT_FALSE(Correlate(Pool("web"), "Rescaled", "to 3").update);
  EXPECT_FALSE(Correlate(Pool("web"), "Scaled", "to 4").update);
  Event other_source = MakeEvent(Pool("web"), "Scaled", "to 3", clock_);
  other_source.component = "someone-else";
  EXPECT_FALSE(correlator_.Correlate(other_source).update);
  // Text shifted from one field to the next is still another key.
  EXPECT_FALSE(Correlate(Pool("web"), "Scaledto", " 3").update);
  // And the original still folds.
  EXPECT_EQ(Correlate(Pool("web"), "Scaled", "to 3").event.name, base.event.name);
}

TEST_F(EventCorrelatorTest, SpamFilterAllowsABurstOf25ThenOneEveryFiveMinutes) {
  int allowed = 0;
  for (int i = 0; i < 40; ++i) {
    if (!Correlate(Pool("web"), "Flapping", "again").skip) ++allowed;
  }
  EXPECT_EQ(allowed, 25);
  // Another object has its own bucket.
  EXPECT_FALSE(Correlate(Pool("api"), "Flapping", "again").skip);

  clock_.Advance(minutes(4));
  EXPECT_TRUE(Correlate(Pool("web"), "Flapping", "again").skip);
  clock_.Advance(minutes(1));
  const auto refilled = Correlate(Pool("web"), "Flapping", "again");
  EXPECT_FALSE(refilled.skip);
  // Dropped repeats were still counted, so the write that gets through carries the true count.
  EXPECT_EQ(refilled.event.count, 42);
  EXPECT_TRUE(Correlate(Pool("web"), "Flapping", "again").skip);
}

TEST_F(EventCorrelatorTest, TenSimilarEventsAreCombinedIntoOne) {
  for (int i = 0; i < 9; ++i) {
    const auto r = Correlate(Pool("web"), "ScrapeFailed", "worker " + std::to_string(i));
    EXPECT_FALSE(r.combined) << i;
    EXPECT_FALSE(r.update) << i;
  }
  const auto tenth = Correlate(Pool("web"), "ScrapeFailed", "worker 9");
  EXPECT_TRUE(tenth.combined);
  EXPECT_FALSE(tenth.update);
  EXPECT_EQ(tenth.event.message, "(combined from similar events): worker 9");

  const auto eleventh = Correlate(Pool("web"), "ScrapeFailed", "worker 10");
  EXPECT_TRUE(eleventh.combined);
  EXPECT_TRUE(eleventh.update);
  EXPECT_EQ(eleventh.event.name, tenth.event.name);
  EXPECT_EQ(eleventh.event.count, 2);
  EXPECT_EQ(eleventh.patch["message"], "(combined from similar events): worker 10");

  // Ten minutes of quiet start the count of similar events afresh.
  clock_.Advance(minutes(11));
  EXPECT_FALSE(Correlate(Pool("web"), "ScrapeFailed", "worker 11").combined);
}

TEST_F(EventCorrelatorTest, CachesAreBounded) {
  EventCorrelator small(clock_, {.cache_size = 2});
  const auto first = small.Correlate(MakeEvent(Pool("a"), "R", "m", clock_));
  (void)small.Correlate(MakeEvent(Pool("b"), "R", "m", clock_));
  (void)small.Correlate(MakeEvent(Pool("c"), "R", "m", clock_));
  // "a" was the least recently used of three: forgotten, so its repeat is a new Event.
  const auto again = small.Correlate(MakeEvent(Pool("a"), "R", "m", clock_));
  EXPECT_FALSE(again.update);
  EXPECT_NE(again.event.name, first.event.name);
  // "c" is remembered.
  EXPECT_TRUE(small.Correlate(MakeEvent(Pool("c"), "R", "m", clock_)).update);
}

TEST_F(EventCorrelatorTest, UpdateStateTakesTheServersNameAndVersion) {
  auto first = Correlate(Pool("web"), "Scaled", "to 3");
  Event written = first.event;
  written.name = "web.server-chosen";
  written.resource_version = "42";
  correlator_.UpdateState(first.key, written);
  const auto second = Correlate(Pool("web"), "Scaled", "to 3");
  EXPECT_EQ(second.event.name, "web.server-chosen");
  EXPECT_EQ(second.event.resource_version, "42");
}

TEST_F(EventCorrelatorTest, NamesAreUniqueWithinOneNanosecond) {
  // The manual clock does not move: the second name still differs.
  const auto a = Correlate(Pool("web"), "A", "m");
  const auto b = Correlate(Pool("web"), "B", "m");
  EXPECT_NE(a.event.name, b.event.name);
}

TEST(EventNameTest, ObjectNameDotSixteenHexDigits) {
  EXPECT_EQ(EventName("web", 0x1234), "web.0000000000001234");
  EXPECT_EQ(EventName("web", 0x17f0e5d2c3b4a596), "web.17f0e5d2c3b4a596");
  // Still a valid name (at most 253 bytes) for the longest object names.
  EXPECT_EQ(EventName(std::string(253, 'n'), 1).size(), 253U);
}

TEST(EventJsonTest, HasTheCoreV1Shape) {
  ManualClock clock;
  clock.SetWall(std::chrono::system_clock::time_point(seconds(1'800'000'000)));
  Event e = MakeEvent(Pool("web"), "Scaled", "to 3", clock, EventType::kWarning);
  e.name = "web.1";
  e.host = "node-1";
  const json j = e.ToJson();
  EXPECT_EQ(j["apiVersion"], "v1");
  EXPECT_EQ(j["kind"], "Event");
  EXPECT_EQ(j["metadata"], (json{{"name", "web.1"}, {"namespace", "prod"}}));
  EXPECT_EQ(j["involvedObject"], (json{{"kind", "InferencePool"},
                                       {"namespace", "prod"},
                                       {"name", "web"},
                                       {"uid", "uid-web"},
                                       {"apiVersion", "eoc.dev/v1alpha1"}}));
  EXPECT_EQ(j["type"], "Warning");
  EXPECT_EQ(j["source"], (json{{"component", "eoc-controller"}, {"host", "node-1"}}));
  EXPECT_EQ(j["reportingComponent"], "eoc-controller");
  EXPECT_EQ(j["reportingInstance"], "node-1");
  EXPECT_EQ(j["firstTimestamp"], "2027-01-15T08:00:00Z");
  EXPECT_EQ(j["lastTimestamp"], "2027-01-15T08:00:00Z");
  EXPECT_EQ(j["count"], 1);
}

// ---- EventRecorder over a scripted transport ----

struct CountingMetrics final : EventRecorderMetrics {
  void OnEventWritten() override { ++written; }
  void OnEventAggregated() override { ++aggregated; }
  void OnEventDropped(EventDropReason reason) override {
    const std::lock_guard lock(mu);
    drops.push_back(reason);
  }
  void OnWriteError(const Status& /*error*/) override { ++errors; }
  std::vector<EventDropReason> Drops() {
    const std::lock_guard lock(mu);
    return drops;
  }
  std::atomic<int> written{0};
  std::atomic<int> aggregated{0};
  std::atomic<int> errors{0};
  std::mutex mu;
  std::vector<EventDropReason> drops;
};

std::string ServerEvent(const std::string& name, int count) {
  return json{{"kind", "Event"},
              {"metadata", {{"name", name}, {"namespace", "prod"}, {"resourceVersion", "7"}}},
              {"count", count}}
      .dump();
}

class EventRecorderTest : public ::testing::Test {
 protected:
  EventRecorderTest() : fake_client_(clock_), fake_(*fake_client_.transport) {}

  std::unique_ptr<EventRecorder> MakeRecorder(EventRecorderOptions options = {}) {
    options.retry_delay = std::chrono::milliseconds(0);
    return std::make_unique<EventRecorder>(
        *fake_client_.client, options, EventRecorderDeps{.clock = &clock_, .metrics = &metrics_});
  }

  // Read only while the recorder is idle (after Flush), when its writer thread is waiting.
  const std::vector<HttpRequest>& Requests() const { return fake_.requests; }

  ManualClock clock_;
  testing::FakeClient fake_client_;
  FakeTransport& fake_;  // its gate holds the writer inside a request until the test opens it
  CountingMetrics metrics_;
};

TEST_F(EventRecorderTest, CreatesThenPatchesTheSameEvent) {
  fake_.Reply(201, ServerEvent("web.00000000000000aa", 1));
  fake_.Reply(200, ServerEvent("web.00000000000000aa", 2));
  auto recorder = MakeRecorder();
  recorder->Record(Pool("web"), EventType::kNormal, "Scaled", "to 3");
  recorder->Record(Pool("web"), EventType::kNormal, "Scaled", "to 3");
  ASSERT_TRUE(recorder->Flush(seconds(10)));

  ASSERT_EQ(Requests().size(), 2U);
  EXPECT_EQ(Requests()[0].method, "POST");
  EXPECT_EQ(Requests()[0].path, "/api/v1/namespaces/prod/events");
  const json created = json::parse(Requests()[0].body);
  EXPECT_EQ(created["reason"], "Scaled");
  EXPECT_EQ(created["source"]["component"], "eoc-controller");
  EXPECT_FALSE(created["metadata"].contains("resourceVersion"));
  // The repeat patches the name the server answered with.
  EXPECT_EQ(Requests()[1].method, "PATCH");
  EXPECT_EQ(Requests()[1].path, "/api/v1/namespaces/prod/events/web.00000000000000aa");
  EXPECT_EQ(Requests()[1].content_type, "application/strategic-merge-patch+json");
  const json patch = json::parse(Requests()[1].body);
  EXPECT_EQ(patch["count"], 2);
  EXPECT_TRUE(patch.contains("lastTimestamp"));

  const auto stats = recorder->stats();
  EXPECT_EQ(stats.written, 2U);
  EXPECT_EQ(stats.aggregated, 1U);
  EXPECT_EQ(stats.dropped, 0U);
  EXPECT_EQ(metrics_.written, 2);
  EXPECT_EQ(metrics_.aggregated, 1);
}

// An answer of an odd shape (a count that is not a number, no name) is read leniently: the write
// counts, and the repeat patches the name we chose, with our count.
TEST_F(EventRecorderTest, AnOddlyShapedAnswerKeepsOurNameAndCount) {
  fake_.Reply(201, R"({"kind":"Event","count":"many","metadata":{"resourceVersion":7}})");
  fake_.Reply(200, ServerEvent("ignored", 2));
  auto recorder = MakeRecorder();
  recorder->Record(Pool("web"), EventType::kNormal, "Scaled", "to 3");
  recorder->Record(Pool("web"), EventType::kNormal, "Scaled", "to 3");
  ASSERT_TRUE(recorder->Flush(seconds(10)));
  ASSERT_EQ(Requests().size(), 2U);
  const std::string created_name = json::parse(Requests()[0].body)["metadata"]["name"];
  EXPECT_EQ(Requests()[1].method, "PATCH");
  EXPECT_EQ(Requests()[1].path, "/api/v1/namespaces/prod/events/" + created_name);
  EXPECT_EQ(json::parse(Requests()[1].body)["count"], 2);
  EXPECT_EQ(recorder->stats().written, 2U);
}

TEST_F(EventRecorderTest, AnEventGoneFromTheServerIsCreatedAgain) {
  fake_.Reply(201, ServerEvent("web.1", 1));
  fake_.Reply(404, R"({"kind":"Status","code":404,"reason":"NotFound"})");
  fake_.Reply(201, ServerEvent("web.1", 2));
  auto recorder = MakeRecorder();
  recorder->Record(Pool("web"), EventType::kNormal, "Scaled", "to 3");
  recorder->Record(Pool("web"), EventType::kNormal, "Scaled", "to 3");
  ASSERT_TRUE(recorder->Flush(seconds(10)));
  ASSERT_EQ(Requests().size(), 3U);
  EXPECT_EQ(Requests()[1].method, "PATCH");
  EXPECT_EQ(Requests()[2].method, "POST");
  EXPECT_EQ(json::parse(Requests()[2].body)["count"], 2);
  EXPECT_EQ(recorder->stats().written, 2U);
}

TEST_F(EventRecorderTest, FailedWritesAreRetriedThenDropped) {
  fake_.Fail(kReasonTransport, "connection refused");
  fake_.Reply(201, ServerEvent("web.1", 1));
  fake_.Fail(kReasonTimeout, "timed out");
  fake_.Fail(kReasonTimeout, "timed out");
  fake_.Fail(kReasonTimeout, "timed out");
  EventRecorderOptions options;
  options.max_tries = 3;
  auto recorder = MakeRecorder(options);
  recorder->Record(Pool("web"), EventType::kNormal, "Scaled", "to 3");
  recorder->Record(Pool("api"), EventType::kNormal, "Scaled", "to 3");
  ASSERT_TRUE(recorder->Flush(seconds(10)));
  EXPECT_EQ(Requests().size(), 5U);
  EXPECT_EQ(recorder->stats().written, 1U);
  EXPECT_EQ(recorder->stats().dropped, 1U);
  EXPECT_EQ(metrics_.errors, 4);
  EXPECT_EQ(metrics_.Drops(), std::vector<EventDropReason>{EventDropReason::kWriteFailed});
}

// The waits between tries, on the clock: the first spread by the injected randomness over
// [0, retry_delay), the others retry_delay each.
TEST_F(EventRecorderTest, RetriesWaitTheSpreadFirstDelayThenTheFullOneOnTheClock) {
  for (int i = 0; i < 3; ++i) fake_.Fail(kReasonTimeout, "timed out");
  fake_.Reply(201, ServerEvent("web.1", 1));
  EventRecorder recorder(*fake_client_.client, {.max_tries = 4, .retry_delay = seconds(10)},
                         {.clock = &clock_, .random = [] { return 0.25; }, .metrics = &metrics_});
  recorder.Record(Pool("web"), EventType::kNormal, "Scaled", "to 3");
  for (const auto wait : {std::chrono::milliseconds(2500), std::chrono::milliseconds(10000),
                          std::chrono::milliseconds(10000)}) {
    ASSERT_EQ(AwaitSleep(clock_, wait), wait);
    clock_.Advance(wait);
  }
  ASSERT_TRUE(recorder.Flush(seconds(10)));
  EXPECT_EQ(Requests().size(), 4U);
  EXPECT_EQ(recorder.stats().written, 1U);
  EXPECT_EQ(metrics_.errors, 3);
}

// Stop() in the middle of a long wait between tries ends it at once: the clock never moves.
TEST_F(EventRecorderTest, StopDuringARetryWaitReturnsWithoutTheClockMoving) {
  fake_.Fail(kReasonTimeout, "timed out");
  EventRecorder recorder(*fake_client_.client, {.retry_delay = std::chrono::hours(1)},
                         {.clock = &clock_, .random = [] { return 0.5; }, .metrics = &metrics_});
  recorder.Record(Pool("web"), EventType::kNormal, "Scaled", "to 3");
  ASSERT_EQ(AwaitSleep(clock_, std::chrono::minutes(30)), std::chrono::minutes(30));
  const auto before = clock_.Now();
  recorder.Stop();
  EXPECT_EQ(clock_.Now(), before);
  EXPECT_EQ(Requests().size(), 1U);
  EXPECT_EQ(metrics_.Drops(), std::vector<EventDropReason>{EventDropReason::kWriteFailed});
}

TEST_F(EventRecorderTest, RefusedEventsAreNotRetried) {
  fake_.Reply(422, R"({"kind":"Status","code":422,"reason":"Invalid","message":"bad"})");
  auto recorder = MakeRecorder();
  recorder->Record(Pool("web"), EventType::kNormal, "Scaled", "to 3");
  ASSERT_TRUE(recorder->Flush(seconds(10)));
  EXPECT_EQ(Requests().size(), 1U);
  EXPECT_EQ(metrics_.Drops(), std::vector<EventDropReason>{EventDropReason::kInvalid});
}

TEST_F(EventRecorderTest, AFullQueueDropsAndCounts) {
  for (int i = 0; i < 3; ++i) fake_.Reply(201, ServerEvent("web." + std::to_string(i), 1));
  EventRecorderOptions options;
  options.queue_capacity = 2;
  auto recorder = MakeRecorder(options);
  fake_.Close();
  recorder->Record(Pool("web"), EventType::kNormal, "A", "m");
  fake_.WaitForHeld();  // the writer holds "A" in its request; the queue is empty
  recorder->Record(Pool("web"), EventType::kNormal, "B", "m");
  recorder->Record(Pool("web"), EventType::kNormal, "C", "m");
  recorder->Record(Pool("web"), EventType::kNormal, "D", "m");  // returns at once: dropped
  EXPECT_EQ(recorder->stats().dropped, 1U);
  EXPECT_EQ(metrics_.Drops(), std::vector<EventDropReason>{EventDropReason::kQueueFull});
  fake_.Open();
  ASSERT_TRUE(recorder->Flush(seconds(10)));
  ASSERT_EQ(Requests().size(), 3U);
  EXPECT_EQ(json::parse(Requests()[2].body)["reason"], "C");
  EXPECT_EQ(recorder->stats().written, 3U);
}

TEST_F(EventRecorderTest, SpamIsDroppedAndCounted) {
  fake_.Reply(201, ServerEvent("web.1", 1));
  fake_.Reply(200, ServerEvent("web.1", 2));
  EventRecorderOptions options;
  options.correlator.spam_burst = 2;
  auto recorder = MakeRecorder(options);
  for (int i = 0; i < 4; ++i) recorder->Record(Pool("web"), EventType::kWarning, "Loop", "again");
  ASSERT_TRUE(recorder->Flush(seconds(10)));
  EXPECT_EQ(Requests().size(), 2U);
  EXPECT_EQ(recorder->stats().dropped, 2U);
  EXPECT_EQ(metrics_.Drops(),
            (std::vector<EventDropReason>{EventDropReason::kSpam, EventDropReason::kSpam}));
}

TEST_F(EventRecorderTest, MessagesAreCutTo1KiBOnACharacterBoundary) {
  fake_.Reply(201, ServerEvent("web.1", 1));
  auto recorder = MakeRecorder();
  // 1023 ASCII bytes, then a two-byte character that would straddle the limit.
  recorder->Record(Pool("web"), EventType::kNormal, "Long", std::string(1023, 'a') + "\xc3\xa9tc");
  ASSERT_TRUE(recorder->Flush(seconds(10)));
  ASSERT_EQ(Requests().size(), 1U);
  EXPECT_EQ(json::parse(Requests()[0].body)["message"], std::string(1023, 'a'));
}

TEST_F(EventRecorderTest, ClusterScopedObjectsGetEventsInDefault) {
  fake_.Reply(201, ServerEvent("node-1.1", 1));
  auto recorder = MakeRecorder();
  recorder->Record({.kind = "Node", .name = "node-1", .api_version = "v1"}, EventType::kNormal,
                   "Registered", "ok");
  recorder->Record({.kind = "Node", .api_version = "v1"}, EventType::kNormal, "NoName", "x");
  ASSERT_TRUE(recorder->Flush(seconds(10)));
  ASSERT_EQ(Requests().size(), 1U);
  EXPECT_EQ(Requests()[0].path, "/api/v1/namespaces/default/events");
  EXPECT_THAT(metrics_.Drops(), ::testing::ElementsAre(EventDropReason::kInvalid));
}

TEST_F(EventRecorderTest, StopWritesWhatIsQueued) {
  fake_.Reply(201, ServerEvent("web.1", 1));
  fake_.Reply(201, ServerEvent("api.1", 1));
  auto recorder = MakeRecorder();
  recorder->Record(Pool("web"), EventType::kNormal, "A", "m");
  recorder->Record(Pool("api"), EventType::kNormal, "A", "m");
  recorder->Stop();
  EXPECT_EQ(Requests().size(), 2U);
  EXPECT_EQ(recorder->stats().written, 2U);
  // After Stop(), Record() drops.
  recorder->Record(Pool("web"), EventType::kNormal, "B", "m");
  EXPECT_EQ(recorder->stats().dropped, 1U);
  EXPECT_THAT(metrics_.Drops(), ::testing::ElementsAre(EventDropReason::kStopped));
}

TEST_F(EventRecorderTest, WriteErrorsReachTheMetricsHook) {
  // The server's message reaches the hook, for logs.
  struct Capture final : EventRecorderMetrics {
    void OnWriteError(const Status& error) override { message = error.ToString(); }
    std::string message;
  } capture;
  fake_.Reply(403, R"({"kind":"Status","code":403,"reason":"Forbidden","message":"no events"})");
  EventRecorder recorder(*fake_client_.client, {}, {.clock = &clock_, .metrics = &capture});
  recorder.Record(Pool("web"), EventType::kNormal, "A", "m");
  ASSERT_TRUE(recorder.Flush(seconds(10)));
  EXPECT_THAT(capture.message, HasSubstr("no events"));
}

}  // namespace
}  // namespace eoc::kube
