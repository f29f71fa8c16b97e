#include "kube/work_queue.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "clock_steps.h"

namespace eoc::kube {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;

// Only guards against a hang turning into a stuck test run; never a speed requirement.
constexpr seconds kHangGuard(30);

// Get() on another thread; if it has not returned within the guard, fails the test and shuts the
// queue down so that it does return.
std::optional<std::string> GetOrFail(WorkQueue& queue) {
  auto got = std::async(std::launch::async, [&queue] { return queue.Get(); });
  if (got.wait_for(kHangGuard) == std::future_status::timeout) {
    ADD_FAILURE() << "Get() did not return";
    queue.ShutDown();
  }
  return got.get();
}

// Waits for a future that should become ready; if it does not within the guard, fails the test
// and shuts the queue down so that the thread behind the future can end.
template <typename T>
void ExpectReady(std::future<T>& future, WorkQueue& queue, const char* what) {
  if (future.wait_for(kHangGuard) == std::future_status::ready) return;
  ADD_FAILURE() << what;
  queue.ShutDown();
}

using testing::AwaitSleep;

std::string KeyOf(int i) { return "ns/k" + std::to_string(i); }

// ---- rate limiters ----

TEST(ItemExponentialFailureRateLimiter, DoublesFromBaseUpToTheCap) {
  ItemExponentialFailureRateLimiter limiter(milliseconds(5), seconds(1000));
  nanoseconds expected = milliseconds(5);
  for (int i = 0; i < 200; ++i) {
    ASSERT_EQ(limiter.When("ns/a"), std::min<nanoseconds>(expected, seconds(1000))) << i;
    if (expected < seconds(1000)) expected *= 2;
  }
  EXPECT_EQ(limiter.NumRequeues("ns/a"), 200);
}

TEST(ItemExponentialFailureRateLimiter, ForgetStartsOverAndKeysAreIndependent) {
  ItemExponentialFailureRateLimiter limiter(milliseconds(5), seconds(1000));
  EXPECT_EQ(limiter.When("ns/a"), milliseconds(5));
  EXPECT_EQ(limiter.When("ns/a"), milliseconds(10));
  EXPECT_EQ(limiter.When("ns/a"), milliseconds(20));
  EXPECT_EQ(limiter.When("ns/b"), milliseconds(5));
  EXPECT_EQ(limiter.NumRequeues("ns/a"), 3);
  EXPECT_EQ(limiter.NumRequeues("ns/b"), 1);

  limiter.Forget("ns/a");
  EXPECT_EQ(limiter.NumRequeues("ns/a"), 0);
  EXPECT_EQ(limiter.When("ns/a"), milliseconds(5));
  EXPECT_EQ(limiter.When("ns/b"), milliseconds(10));
}

TEST(ItemExponentialFailureRateLimiter, LargeBaseReachesTheCapWithoutOverflowing) {
  // 1 h * 2^22 no longer fits in 64-bit nanoseconds: the answer must be the cap, not a wrap.
  ItemExponentialFailureRateLimiter limiter(hours(1), nanoseconds::max());
  nanoseconds previous = nanoseconds::zero();
  for (int i = 0; i < 100; ++i) {
    const nanoseconds delay = limiter.When("ns/a");
    ASSERT_GE(delay, previous) << i;
    previous = delay;
  }
  EXPECT_EQ(previous, nanoseconds::max());
}

TEST(BucketRateLimiter, BurstOf100ThenOneEvery100Ms) {
  ManualClock clock;
  BucketRateLimiter limiter(10, 100, clock);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(limiter.When(KeyOf(i)), nanoseconds::zero()) << i;
  // Out of tokens: waiting callers are spaced 100 ms apart, whatever the key.
  EXPECT_EQ(limiter.When("ns/a"), milliseconds(100));
  EXPECT_EQ(limiter.When("ns/b"), milliseconds(200));
  EXPECT_EQ(limiter.When("ns/a"), milliseconds(300));
  clock.Advance(milliseconds(300));
  EXPECT_EQ(limiter.When("ns/c"), milliseconds(100));
  // No per-key state.
  EXPECT_EQ(limiter.NumRequeues("ns/a"), 0);
}

TEST(MaxOfRateLimiter, TakesTheLongestAndForgetsEverywhere) {
  ManualClock clock;
  std::vector<std::unique_ptr<RateLimiter>> limiters;
  limiters.push_back(
      std::make_unique<ItemExponentialFailureRateLimiter>(milliseconds(5), seconds(1000)));
  limiters.push_back(std::make_unique<BucketRateLimiter>(10, 2, clock));
  limiters.push_back(
      std::make_unique<ItemExponentialFailureRateLimiter>(milliseconds(1), seconds(1000)));
  MaxOfRateLimiter limiter(std::move(limiters));

  EXPECT_EQ(limiter.When("ns/a"), milliseconds(5));    // 5 ms, 0, 1 ms
  EXPECT_EQ(limiter.When("ns/a"), milliseconds(10));   // 10 ms, 0, 2 ms
  EXPECT_EQ(limiter.When("ns/a"), milliseconds(100));  // 20 ms, 100 ms (bucket empty), 4 ms
  EXPECT_EQ(limiter.NumRequeues("ns/a"), 3);

  limiter.Forget("ns/a");
  EXPECT_EQ(limiter.NumRequeues("ns/a"), 0);
  clock.Advance(hours(1));  // the bucket refills
  EXPECT_EQ(limiter.When("ns/a"), milliseconds(5));
}

TEST(DefaultControllerRateLimiter, PerKeyBackoffUnderAnOverallBucket) {
  ManualClock clock;
  const auto limiter = DefaultControllerRateLimiter(clock);
  EXPECT_EQ(limiter->When("ns/a"), milliseconds(5));
  EXPECT_EQ(limiter->When("ns/a"), milliseconds(10));
  for (int i = 0; i < 98; ++i) ASSERT_EQ(limiter->When(KeyOf(i)), milliseconds(5)) << i;
  // 100 retries spent the burst: a fresh key now waits for the bucket, not its own 5 ms.
  EXPECT_EQ(limiter->When("ns/fresh"), milliseconds(100));

  clock.Advance(hours(1));
  EXPECT_EQ(limiter->When("ns/a"), milliseconds(20));
  limiter->Forget("ns/a");
  EXPECT_EQ(limiter->When("ns/a"), milliseconds(5));
}

// ---- the queue ----

TEST(WorkQueue, AddDeduplicatesWaitingKeysInOrder) {
  WorkQueue queue("test");
  queue.Add("ns/a");
  queue.Add("ns/b");
  queue.Add("ns/a");
  EXPECT_EQ(queue.Len(), 2U);
  EXPECT_EQ(queue.Get(), "ns/a");
  EXPECT_EQ(queue.Get(), "ns/b");
  EXPECT_EQ(queue.Len(), 0U);
  EXPECT_EQ(queue.Name(), "test");
}

TEST(WorkQueue, KeyAddedWhileProcessingIsHandedOutAgainOnlyAfterDone) {
  WorkQueue queue("test");
  queue.Add("ns/a");
  ASSERT_EQ(queue.Get(), "ns/a");
  queue.Add("ns/a");
  queue.Add("ns/a");
  EXPECT_EQ(queue.Len(), 0U);  // held back while a worker holds it

  std::atomic<bool> second_got{false};
  auto second = std::async(std::launch::async, [&] {
    auto key = queue.Get();
    second_got = true;
    return key;
  });
  std::this_thread::sleep_for(milliseconds(20));
  EXPECT_FALSE(second_got) << "a second worker got a key that the first still holds";

  queue.Done("ns/a");
  ExpectReady(second, queue, "the re-added key was not handed out after Done");
  EXPECT_EQ(second.get(), "ns/a");  // once: the two adds were de-duplicated
  EXPECT_EQ(queue.Len(), 0U);
  queue.Done("ns/a");
  EXPECT_EQ(queue.Len(), 0U);
}

TEST(WorkQueue, DoneForAKeyNotBeingProcessedIsIgnored) {
  WorkQueue queue("test");
  queue.Add("ns/a");
  queue.Done("ns/a");  // waiting, not processing: must not queue it a second time
  EXPECT_EQ(queue.Len(), 1U);
  ASSERT_EQ(queue.Get(), "ns/a");
  queue.Done("ns/a");
  queue.Done("ns/a");
  EXPECT_EQ(queue.Len(), 0U);
}

// Atomically raises `target` to at least `value`.
void RaiseTo(std::atomic<int>& target, int value) {
  int current = target.load();
  while (current < value && !target.compare_exchange_weak(current, value)) {
  }
}

TEST(WorkQueue, ManyWorkersNeverShareAKeyAndNoAddIsLost) {
  constexpr int kKeys = 4;
  constexpr int kWorkers = 8;
  constexpr int kProducers = 3;
  // Producers add until workers have processed this many keys (a count, not a time, so that a
  // fast machine still exercises re-adds during processing), with a cap in case they never do.
  constexpr int kProcessings = 5000;
  constexpr int kMaxAddsPerProducer = 5'000'000;
  WorkQueue queue("hammer");
  std::array<std::atomic<int>, kKeys> in_flight{};
  std::array<std::atomic<int>, kKeys> version{};  // bumped before each Add of the key
  std::array<std::atomic<int>, kKeys> seen{};     // the newest version a worker started from
  std::atomic<int> overlaps{0};
  std::atomic<int> processed{0};

  std::vector<std::thread> workers;
  workers.reserve(kWorkers);
  for (int w = 0; w < kWorkers; ++w) {
    workers.emplace_back([&] {
      while (auto key = queue.Get()) {
        const int i = key->back() - '0';
        if (in_flight.at(i).fetch_add(1) != 0) ++overlaps;
        RaiseTo(seen.at(i), version.at(i).load());
        std::this_thread::yield();  // widen the window for a second worker to collide
        in_flight.at(i).fetch_sub(1);
        ++processed;
        queue.Done(*key);
      }
    });
  }
  std::vector<std::thread> producers;
  producers.reserve(kProducers);
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (int n = 0; n < kMaxAddsPerProducer && processed < kProcessings; ++n) {
        const int i = (n + p) % kKeys;
        version.at(i).fetch_add(1);
        queue.Add(KeyOf(i));
        std::this_thread::yield();  // let workers run on a machine with few cores
      }
    });
  }
  for (auto& producer : producers) producer.join();
  // Keys still queued, or added again while being processed, are handed out before Get() says
  // the queue is shut down, so every worker ends after the last add has been processed.
  queue.ShutDown();
  for (auto& worker : workers) worker.join();

  EXPECT_GE(processed, kProcessings);
  EXPECT_EQ(overlaps, 0) << "a key was processed by two workers at once";
  for (int i = 0; i < kKeys; ++i) {
    EXPECT_EQ(seen.at(i).load(), version.at(i).load()) << "an add of " << KeyOf(i) << " was lost";
  }
}

