// The generic controller loop: how a reconcile's result turns into work-queue calls, the wait for
// the caches to sync (on a ManualClock, so no real time is waited), Stop() during that wait, and
// one key never reconciled by two workers at once.
#include "kube/controller.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "eventually.h"

namespace eoc::kube {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

// Counts what the queue is asked: retries (When) and resets (Forget); never makes a key wait.
class CountingRateLimiter final : public RateLimiter {
 public:
  std::chrono::nanoseconds When(const std::string& /*key*/) override {
    ++when;
    return nanoseconds::zero();
  }
  void Forget(const std::string& /*key*/) override { ++forget; }
  int NumRequeues(const std::string& /*key*/) override { return 0; }

  std::atomic<int> when{0};
  std::atomic<int> forget{0};
};

// Counts the queue's delayed adds (AddAfter and AddRateLimited) and finished keys (Done).
class CountingQueueMetrics final : public WorkQueueMetrics {
 public:
  void OnRetry() override { ++retries; }
  void OnWorkDuration(std::chrono::nanoseconds /*work*/) override { ++done; }

  std::atomic<int> retries{0};
  std::atomic<int> done{0};
};

class CountingControllerMetrics final : public ControllerMetrics {
 public:
  void OnReconcile(ReconcileOutcome outcome, std::chrono::nanoseconds /*took*/) override {
    const std::lock_guard lock(mu);
    outcomes.push_back(outcome);
  }
  void OnException(const std::string& key, const std::string& what) override {
    const std::lock_guard lock(mu);
    exceptions.push_back(key + ": " + what);
  }
  std::vector<ReconcileOutcome> Outcomes() {
    const std::lock_guard lock(mu);
    return outcomes;
  }

  std::mutex mu;
  std::vector<ReconcileOutcome> outcomes;
  std::vector<std::string> exceptions;
};

// Answers each reconcile with the next of `script` (then success), counting the calls.
class ScriptedReconciler final : public Reconciler {
 public:
  using Step = std::function<Result<ReconcileResult>()>;
  explicit ScriptedReconciler(std::vector<Step> script = {}) : script_(std::move(script)) {}

  Result<ReconcileResult> Reconcile(const std::string& /*key*/) override {
    const int call = calls++;
    if (call < static_cast<int>(script_.size())) return script_[static_cast<std::size_t>(call)]();
    return ReconcileResult{};
  }

  std::atomic<int> calls{0};

 private:
  std::vector<Step> script_;
};

Status Conflict() { return Status{409, "Conflict", "the object has been modified", std::nullopt}; }

struct Fixture {
  explicit Fixture(std::vector<ScriptedReconciler::Step> script, int workers = 1)
      : reconciler(std::move(script)),
        limiter(new CountingRateLimiter()),
        controller("test", reconciler,
                   {.workers = workers, .rate_limiter = std::unique_ptr<RateLimiter>(limiter)},
                   {.clock = &clock, .queue_metrics = &queue, .metrics = &metrics}) {}

