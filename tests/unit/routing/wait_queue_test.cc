#include "routing/wait_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"

namespace eoc::routing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// What a test's waiting pick carries: an id and how many KV blocks it needs.
struct Pick {
  int id = 0;
  int blocks = 1;
  std::string model = "m";
};

std::vector<int> Ids(const std::vector<Pick>& picks) {
  std::vector<int> ids;
  ids.reserve(picks.size());
  for (const Pick& pick : picks) ids.push_back(pick.id);
  return ids;
}

TEST(WaitQueueTest, ReleasesInArrivalOrderAsCapacityAppears) {
  ManualClock clock;
  WaitQueue<Pick> queue(10);
  for (int id = 1; id <= 5; ++id) {
    Pick pick{.id = id};
    const auto admitted = queue.Admit(std::move(pick), clock.Now() + seconds(120), clock.Now());
    ASSERT_EQ(admitted.admission, Admission::kQueued);
    EXPECT_NE(admitted.ticket, 0U);
  }
  EXPECT_EQ(queue.Size(), 5U);
  // A scrape shows room for two blocks: the two oldest go, in order.
  int free_blocks = 2;
  auto place = [&](Pick& pick) {
    if (pick.blocks > free_blocks) return Placement::kStop;
    free_blocks -= pick.blocks;
    return Placement::kPlaced;
  };
  EXPECT_EQ(Ids(queue.Release(place)), (std::vector<int>{1, 2}));
  EXPECT_EQ(queue.Size(), 3U);
  EXPECT_TRUE(queue.Release(place).empty());
  free_blocks = 10;
  EXPECT_EQ(Ids(queue.Release(place)), (std::vector<int>{3, 4, 5}));
  EXPECT_EQ(queue.Size(), 0U);
  EXPECT_EQ(queue.NextDeadline(), std::nullopt);
}

TEST(WaitQueueTest, HeadOfLineBlocksItsOwnClassAndLetsOthersPass) {
  ManualClock clock;
  WaitQueue<Pick> queue(10);
  const auto deadline = clock.Now() + seconds(120);
  for (Pick pick : {Pick{.id = 1, .blocks = 8}, Pick{.id = 2, .blocks = 1},
                    Pick{.id = 3, .blocks = 1, .model = "other"}, Pick{.id = 4, .blocks = 1}}) {
    ASSERT_EQ(queue.Admit(std::move(pick), deadline, clock.Now()).admission, Admission::kQueued);
  }
  // The recommended policy: a big pick that does not fit keeps later picks for the same model
  // behind it (it is never starved by small ones), while another model's pick passes.
  int free_m = 4;
  int free_other = 4;
  auto place = [&](Pick& pick) {
    int& free = pick.model == "m" ? free_m : free_other;
    if (pick.model == "m" && pick.blocks > free_m) free_m = 0;  // blocked: keep the rest behind
    if (pick.blocks > free) return Placement::kKeep;
    free -= pick.blocks;
    return Placement::kPlaced;
  };
  EXPECT_EQ(Ids(queue.Release(place)), (std::vector<int>{3}));
  free_m = 10;
  EXPECT_EQ(Ids(queue.Release(place)), (std::vector<int>{1, 2, 4}));
}

// A payload that can only move, like a deferred HTTP response.
struct MoveOnly {
  explicit MoveOnly(int v) : value(v) {}
  MoveOnly(MoveOnly&&) = default;
  MoveOnly& operator=(MoveOnly&&) = default;
  MoveOnly(const MoveOnly&) = delete;
  MoveOnly& operator=(const MoveOnly&) = delete;
  ~MoveOnly() = default;
  int value;
};