// Delays are due on the queue's clock: these tests move a ManualClock, and no real time passes.
TEST(WorkQueue, AddAfterDeliversOnceTheDelayHasPassed) {
  ManualClock clock;
  WorkQueue queue("test", clock);
  queue.AddAfter("ns/later", hours(1));
  queue.AddAfter("ns/soon", milliseconds(20));
  EXPECT_EQ(AwaitSleep(clock, milliseconds(20)),
            milliseconds(20));  // the loop sleeps until the first due
  EXPECT_EQ(queue.Len(), 0U);
  clock.Advance(milliseconds(19));
  EXPECT_EQ(AwaitSleep(clock, milliseconds(1)),
            milliseconds(1));  // woken early: asleep again, not due
  EXPECT_EQ(queue.Len(), 0U);
  clock.Advance(milliseconds(1));
  EXPECT_EQ(GetOrFail(queue), "ns/soon");
  EXPECT_EQ(AwaitSleep(clock, hours(1) - milliseconds(20)), hours(1) - milliseconds(20));
  EXPECT_EQ(queue.Len(), 0U);  // the hour has not passed
  clock.Advance(hours(1));
  EXPECT_EQ(GetOrFail(queue), "ns/later");
}

TEST(WorkQueue, AddAfterWithoutADelayAddsAtOnce) {
  ManualClock clock;
  WorkQueue queue("test", clock);
  queue.AddAfter("ns/a", nanoseconds::zero());
  queue.AddAfter("ns/b", -seconds(1));
  EXPECT_EQ(queue.Len(), 2U);
}

