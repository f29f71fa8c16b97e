#include "common/clock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

namespace eoc {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(ManualClock, AdvanceMovesBothClocks) {
  ManualClock clock;
  const auto now = clock.Now();
  const auto wall = clock.WallNow();
  clock.Advance(seconds(3));
  EXPECT_EQ(clock.Now() - now, seconds(3));
  EXPECT_EQ(clock.WallNow() - wall, seconds(3));
  clock.SetWall(std::chrono::system_clock::time_point(seconds(42)));
  EXPECT_EQ(clock.WallNow().time_since_epoch(), seconds(42));
}

TEST(Wakeup, ASleeperOnAManualClockWakesOnlyWhenItsDeadlineIsReached) {
  ManualClock clock;
  Wakeup wake(clock);
  const auto deadline = clock.Now() + seconds(10);
  auto slept = std::async(std::launch::async,
                          [&] { return wake.SleepUntil(deadline, [] { return false; }); });
  ASSERT_TRUE(clock.AwaitSleepers(1));
  EXPECT_EQ(clock.NextDeadline(), deadline);
  clock.Advance(seconds(9));
  // Still asleep after a wake-up short of its deadline.
  ASSERT_TRUE(clock.AwaitSleepers(1));
  EXPECT_EQ(slept.wait_for(milliseconds(20)), std::future_status::timeout);
  clock.Advance(seconds(1));
  EXPECT_FALSE(slept.get());  // the deadline, not the condition
  EXPECT_EQ(clock.Sleepers(), 0U);
  EXPECT_EQ(clock.NextDeadline(), std::nullopt);
}

TEST(Wakeup, NotifyEndsASleepWhoseConditionNowHolds) {
  ManualClock clock;
  Wakeup wake(clock);
  std::atomic<bool> stop{false};
  auto slept = std::async(std::launch::async, [&] {
    return wake.SleepFor(std::chrono::hours(1), [&] { return stop.load(); });
  });
  ASSERT_TRUE(clock.AwaitSleepers(1));
  wake.Notify();  // the condition does not hold yet: it sleeps on
  ASSERT_TRUE(clock.AwaitSleepers(1));
  EXPECT_EQ(slept.wait_for(milliseconds(20)), std::future_status::timeout);
  stop = true;
  wake.Notify();
  EXPECT_TRUE(slept.get());
}

TEST(Wakeup, AConditionThatAlreadyHoldsReturnsAtOnce) {
  ManualClock clock;
  Wakeup wake(clock);
  EXPECT_TRUE(wake.SleepFor(std::chrono::hours(1), [] { return true; }));
  EXPECT_FALSE(wake.SleepFor(std::chrono::nanoseconds(0), [] { return false; }));
  EXPECT_EQ(clock.Sleepers(), 0U);
}

TEST(Wakeup, ATicketSeesANotifyThatCameBeforeTheSleep) {
  ManualClock clock;
  Wakeup wake(clock);
  const Wakeup::Ticket ticket = wake.TakeTicket();
  wake.Notify();  // while the loop was looking at its state
  EXPECT_TRUE(wake.SleepUntilNotified(clock.Now() + seconds(5), ticket));

  const Wakeup::Ticket fresh = wake.TakeTicket();
  auto slept = std::async(std::launch::async,
                          [&] { return wake.SleepUntilNotified(clock.Now() + seconds(5), fresh); });
  ASSERT_TRUE(clock.AwaitSleepers(1));
  ASSERT_TRUE(clock.AdvanceToNextDeadline());
  EXPECT_FALSE(slept.get());  // no Notify since the ticket: the deadline
}

TEST(Wakeup, DeadlinesSaturateAtTheFarFuture) {
  ManualClock clock;
  Wakeup wake(clock);
  EXPECT_EQ(wake.Deadline(std::chrono::nanoseconds::max()), Clock::TimePoint::max());
  EXPECT_EQ(wake.Deadline(-seconds(1)), clock.Now());
  EXPECT_EQ(wake.Deadline(seconds(2)), clock.Now() + seconds(2));
}

TEST(Wakeup, ManySleepersOnManyWakeupsAllWakeAtTheirDeadlines) {
  ManualClock clock;
  Wakeup first(clock);
  Wakeup second(clock);
  std::vector<std::future<bool>> sleeps;
  for (int i = 1; i <= 4; ++i) {
    Wakeup& wake = i % 2 == 0 ? first : second;
    const auto deadline = clock.Now() + seconds(i);
    sleeps.push_back(std::async(std::launch::async, [&wake, deadline] {
      return wake.SleepUntil(deadline, [] { return false; });
    }));
  }
  ASSERT_TRUE(clock.AwaitSleepers(4));
  int advances = 0;
  while (clock.AdvanceToNextDeadline()) {
    ++advances;
    // Each sleeper leaves once its deadline is reached; wait for that before the next step.
    const auto give_up = std::chrono::steady_clock::now() + seconds(10);
    while (clock.Sleepers() > static_cast<std::size_t>(4 - advances) &&
           std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(milliseconds(1));
    }
  }
  EXPECT_EQ(advances, 4);
  for (auto& slept : sleeps) EXPECT_FALSE(slept.get());
}

TEST(ManualClock, AwaitTimedSleepTellsTheNextWaitAndSkipsForeverAndDueSleepers) {
  ManualClock clock;
  Wakeup idle(clock);
  Wakeup timed(clock);
  std::atomic<bool> stop{false};
  auto forever = std::async(std::launch::async, [&] {
    return idle.SleepUntil(Clock::TimePoint::max(), [&] { return stop.load(); });
  });
  ASSERT_TRUE(clock.AwaitSleepers(1));
  EXPECT_EQ(clock.AwaitTimedSleep(milliseconds(5)), std::nullopt);  // only "forever"
  auto slept = std::async(std::launch::async,
                          [&] { return timed.SleepFor(seconds(3), [] { return false; }); });
  EXPECT_EQ(clock.AwaitTimedSleep(), seconds(3));
  clock.Advance(seconds(1));
  EXPECT_EQ(clock.AwaitTimedSleep(), seconds(2));
  clock.Advance(seconds(2));
  EXPECT_FALSE(slept.get());
  EXPECT_EQ(clock.AwaitTimedSleep(milliseconds(5)), std::nullopt);
  stop = true;
  idle.Notify();
  EXPECT_TRUE(forever.get());
}

TEST(Wakeup, OnTheSystemClockASleepEndsAtItsDeadlineOrAtANotify) {
  const Clock& clock = RealClock();
  Wakeup wake(clock);
  EXPECT_FALSE(wake.SleepFor(milliseconds(1), [] { return false; }));
  std::atomic<bool> stop{false};
  auto slept = std::async(std::launch::async, [&] {
    return wake.SleepFor(std::chrono::hours(1), [&] { return stop.load(); });
  });
  stop = true;
  wake.Notify();
  EXPECT_TRUE(slept.get());
}

}  // namespace
}  // namespace eoc