TEST(WaitQueueTest, ShedsWhenFull) {
  ManualClock clock;
  WaitQueue<MoveOnly> queue(2);
  const auto deadline = clock.Now() + seconds(120);
  EXPECT_EQ(queue.Admit(MoveOnly(1), deadline, clock.Now()).admission, Admission::kQueued);
  EXPECT_EQ(queue.Admit(MoveOnly(2), deadline, clock.Now()).admission, Admission::kQueued);
  auto shed = queue.Admit(MoveOnly(3), deadline, clock.Now());
  EXPECT_EQ(shed.admission, Admission::kFull);
  // Handed back: the caller still answers it (429).
  ASSERT_TRUE(shed.rejected.has_value());
  EXPECT_EQ(shed.rejected->value, 3);
  EXPECT_EQ(queue.Size(), 2U);
  // They leave: room again.
  EXPECT_EQ(queue.Release([](MoveOnly&) { return Placement::kPlaced; }).size(), 2U);
  const auto again = queue.Admit(std::move(*shed.rejected), deadline, clock.Now());
  EXPECT_EQ(again.admission, Admission::kQueued);
  EXPECT_FALSE(again.rejected.has_value());
}

TEST(WaitQueueTest, TimesOutAtTheDeadline) {
  ManualClock clock;
  WaitQueue<Pick> queue(10);
  const auto t0 = clock.Now();
  // The pool waits 120 s; the second pick asked for 5 s, the third for more than the pool allows.
  queue.Admit(Pick{.id = 1}, WaitDeadline(t0, seconds(120), std::nullopt), t0);
  queue.Admit(Pick{.id = 2}, WaitDeadline(t0, seconds(120), milliseconds(5000)), t0);
  queue.Admit(Pick{.id = 3}, WaitDeadline(t0, seconds(120), seconds(600)), t0);
  EXPECT_EQ(queue.NextDeadline(), t0 + seconds(5));
  clock.Advance(milliseconds(4999));
  EXPECT_TRUE(queue.Expire(clock.Now()).empty());
  clock.Advance(milliseconds(1));
  EXPECT_EQ(Ids(queue.Expire(clock.Now())), (std::vector<int>{2}));
  EXPECT_EQ(queue.NextDeadline(), t0 + seconds(120));
  clock.Advance(seconds(115));
  EXPECT_EQ(Ids(queue.Expire(clock.Now())), (std::vector<int>{1, 3}));
  EXPECT_EQ(queue.Size(), 0U);
  EXPECT_EQ(queue.NextDeadline(), std::nullopt);
}

TEST(WaitQueueTest, NoTimeToWaitIsExpiredAtOnce) {
  ManualClock clock;
  WaitQueue<Pick> queue(10);
  const auto now = clock.Now();
  auto admitted = queue.Admit(Pick{.id = 1}, WaitDeadline(now, seconds(120), milliseconds(0)), now);
  EXPECT_EQ(admitted.admission, Admission::kExpired);
  ASSERT_TRUE(admitted.rejected.has_value());
  EXPECT_EQ(admitted.rejected->id, 1);
  admitted = queue.Admit(Pick{.id = 2}, WaitDeadline(now, seconds(120), milliseconds(-5)), now);
  EXPECT_EQ(admitted.admission, Admission::kExpired);
  EXPECT_EQ(queue.Size(), 0U);
}

TEST(WaitQueueTest, UnavailableWhenQueueingIsOffOrWaitingImpossible) {
  ManualClock clock;
  const auto deadline = clock.Now() + seconds(120);
  WaitQueue<Pick> off(0);
  EXPECT_FALSE(off.IsOpen());
  const auto refused = off.Admit(Pick{.id = 1}, deadline, clock.Now());
  EXPECT_EQ(refused.admission, Admission::kUnavailable);
  ASSERT_TRUE(refused.rejected.has_value());
  EXPECT_EQ(refused.rejected->id, 1);

  WaitQueue<Pick> queue(10);
  EXPECT_TRUE(queue.IsOpen());
  queue.Admit(Pick{.id = 1}, deadline, clock.Now());
  queue.Admit(Pick{.id = 2}, deadline, clock.Now());
  // The pool lost its last worker and cannot get one: those waiting are answered 503 now.
  EXPECT_EQ(Ids(queue.Close()), (std::vector<int>{1, 2}));
  EXPECT_FALSE(queue.IsOpen());
  EXPECT_EQ(queue.Admit(Pick{.id = 3}, deadline, clock.Now()).admission, Admission::kUnavailable);
  EXPECT_EQ(queue.Size(), 0U);
  EXPECT_EQ(queue.NextDeadline(), std::nullopt);
  queue.Open();
  EXPECT_EQ(queue.Admit(Pick{.id = 4}, deadline, clock.Now()).admission, Admission::kQueued);
}