TEST(WorkQueue, ALaterShorterDelayWins) {
  ManualClock clock;
  WorkQueue queue("test", clock);
  queue.AddAfter("ns/a", hours(1));
  queue.AddAfter("ns/a", milliseconds(20));
  EXPECT_EQ(AwaitSleep(clock, milliseconds(20)), milliseconds(20));
  clock.Advance(milliseconds(20));
  EXPECT_EQ(GetOrFail(queue), "ns/a");
  queue.Done("ns/a");
  // The hour-long add was replaced, not kept beside it.
  EXPECT_EQ(clock.AwaitTimedSleep(milliseconds(20)), std::nullopt);
}

// The delay loop sleeps until the earliest due time; moving that key earlier erases the node it
// took that time from. It must sleep on a copy (AddressSanitizer reported a heap-use-after-free
// here).
TEST(WorkQueue, MovingTheAwaitedKeyEarlierWakesTheDelayLoopSafely) {
  ManualClock clock;
  WorkQueue queue("test", clock);
  queue.AddAfter("ns/a", hours(1));
  ASSERT_EQ(AwaitSleep(clock, hours(1)), hours(1));  // the loop is now asleep until the hour
  queue.AddAfter("ns/a", milliseconds(1));
  EXPECT_EQ(AwaitSleep(clock, milliseconds(1)), milliseconds(1));
  clock.Advance(milliseconds(1));
  EXPECT_EQ(GetOrFail(queue), "ns/a");
}