  ManualClock clock;
  ScriptedReconciler reconciler;
  CountingRateLimiter* limiter;  // owned by the controller's queue
  CountingQueueMetrics queue;
  CountingControllerMetrics metrics;
  Controller controller;
};

TEST(Controller, AnErrorIsRetriedWithBackoffAndASuccessForgetsTheKey) {
  Fixture f({[] { return Result<ReconcileResult>(Conflict()); }});
  f.controller.Add("ns/a");
  f.controller.Start({});
  // The error: AddRateLimited (the limiter asked how long, here no time); then the success.
  ASSERT_TRUE(testing::Eventually([&] { return f.queue.done.load() == 2; }));
  EXPECT_EQ(f.reconciler.calls.load(), 2);
  EXPECT_EQ(f.limiter->when.load(), 1);
  EXPECT_EQ(f.limiter->forget.load(), 1);
  EXPECT_EQ(f.queue.retries.load(), 1);
  EXPECT_EQ(f.metrics.Outcomes(),
            (std::vector<ReconcileOutcome>{ReconcileOutcome::kError, ReconcileOutcome::kSuccess}));
  f.controller.Stop();
}

TEST(Controller, RequeueAfterDelaysTheKeyAndResetsItsBackoff) {
  Fixture f({[] { return Result<ReconcileResult>(ReconcileResult{.requeue_after = hours(1)}); }});
  f.controller.Add("ns/a");
  f.controller.Start({});
  ASSERT_TRUE(testing::Eventually([&] { return f.queue.done.load() == 1; }));
  // Forget, then AddAfter: a delayed add that is not the limiter's.
  EXPECT_EQ(f.limiter->forget.load(), 1);
  EXPECT_EQ(f.limiter->when.load(), 0);
  EXPECT_EQ(f.queue.retries.load(), 1);
  EXPECT_EQ(f.reconciler.calls.load(), 1);  // not due for an hour
  EXPECT_EQ(f.metrics.Outcomes(), std::vector<ReconcileOutcome>{ReconcileOutcome::kRequeue});
  f.controller.Stop();
}

TEST(Controller, RequeueAndAnExceptionAreRetriedWithBackoff) {
  Fixture f({[] { return Result<ReconcileResult>(ReconcileResult{.requeue = true}); },
             []() -> Result<ReconcileResult> { throw std::logic_error("a bug"); }});
  f.controller.Add("ns/a");
  f.controller.Start({});
  ASSERT_TRUE(testing::Eventually([&] { return f.queue.done.load() == 3; }));
  EXPECT_EQ(f.limiter->when.load(), 2);
  EXPECT_EQ(f.limiter->forget.load(), 1);  // the final success only
  EXPECT_EQ(f.metrics.Outcomes(),
            (std::vector<ReconcileOutcome>{ReconcileOutcome::kRequeue, ReconcileOutcome::kError,
                                           ReconcileOutcome::kSuccess}));
  const std::lock_guard lock(f.metrics.mu);
  EXPECT_EQ(f.metrics.exceptions, std::vector<std::string>{"ns/a: a bug"});
}

TEST(Controller, OutcomeOfAResult) {
  EXPECT_EQ(OutcomeOf(ReconcileResult{}), ReconcileOutcome::kSuccess);
  EXPECT_EQ(OutcomeOf(ReconcileResult{.requeue = true}), ReconcileOutcome::kRequeue);
  EXPECT_EQ(OutcomeOf(ReconcileResult{.requeue_after = milliseconds(5)}),
            ReconcileOutcome::kRequeue);
  EXPECT_EQ(OutcomeOf(Conflict()), ReconcileOutcome::kError);
  EXPECT_STREQ(ToString(ReconcileOutcome::kRequeue), "requeue");
}

// Waits (in real time) until the sync wait sleeps for its poll period on the clock.
bool AwaitSyncPoll(const ManualClock& clock, milliseconds period) {
  const auto due = clock.Now() + period;
  return testing::Eventually([&] { return clock.NextDeadline() == due; });
}

TEST(Controller, WorkersWaitUntilEveryCacheHasSynced) {
  Fixture f({});
  std::atomic<bool> pods{true};
  std::atomic<bool> nodes{false};
  f.controller.Add("ns/a");
  f.controller.Start({[&] { return pods.load(); }, [&] { return nodes.load(); }});
  ASSERT_TRUE(AwaitSyncPoll(f.clock, milliseconds(100)));
  f.clock.AdvanceToNextDeadline();  // polled again: still not synced
  ASSERT_TRUE(AwaitSyncPoll(f.clock, milliseconds(100)));
  EXPECT_FALSE(f.controller.Started());
  EXPECT_EQ(f.reconciler.calls.load(), 0);

  nodes = true;
  f.clock.AdvanceToNextDeadline();
  ASSERT_TRUE(testing::Eventually([&] { return f.reconciler.calls.load() == 1; }));
  EXPECT_TRUE(f.controller.Started());
  f.controller.Stop();
}

TEST(Controller, StopDuringTheSyncWaitReturnsAtOnce) {
  Fixture f({});
  f.controller.Add("ns/a");
  f.controller.Start({[] { return false; }});
  ASSERT_TRUE(AwaitSyncPoll(f.clock, milliseconds(100)));
  // The clock never moves: only Stop()'s wake-up can end the wait (a hang fails by timeout).
  f.controller.Stop();
  EXPECT_FALSE(f.controller.Started());
  EXPECT_EQ(f.reconciler.calls.load(), 0);
}

// Records, per key, how many reconciles of it run at this moment, and the most ever seen.
class ConcurrencyProbe final : public Reconciler {
 public:
  Result<ReconcileResult> Reconcile(const std::string& key) override {
    std::atomic<int>* running = nullptr;
    {
      const std::lock_guard lock(mu_);
      running = &running_[key];
    }
    const int now = ++*running;
    int seen = most_.load();
    while (now > seen && !most_.compare_exchange_weak(seen, now)) {
    }
    for (int i = 0; i < 50; ++i) std::this_thread::yield();  // widen the window
    --*running;
    ++calls;
    return ReconcileResult{};
  }

  std::atomic<int> calls{0};
  int MostAtOnce() const { return most_.load(); }

 private:
  std::mutex mu_;
  std::map<std::string, std::atomic<int>> running_;  // node-based: addresses stay put
  std::atomic<int> most_{0};
};

TEST(Controller, OneKeyIsNeverReconciledByTwoWorkersAtOnce) {
  ConcurrencyProbe probe;
  Controller controller("test", probe, {.workers = 4});
  controller.Start({});
  const std::vector<std::string> keys = {"ns/a", "ns/b", "ns/c"};
  for (int round = 0; round < 2000; ++round) {
    controller.Add(keys[static_cast<std::size_t>(round) % keys.size()]);
    if (round % 100 == 0) std::this_thread::yield();
  }
  ASSERT_TRUE(testing::Eventually([&] { return probe.calls.load() >= 3; }));
  controller.Stop();
  EXPECT_EQ(probe.MostAtOnce(), 1);
}

}  // namespace
}  // namespace eoc::kube
