// The elector's protocol step by step over a scripted transport, with a manual clock.
#include "kube/leader_election.h"

#include <gtest/gtest.h>

#include <atomic>

#include "clock_steps.h"
#include "fake_transport.h"
#include "kube/event_recorder.h"

namespace eoc::kube {
namespace {
using nlohmann::json;
using std::chrono::seconds;
using testing::AwaitSleep;
using testing::FakeTransport;

std::string LeaseJson(const std::string& holder, const std::string& renew, int rv,
                      int transitions = 0) {
  return json{
      {"apiVersion", "coordination.k8s.io/v1"},
      {"kind", "Lease"},
      {"metadata", {{"name", "l"}, {"namespace", "ns"}, {"resourceVersion", std::to_string(rv)}}},
      {"spec",
       {{"holderIdentity", holder},
        {"leaseDurationSeconds", 15},
        {"renewTime", renew},
        {"acquireTime", renew},
        {"leaseTransitions", transitions}}}}
      .dump();
}

struct Fixture : ::testing::Test {
  Fixture() : fake_client(clock), fake(fake_client.transport), client(fake_client.client.get()) {}
  std::unique_ptr<LeaderElector> Make(const LeaderCallbacks& cb = {},
                                      LeaderElectionConfig config = {}) {
    config.lease_namespace = "ns";
    config.lease_name = "l";
    config.identity = "me";
    return std::make_unique<LeaderElector>(
        *client, config, cb, LeaderElectorDeps{.clock = &clock, .random = [] { return 0.5; }});
  }
  ManualClock clock;
  testing::FakeClient fake_client;
  FakeTransport* fake;
  Client* client;
};

TEST_F(Fixture, CreatesWhenAbsent) {
  auto e = Make();
  fake->Reply(404, R"({"kind":"Status","code":404,"reason":"NotFound"})");
  fake->Reply(201, LeaseJson("me", "2030-01-01T00:00:00.000000Z", 1));
  EXPECT_EQ(e->TryAcquireOrRenew(), LeaderElector::Attempt::kLeading);
  ASSERT_EQ(fake->requests.size(), 2U);
  EXPECT_EQ(fake->requests[1].method, "POST");
  auto body = json::parse(fake->requests[1].body);
  EXPECT_EQ(body["spec"]["holderIdentity"], "me");
  EXPECT_EQ(body["spec"]["leaseDurationSeconds"], 15);
  EXPECT_EQ(body["spec"]["leaseTransitions"], 0);
}

TEST_F(Fixture, FollowerTimesFromObservationNotRenewTime) {
  auto e = Make();
  // renewTime long in the past: a follower must still wait 15 s from when it saw the record.
  fake->Reply(200, LeaseJson("other", "2000-01-01T00:00:00.000000Z", 5, 3));
  EXPECT_EQ(e->TryAcquireOrRenew(), LeaderElector::Attempt::kHeldByOther);
  clock.Advance(seconds(14));
  fake->Reply(200, LeaseJson("other", "2000-01-01T00:00:00.000000Z", 5, 3));
  EXPECT_EQ(e->TryAcquireOrRenew(), LeaderElector::Attempt::kHeldByOther);
  clock.Advance(seconds(2));
  fake->Reply(200, LeaseJson("other", "2000-01-01T00:00:00.000000Z", 5, 3));
  fake->Reply(200, LeaseJson("me", "2030-01-01T00:00:00.000000Z", 6, 4));
  EXPECT_EQ(e->TryAcquireOrRenew(), LeaderElector::Attempt::kLeading);
  auto put = json::parse(fake->requests.back().body);
  EXPECT_EQ(fake->requests.back().method, "PUT");
  EXPECT_EQ(put["metadata"]["resourceVersion"], "5");
  EXPECT_EQ(put["spec"]["leaseTransitions"], 4);
  EXPECT_EQ(put["spec"]["holderIdentity"], "me");
}

TEST_F(Fixture, ARenewalRestartsTheFollowersClock) {
  auto e = Make();
  fake->Reply(200, LeaseJson("other", "t1", 5));
  EXPECT_EQ(e->TryAcquireOrRenew(), LeaderElector::Attempt::kHeldByOther);
  clock.Advance(seconds(10));
  fake->Reply(200, LeaseJson("other", "t2", 6));
  EXPECT_EQ(e->TryAcquireOrRenew(), LeaderElector::Attempt::kHeldByOther);
  clock.Advance(seconds(10));  // 20 s since first seen, 10 since the change
  fake->Reply(200, LeaseJson("other", "t2", 6));
  EXPECT_EQ(e->TryAcquireOrRenew(), LeaderElector::Attempt::kHeldByOther);
}

TEST_F(Fixture, ConflictIsALostRace) {
  auto e = Make();
  fake->Reply(200, LeaseJson("", "t1", 5));
  fake->Reply(409, R"({"kind":"Status","code":409,"reason":"Conflict"})");
  EXPECT_EQ(e->TryAcquireOrRenew(), LeaderElector::Attempt::kFailed);
}

// The whole loop on the manual clock: the test moves it over each of the elector's sleeps.
TEST_F(Fixture, RunLoopAcquiresRenewsAndStepsDownAtTheRenewDeadline) {
  std::atomic<int> started{0};
  std::atomic<int> stopped{0};
  auto e =
      Make({.on_started_leading = [&] { ++started; }, .on_stopped_leading = [&] { ++stopped; }});
  fake->Reply(404, R"({"kind":"Status","code":404,"reason":"NotFound"})");
  fake->Reply(201, LeaseJson("me", "t0", 1));
  fake->Reply(200, LeaseJson("me", "t1", 2));  // optimistic renew
  // then renewals fail: no answers -> transport errors -> stops leading after renew deadline
  e->Start();
  const auto acquired = clock.Now();
  // Renewals every retry period (2 s); the one at 2 s succeeds, those after it fail, and the
  // last sleep is cut short to end at the renew deadline, 10 s after the renewal at 2 s.
  for (const auto wait : {seconds(2), seconds(2), seconds(2), seconds(2), seconds(2), seconds(2)}) {
    ASSERT_EQ(AwaitSleep(clock, wait), wait);
    EXPECT_TRUE(e->IsLeader());
    clock.Advance(wait);
  }
  EXPECT_EQ(clock.Now() - acquired, seconds(12));
  // Back to candidacy: the first try fails (no answer) and waits a jittered retry period.
  ASSERT_EQ(AwaitSleep(clock, std::chrono::milliseconds(3200)), std::chrono::milliseconds(3200));
  EXPECT_FALSE(e->IsLeader());
  e->Stop();
  EXPECT_EQ(started, 1);
  EXPECT_EQ(stopped, 1);
}

// A candidate's retry period is jittered as client-go's wait.Jitter: retry_period * (1 +
// jitter_factor * random), exactly, with the injected randomness.
TEST_F(Fixture, CandidatesRetryAfterTheJitteredPeriod) {
  double next_random = 0.5;
  LeaderElector e(*client, {.lease_namespace = "ns", .lease_name = "l", .identity = "me"}, {},
                  {.clock = &clock, .random = [&] { return next_random; }});
  for (int i = 0; i < 3; ++i) fake->Reply(200, LeaseJson("other", "t" + std::to_string(i), 5 + i));
  e.Start();
  ASSERT_EQ(AwaitSleep(clock, std::chrono::milliseconds(3200)), std::chrono::milliseconds(3200));
  next_random = 0;  // read by the elector's next try, after this advance wakes it
  clock.Advance(std::chrono::milliseconds(3200));
  ASSERT_EQ(AwaitSleep(clock, seconds(2)), seconds(2));
  EXPECT_EQ(e.Leader(), "other");
  e.Stop();
}

// Stop() ends a long sleep between tries at once, with the clock standing still.
TEST_F(Fixture, StopDuringALongRetryWaitReturnsWithoutTheClockMoving) {
  auto e = Make({}, {.lease_duration = std::chrono::hours(10),
                     .renew_deadline = std::chrono::hours(5),
                     .retry_period = std::chrono::hours(1)});
  fake->Reply(200, LeaseJson("other", "t0", 5));
  e->Start();
  ASSERT_EQ(AwaitSleep(clock, std::chrono::minutes(96)), std::chrono::minutes(96));  // 1.6 h
  const auto before = clock.Now();
  e->Stop();
  EXPECT_EQ(clock.Now(), before);
  EXPECT_EQ(fake->requests.size(), 1U);
}

// A leader-only writer fenced by IsLeader() writes nothing once the last renewal is older than the
// renew deadline, although the elector's thread (stuck in a renewal that never answers) has not
// yet stopped leading.
TEST_F(Fixture, AFencedWriterWritesNothingPastTheRenewDeadline) {
  std::atomic<int> stopped{0};
  LeaderElector e(*client, {.lease_namespace = "ns", .lease_name = "l", .identity = "me"},
                  {.on_stopped_leading = [&] { ++stopped; }},
                  {.clock = &clock, .random = [] { return 0.5; }});
  fake->Reply(404, R"({"kind":"Status","code":404,"reason":"NotFound"})");
  fake->Reply(201, LeaseJson("me", "t0", 1));

  // The recorder on a clock of its own, so that only the elector sleeps on `clock`.
  ManualClock events_clock;
  testing::FakeClient events_client(events_clock);
  FakeTransport* events = events_client.transport;
  EventRecorder recorder(*events_client.client, {},
                         {.clock = &events_clock, .fence = [&e] { return e.IsLeader(); }});
  const ObjectReference pool{.kind = "InferencePool", .ns = "prod", .name = "web"};

  e.Start();
  ASSERT_EQ(AwaitSleep(clock, seconds(2)), seconds(2));  // leading, and waiting to renew
  ASSERT_TRUE(e.IsLeader());
  events->Reply(201, R"({"kind":"Event","metadata":{"name":"web.1","namespace":"prod"}})");
  recorder.Record(pool, EventType::kNormal, "Scaled", "to 3");
  ASSERT_TRUE(recorder.Flush(seconds(10)));
  EXPECT_EQ(events->requests.size(), 1U);

  fake->Close();
  clock.Advance(seconds(2));
  fake->WaitForHeld();  // the renewal hangs
  clock.Advance(seconds(7));
  EXPECT_TRUE(e.IsLeader());
  clock.Advance(seconds(1));  // 10 s since the renewal: the deadline
  EXPECT_FALSE(e.IsLeader());
  EXPECT_EQ(stopped, 0);  // the elector's thread has not noticed yet
  recorder.Record(pool, EventType::kNormal, "Scaled", "to 4");
  ASSERT_TRUE(recorder.Flush(seconds(10)));
  EXPECT_EQ(events->requests.size(), 1U);  // nothing more was written
  EXPECT_EQ(recorder.stats().dropped, 1U);

  fake->Open();  // the renewal fails (no answer), past the deadline: the elector steps down
  e.Stop();
  EXPECT_EQ(stopped, 1);
}
}  // namespace
}  // namespace eoc::kube