// Shutting down clears the delayed keys while the loop sleeps until one of them.
TEST(WorkQueue, ShutDownWhileTheDelayLoopWaitsIsSafe) {
  ManualClock clock;
  WorkQueue queue("test", clock);
  queue.AddAfter("ns/a", hours(1));
  ASSERT_EQ(AwaitSleep(clock, hours(1)), hours(1));
  queue.ShutDown();
  clock.Advance(hours(2));
  EXPECT_EQ(queue.Len(), 0U);
}

TEST(WorkQueue, ALaterLongerDelayDoesNotPostpone) {
  ManualClock clock;
  WorkQueue queue("test", clock);
  queue.AddAfter("ns/a", milliseconds(20));
  queue.AddAfter("ns/a", hours(1));
  EXPECT_EQ(AwaitSleep(clock, milliseconds(20)), milliseconds(20));
  clock.Advance(milliseconds(20));
  EXPECT_EQ(GetOrFail(queue), "ns/a");
}

// The per-key limiter's waits, exactly: 1 ms, 2 ms, then the key is due 2 ms after the second add
// (the earlier pending add stands: 1 ms).
TEST(WorkQueue, AddRateLimitedBacksOffAndForgetResets) {
  ManualClock clock;
  WorkQueue queue("test", clock,
                  std::make_unique<ItemExponentialFailureRateLimiter>(milliseconds(1), seconds(1)));
  queue.AddRateLimited("ns/a");
  queue.AddRateLimited("ns/a");
  EXPECT_EQ(queue.NumRequeues("ns/a"), 2);
  EXPECT_EQ(AwaitSleep(clock, milliseconds(1)), milliseconds(1));
  clock.Advance(milliseconds(1));
  EXPECT_EQ(GetOrFail(queue), "ns/a");
  queue.Done("ns/a");
  queue.AddRateLimited("ns/a");
  EXPECT_EQ(AwaitSleep(clock, milliseconds(4)), milliseconds(4));  // the third retry
  queue.Forget("ns/a");
  EXPECT_EQ(queue.NumRequeues("ns/a"), 0);
  queue.AddRateLimited("ns/b");
  queue.Forget("ns/b");
  queue.AddRateLimited("ns/b");
  EXPECT_EQ(AwaitSleep(clock, milliseconds(1)), milliseconds(1));  // forgotten: 1 ms again
}

TEST(WorkQueue, ShutDownWakesBlockedGets) {
  WorkQueue queue("test");
  constexpr int kGetters = 3;
  std::vector<std::future<std::optional<std::string>>> getters;
  getters.reserve(kGetters);
  for (int i = 0; i < kGetters; ++i) {
    getters.push_back(std::async(std::launch::async, [&queue] { return queue.Get(); }));
  }
  std::this_thread::sleep_for(milliseconds(20));  // let them block (not required to pass)
  queue.ShutDown();
  for (auto& getter : getters) {
    ExpectReady(getter, queue, "ShutDown did not wake a blocked Get");
    EXPECT_EQ(getter.get(), std::nullopt);
  }
  EXPECT_TRUE(queue.ShuttingDown());
}

