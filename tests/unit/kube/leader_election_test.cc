// The elector's protocol step by step over a scripted transport, with a manual clock.
#include "kube/leader_election.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>

#include "fake_transport.h"
#include "kube/event_recorder.h"

namespace eoc::kube {
namespace {
using nlohmann::json;
using std::chrono::seconds;
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
  std::unique_ptr<LeaderElector> Make(const LeaderCallbacks& cb = {}) {
    return std::make_unique<LeaderElector>(
        *client, LeaderElectionConfig{.lease_namespace = "ns", .lease_name = "l", .identity = "me"},
        cb,
        LeaderElectorDeps{.clock = &clock,
                          .sleeper = [this](std::chrono::nanoseconds d) { clock.Advance(d); },
                          .random = [] { return 0.5; }});
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

TEST_F(Fixture, RunLoopWithInjectedSleeper) {
  std::atomic<int> started{0};
  std::atomic<int> stopped{0};
  auto e =
      Make({.on_started_leading = [&] { ++started; }, .on_stopped_leading = [&] { ++stopped; }});
  fake->Reply(404, R"({"kind":"Status","code":404,"reason":"NotFound"})");
  fake->Reply(201, LeaseJson("me", "t0", 1));
  fake->Reply(200, LeaseJson("me", "t1", 2));  // optimistic renew
  // then renewals fail: no answers -> transport errors -> stops leading after renew deadline
  e->Start();
  for (int i = 0; i < 200 && stopped == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  e->Stop();
  EXPECT_EQ(started, 1);
  EXPECT_EQ(stopped, 1);
}

// Holds the elector's thread inside its sleep until the test opens it: a renewal that never comes.
struct StuckSleeper {
  void Sleep() {
    std::unique_lock lock(mu);
    ++entered;
    cv.notify_all();
    cv.wait(lock, [this] { return open; });
  }
  void WaitEntered() {
    std::unique_lock lock(mu);
    cv.wait(lock, [this] { return entered > 0; });
  }
  void Open() {
    {
      const std::lock_guard lock(mu);
      open = true;
    }
    cv.notify_all();
  }
  std::mutex mu;
  std::condition_variable cv;
  int entered = 0;
  bool open = false;
};

// A leader-only writer fenced by IsLeader() writes nothing once the last renewal is older than the
// renew deadline, although the elector's thread (stuck here) has not yet stopped leading.
TEST_F(Fixture, AFencedWriterWritesNothingPastTheRenewDeadline) {
  StuckSleeper stuck;
  std::atomic<int> stopped{0};
  LeaderElector e(*client, {.lease_namespace = "ns", .lease_name = "l", .identity = "me"},
                  {.on_stopped_leading = [&] { ++stopped; }},
                  {.clock = &clock,
                   .sleeper = [&](std::chrono::nanoseconds) { stuck.Sleep(); },
                   .random = [] { return 0.5; }});
  fake->Reply(404, R"({"kind":"Status","code":404,"reason":"NotFound"})");
  fake->Reply(201, LeaseJson("me", "t0", 1));

  testing::FakeClient events_client(clock);
  FakeTransport* events = events_client.transport;
  EventRecorder recorder(*events_client.client, {},
                         {.clock = &clock, .fence = [&e] { return e.IsLeader(); }});
  const ObjectReference pool{.kind = "InferencePool", .ns = "prod", .name = "web"};

  e.Start();
  stuck.WaitEntered();  // leading, and waiting to renew
  ASSERT_TRUE(e.IsLeader());
  events->Reply(201, R"({"kind":"Event","metadata":{"name":"web.1","namespace":"prod"}})");
  recorder.Record(pool, EventType::kNormal, "Scaled", "to 3");
  ASSERT_TRUE(recorder.Flush(seconds(10)));
  EXPECT_EQ(events->requests.size(), 1U);

  clock.Advance(seconds(9));
  EXPECT_TRUE(e.IsLeader());
  clock.Advance(seconds(1));  // 10 s since the renewal: the deadline
  EXPECT_FALSE(e.IsLeader());
  EXPECT_EQ(stopped, 0);  // the elector's thread has not noticed yet
  recorder.Record(pool, EventType::kNormal, "Scaled", "to 4");
  ASSERT_TRUE(recorder.Flush(seconds(10)));
  EXPECT_EQ(events->requests.size(), 1U);  // nothing more was written
  EXPECT_EQ(recorder.stats().dropped, 1U);

  stuck.Open();
  e.Stop();
  EXPECT_EQ(stopped, 1);
}
}  // namespace
}  // namespace eoc::kube