TEST(WaitQueueTest, CancelTakesOneEntryOut) {
  ManualClock clock;
  WaitQueue<Pick> queue(10);
  const auto deadline = clock.Now() + seconds(120);
  queue.Admit(Pick{.id = 1}, deadline, clock.Now());
  const auto ticket = queue.Admit(Pick{.id = 2}, deadline - seconds(60), clock.Now()).ticket;
  queue.Admit(Pick{.id = 3}, deadline, clock.Now());
  const auto cancelled = queue.Cancel(ticket);
  ASSERT_TRUE(cancelled.has_value());
  EXPECT_EQ(cancelled->id, 2);
  EXPECT_EQ(queue.Cancel(ticket), std::nullopt);
  EXPECT_EQ(queue.NextDeadline(), deadline);  // its deadline went with it
  EXPECT_EQ(Ids(queue.Release([](Pick&) { return Placement::kPlaced; })), (std::vector<int>{1, 3}));
}

TEST(WaitQueueTest, NamesItsAdmissions) {
  EXPECT_EQ(ToString(Admission::kQueued), "queued");
  EXPECT_EQ(ToString(Admission::kFull), "full");
  EXPECT_EQ(ToString(Admission::kUnavailable), "unavailable");
  EXPECT_EQ(ToString(Admission::kExpired), "expired");
}

// Producers admit while a releaser and an expirer drain (run it under ThreadSanitizer too):
// every pick is answered exactly once, the bound holds, and each release is in FIFO order.
TEST(WaitQueueTest, ConcurrentAdmitsReleasesAndExpiriesAnswerEachPickOnce) {
  constexpr std::size_t kMax = 50;
  WaitQueue<Pick> queue(kMax);
  const auto t0 = std::chrono::steady_clock::time_point(std::chrono::hours(1));
  std::atomic<int> answered{0};
  std::atomic<int> rejected{0};
  std::atomic<int> violations{0};
  std::atomic<bool> done{false};
  std::vector<std::thread> producers;
  producers.reserve(4);
  for (int t = 0; t < 4; ++t) {
    producers.emplace_back([&, t] {
      for (int i = 0; i < 5000; ++i) {
        Pick pick{.id = t * 100'000 + i};
        const auto deadline = t0 + milliseconds(i + (i % 3 == 0 ? 1 : 1000));
        const auto admitted = queue.Admit(std::move(pick), deadline, t0 + milliseconds(i));
        if (admitted.admission != Admission::kQueued) ++rejected;
        if (queue.Size() > kMax) ++violations;
      }
    });
  }
  std::thread releaser([&] {
    while (!done.load()) {
      const auto released = queue.Release(
          [](Pick& pick) { return pick.id % 2 == 0 ? Placement::kPlaced : Placement::kKeep; });
      // Within one producer, ids rise with arrival: a release keeps each producer's order.
      std::vector<int> last(4, -1);
      for (const Pick& pick : released) {
        int& previous = last[static_cast<std::size_t>(pick.id / 100'000)];
        if (pick.id <= previous) ++violations;
        previous = pick.id;
      }
      answered += static_cast<int>(released.size());
      std::this_thread::yield();
    }
  });
  std::thread expirer([&] {
    for (int ms = 0; !done.load(); ms = (ms + 50) % 7000) {
      answered += static_cast<int>(queue.Expire(t0 + milliseconds(ms)).size());
      std::this_thread::yield();
    }
  });
  for (auto& producer : producers) producer.join();
  done = true;
  releaser.join();
  expirer.join();
  answered += static_cast<int>(queue.Close().size());
  EXPECT_EQ(violations.load(), 0);
  EXPECT_EQ(answered.load() + rejected.load(), 4 * 5000);
  EXPECT_EQ(queue.Size(), 0U);
}

}  // namespace
}  // namespace eoc::routing