TEST(WorkQueue, AfterShutDownQueuedKeysAreHandedOutAndAddsIgnored) {
  WorkQueue queue("test");
  queue.Add("ns/a");
  queue.Add("ns/b");
  queue.ShutDown();
  queue.Add("ns/c");
  queue.AddAfter("ns/d", nanoseconds::zero());
  queue.AddRateLimited("ns/e");
  EXPECT_EQ(queue.NumRequeues("ns/e"), 0);
  EXPECT_EQ(queue.Len(), 2U);
  EXPECT_EQ(queue.Get(), "ns/a");
  EXPECT_EQ(queue.Get(), "ns/b");
  EXPECT_EQ(queue.Get(), std::nullopt);
}

TEST(WorkQueue, ShutDownWithDrainWaitsForDone) {
  WorkQueue queue("test");
  queue.Add("ns/a");
  ASSERT_EQ(queue.Get(), "ns/a");

  std::atomic<bool> returned{false};
  auto drain = std::async(std::launch::async, [&] {
    queue.ShutDownWithDrain();
    returned = true;
  });
  std::this_thread::sleep_for(milliseconds(20));
  EXPECT_FALSE(returned) << "ShutDownWithDrain returned while a key was being processed";
  EXPECT_TRUE(queue.ShuttingDown());

  queue.Done("ns/a");
  ExpectReady(drain, queue, "ShutDownWithDrain did not return after Done");
  EXPECT_EQ(queue.Get(), std::nullopt);
}

TEST(WorkQueue, ShutDownEndsADrainEarly) {
  WorkQueue queue("test");
  queue.Add("ns/a");
  ASSERT_EQ(queue.Get(), "ns/a");
  auto drain = std::async(std::launch::async, [&] { queue.ShutDownWithDrain(); });
  std::this_thread::sleep_for(milliseconds(20));
  queue.ShutDown();
  ExpectReady(drain, queue, "ShutDown did not end ShutDownWithDrain's wait");
}

TEST(WorkQueue, ShutDownWithDrainReturnsAtOnceWhenIdle) {
  WorkQueue queue("test");
  auto drain = std::async(std::launch::async, [&] { queue.ShutDownWithDrain(); });
  ExpectReady(drain, queue, "ShutDownWithDrain waited with nothing being processed");
}

class CountingMetrics final : public WorkQueueMetrics {
 public:
  void OnAdd() override { ++adds; }
  void OnDepth(std::size_t depth) override { depths.push_back(depth); }
  void OnRetry() override { ++retries; }
  void OnLatency(nanoseconds queued) override { latencies.push_back(queued); }
  void OnWorkDuration(nanoseconds work) override { work_durations.push_back(work); }

  int adds = 0;
  int retries = 0;
  std::vector<std::size_t> depths;
  std::vector<nanoseconds> latencies;
  std::vector<nanoseconds> work_durations;
};

TEST(WorkQueue, MetricsHooksSeeAddsDepthRetriesAndTimes) {
  ManualClock clock;
  CountingMetrics metrics;
  WorkQueue queue("test", clock, nullptr, &metrics);

  queue.Add("ns/a");
  queue.Add("ns/a");
  queue.Add("ns/b");
  EXPECT_EQ(metrics.adds, 2);
  EXPECT_EQ(metrics.depths, (std::vector<std::size_t>{1, 2}));

  clock.Advance(seconds(3));
  ASSERT_EQ(queue.Get(), "ns/a");
  EXPECT_EQ(metrics.latencies, std::vector<nanoseconds>{seconds(3)});
  EXPECT_EQ(metrics.depths.back(), 1U);

  queue.Add("ns/a");  // while processing: waiting again, so counted in the depth
  EXPECT_EQ(metrics.adds, 3);
  EXPECT_EQ(metrics.depths.back(), 2U);

  clock.Advance(seconds(2));
  queue.Done("ns/a");
  EXPECT_EQ(metrics.work_durations, std::vector<nanoseconds>{seconds(2)});

  // Both delayed adds count as retries; the hour-long one stays pending past this test.
  queue.AddAfter("ns/c", nanoseconds::zero());
  queue.AddAfter("ns/d", hours(1));
  EXPECT_EQ(metrics.retries, 2);
  EXPECT_EQ(metrics.adds, 4);
}

TEST(WorkQueue, WorksWithoutMetrics) {
  ManualClock clock;
  WorkQueue queue("test", clock);
  queue.Add("ns/a");
  ASSERT_EQ(queue.Get(), "ns/a");
  queue.Done("ns/a");
  EXPECT_EQ(queue.Len(), 0U);
}

}  // namespace
}  // namespace eoc::kube
