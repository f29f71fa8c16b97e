// The policy's delay logic, tick by tick on a fake clock: each case is a script of ticks (the
// time, the ready workers, the load) and the target each tick must leave.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "autoscale/policy.h"

namespace eoc::autoscale {
namespace {

PolicyConfig Delays() {
  return {.min_replicas = 0,
          .max_replicas = 100,
          .target_ongoing_requests = 10,
          .upscale_delay_seconds = 30,
          .downscale_delay_seconds = 600,
          .downscale_to_zero_delay_seconds = 100};
}

struct Tick {
  double now;
  std::int32_t current;
  std::optional<double> total;
  std::int32_t want_target;  // the target after this tick
  Step want_step;
};

// Runs `ticks` from `target`, with `timer`, checking each one.
void RunTicks(const PolicyConfig& config, std::int32_t target, DelayTimer& timer,
              const std::vector<Tick>& ticks) {
  for (const Tick& t : ticks) {
    const Decision d = Decide(
        config, {.now_seconds = t.now, .current = t.current, .target = target, .total = t.total},
        timer);
    EXPECT_EQ(d.replicas, t.want_target) << "at " << t.now;
    EXPECT_EQ(d.step, t.want_step) << "at " << t.now << ": " << ToString(d.step);
    target = d.replicas;
  }
}

TEST(PolicyDelayTest, UpAfterExactlyTheDelay) {
  DelayTimer timer;
  // 4 replicas at 80 ongoing (t = 10): 8 wanted from t = 100 on; 30 s later it is applied.
  RunTicks(Delays(), 4, timer,
           {{100, 4, 80, 4, Step::kDelaying},
            {101, 4, 80, 4, Step::kDelaying},
            {129, 4, 80, 4, Step::kDelaying},
            {130, 4, 80, 8, Step::kScaled}});
  EXPECT_FALSE(timer.running());
}

TEST(PolicyDelayTest, TheDelayCountsWallClockNotTicks) {
  DelayTimer timer;
  // Two ticks 30 s apart are enough; so is a late tick after a long pause.
  RunTicks(Delays(), 4, timer, {{0, 4, 80, 4, Step::kDelaying}, {30, 4, 80, 8, Step::kScaled}});
  RunTicks(Delays(), 4, timer, {{0, 4, 80, 4, Step::kDelaying}, {55.5, 4, 80, 8, Step::kScaled}});
}

TEST(PolicyDelayTest, ADelayLandingOnAFloatClockIsOnTime) {
  // 0.1 s ticks summed: the 300th lands at 29.99999999999987, which Ray's tolerance counts as 30.
  const PolicyConfig config = Delays();
  DelayTimer timer;
  std::int32_t target = 4;
  double now = 0;
  int fired_at = -1;
  for (int tick = 0; tick <= 400 && fired_at < 0; ++tick) {
    const Decision d =
        Decide(config, {.now_seconds = now, .current = 4, .target = target, .total = 80}, timer);
    if (d.replicas != target) fired_at = tick;
    target = d.replicas;
    now += 0.1;
  }
  EXPECT_EQ(fired_at, 300);
  EXPECT_EQ(target, 8);
}

TEST(PolicyDelayTest, ThatTicksValueIsApplied) {
  DelayTimer timer;
  // The load moves while the timer runs: the value of the tick it fires on is applied.
  RunTicks(Delays(), 4, timer,
           {{0, 4, 100, 4, Step::kDelaying},
            {10, 4, 60, 4, Step::kDelaying},
            {30, 4, 50, 5, Step::kScaled}});
}

TEST(PolicyDelayTest, AFlipResetsTheTimer) {
  DelayTimer timer;
  RunTicks(Delays(), 4, timer,
           {{0, 4, 80, 4, Step::kDelaying},
            {20, 4, 80, 4, Step::kDelaying},
            {21, 4, 20, 4, Step::kDelaying},  // down: the up timer is gone, a down one starts
            {22, 4, 80, 4, Step::kDelaying},  // up again, from 22
            {51, 4, 80, 4, Step::kDelaying},
            {52, 4, 80, 8, Step::kScaled}});
}

TEST(PolicyDelayTest, ASteadyTickResetsTheTimer) {
  DelayTimer timer;
  RunTicks(Delays(), 4, timer,
           {{0, 4, 80, 4, Step::kDelaying},
            {29, 4, 40, 4, Step::kSteady},  // exactly 4 wanted
            {30, 4, 80, 4, Step::kDelaying},
            {59, 4, 80, 4, Step::kDelaying},
            {60, 4, 80, 8, Step::kScaled}});
}

TEST(PolicyDelayTest, DownStopsAtOneAfterTheDownscaleDelay) {
  DelayTimer timer;
  RunTicks(Delays(), 3, timer,
           {{0, 3, 0, 3, Step::kDelaying},
            {599, 3, 0, 3, Step::kDelaying},
            {600, 3, 0, 1, Step::kScaled},  // not 0: only 1 -> 0 reaches zero
            // From one, the zero delay (100 s) from the first tick that points down.
            {601, 1, 0, 1, Step::kDelaying},
            {700, 1, 0, 1, Step::kDelaying},
            {701, 1, 0, 0, Step::kScaled}});
}

TEST(PolicyDelayTest, OneToZeroWaitsForTheZeroDelayNotTheOther) {
  PolicyConfig config = Delays();
  config.downscale_to_zero_delay_seconds = 900;  // longer than the downscale delay
  DelayTimer timer;
  RunTicks(config, 1, timer,
           {{0, 1, 0, 1, Step::kDelaying},
            {600, 1, 0, 1, Step::kDelaying},
            {899, 1, 0, 1, Step::kDelaying},
            {900, 1, 0, 0, Step::kScaled}});
}

TEST(PolicyDelayTest, ZeroDelaysScaleOnTheFirstTick) {
  PolicyConfig config = Delays();
  config.upscale_delay_seconds = 0;
  config.downscale_delay_seconds = 0;
  config.downscale_to_zero_delay_seconds = 0;
  DelayTimer timer;
  RunTicks(
      config, 2, timer,
      {{0, 2, 50, 5, Step::kScaled}, {1, 5, 0, 1, Step::kScaled}, {2, 1, 0, 0, Step::kScaled}});
}

TEST(PolicyDelayTest, TheZeroPathsLeaveARunningTimerAlone) {
  const PolicyConfig config = Delays();
  const DelayTimer running{.direction = Direction::kUp, .since_seconds = 10};
  DelayTimer timer = running;
  // An empty pool with a request waiting: up at once, the timer as it was.
  Decision d = Decide(config, {.now_seconds = 20, .current = 0, .target = 0, .total = 1}, timer);
  EXPECT_EQ(d.step, Step::kFromZero);
  EXPECT_EQ(d.replicas, 1);
  EXPECT_EQ(timer, running);
  // Pods on their way (target 1, none ready), nothing waiting: target, the timer as it was.
  d = Decide(config, {.now_seconds = 21, .current = 0, .target = 1, .total = 0}, timer);
  EXPECT_EQ(d.step, Step::kIdleAtZero);
  EXPECT_EQ(d.replicas, 1);
  EXPECT_EQ(timer, running);
  // At target 0 with nothing waiting, Ray's delay logic sees a steady tick and resets it.
  d = Decide(config, {.now_seconds = 22, .current = 0, .target = 0, .total = 0}, timer);
  EXPECT_EQ(d.replicas, 0);
  EXPECT_FALSE(timer.running());
}

TEST(PolicyDelayTest, BackFromZeroWhileTheNewPodStarts) {
  DelayTimer timer;
  RunTicks(Delays(), 0, timer,
           {{0, 0, 0, 0, Step::kIdleAtZero},
            {1, 0, 3, 1, Step::kFromZero},    // a pick waits on the empty pool
            {2, 0, 3, 1, Step::kFromZero},    // still waiting, the pod still starting: still 1
            {3, 0, 0, 1, Step::kIdleAtZero},  // the pick timed out: the pod keeps coming
            {9, 1, 3, 1, Step::kSteady}});    // ready, 3 ongoing of t = 10: one is right
}

TEST(PolicyDelayTest, AHoldRestartsTheDownTimer) {
  DelayTimer timer;
  RunTicks(Delays(), 4, timer,
           {{0, 4, 0, 4, Step::kDelaying},
            {300, 4, std::nullopt, 4, Step::kMetricsUnknown},  // the scrapes failed
            {301, 4, 0, 4, Step::kDelaying},                   // down again, from 301
            {900, 4, 0, 4, Step::kDelaying},
            {901, 4, 0, 1, Step::kScaled}});
}

TEST(PolicyDelayTest, TheTimerReportsItsAge) {
  DelayTimer timer;
  EXPECT_EQ(timer.AgeSeconds(50), 0);
  RunTicks(Delays(), 4, timer, {{10, 4, 80, 4, Step::kDelaying}});
  EXPECT_EQ(timer.direction, Direction::kUp);
  EXPECT_EQ(timer.AgeSeconds(25), 15);
}

}  // namespace
}  // namespace eoc::autoscale
