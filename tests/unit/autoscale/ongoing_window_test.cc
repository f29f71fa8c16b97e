#include "autoscale/ongoing_window.h"

#include <gtest/gtest.h>

#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace eoc::autoscale {
namespace {

const std::vector<std::string> kAB{"a", "b"};

TEST(OngoingWindowTest, SumsEachWorkersMeanOverThePeriod) {
  OngoingWindow window(30);
  for (int t = 0; t < 30; t += 5) {
    window.Record("a", t, t < 15 ? 10 : 20);  // mean 15
    window.Record("b", t, 4);
  }
  const OngoingWindow::Sum s = window.Over(kAB, 29, 15);
  EXPECT_DOUBLE_EQ(s.total, 19);
  EXPECT_EQ(s.counted, 2);
  EXPECT_EQ(s.missing, 0);
}

TEST(OngoingWindowTest, SamplesOlderThanThePeriodDropOut) {
  OngoingWindow window(32);  // buckets of 0.5 s
  window.Record("a", 0, 100);
  window.Record("a", 20, 10);
  EXPECT_DOUBLE_EQ(window.Over(kAB, 31, 100).total, 55);  // both in
  // A bucket counts while any of it is inside: the sample at 0 sits in [0, 0.5).
  EXPECT_DOUBLE_EQ(window.Over(kAB, 32.4, 100).total, 55);
  EXPECT_DOUBLE_EQ(window.Over(kAB, 32.5, 100).total, 10);
  window.Record("a", 40, 20);
  EXPECT_DOUBLE_EQ(window.Over(kAB, 40, 100).total, 15);
}

TEST(OngoingWindowTest, AWorkerWithoutAFreshSampleIsMissing) {
  OngoingWindow window(30);
  window.Record("a", 0, 8);
  window.Record("b", 20, 2);
  // a's newest sample is 25 s old, more than the 15 s asked for.
  const OngoingWindow::Sum s = window.Over(kAB, 25, 15);
  EXPECT_EQ(s.counted, 1);
  EXPECT_EQ(s.missing, 1);
  EXPECT_DOUBLE_EQ(s.total, 2);
  // A worker never scraped is missing too.
  const std::vector<std::string> abc{"a", "b", "c"};
  EXPECT_EQ(window.Over(abc, 20, 100).missing, 1);
}

TEST(OngoingWindowTest, BadSamplesAreDropped) {
  OngoingWindow window(30);
  window.Record("a", 10, 5);
  window.Record("a", 11, -1);
  window.Record("a", 12, std::numeric_limits<double>::quiet_NaN());
  window.Record("a", 13, std::numeric_limits<double>::infinity());
  window.Record("a", 9, 100);  // before the newest: out of order
  EXPECT_DOUBLE_EQ(window.Over(kAB, 14, 100).total, 5);
}

TEST(OngoingWindowTest, StaysBoundedAtAnyRate) {
  OngoingWindow window(10);
  for (int i = 0; i < 100000; ++i) window.Record("a", i * 0.01, 3);
  EXPECT_DOUBLE_EQ(window.Over(kAB, 1000, 1).total, 3);
  // A week-long period at one sample a second keeps its first sample.
  OngoingWindow week(604800);
  week.Record("a", 0, 1000);
  for (int i = 1; i < 100000; ++i) week.Record("a", i, 0);
  EXPECT_NEAR(week.Over(kAB, 100000, 10).total, 1000.0 / 100000, 1e-12);
}

TEST(OngoingWindowTest, RetainForgetsWorkersThatLeft) {
  OngoingWindow window(30);
  window.Record("a", 0, 1);
  window.Record("b", 0, 1);
  window.Record("c", 0, 1);
  window.Retain(kAB);
  EXPECT_EQ(window.workers(), 2U);
  const std::vector<std::string> c{"c"};
  EXPECT_EQ(window.Over(c, 1, 100).missing, 1);
}

TEST(InputAtTest, TheReadyWorkersSumPlusWhatWaits) {
  OngoingWindow window(10);
  window.Record("a", 0, 6);
  window.Record("b", 0, 2);
  window.Record("c", 0, 100);  // not ready: left out
  PolicyInput in = InputAt(window, kAB, 3, 5, 15, 4);
  EXPECT_EQ(in.now_seconds, 5);
  EXPECT_EQ(in.current, 2);
  EXPECT_EQ(in.target, 4);
  EXPECT_EQ(in.total, 11);
  EXPECT_TRUE(in.complete);
  // b's sample goes stale: partial, from a alone.
  window.Record("a", 20, 6);
  in = InputAt(window, kAB, 0, 20, 15, 4);
  EXPECT_EQ(in.total, 6);
  EXPECT_FALSE(in.complete);
  // None fresh: unknown, even with picks waiting.
  in = InputAt(window, kAB, 7, 100, 15, 4);
  EXPECT_FALSE(in.total.has_value());
  // No ready worker: what waits.
  in = InputAt(window, {}, 7, 100, 15, 0);
  EXPECT_EQ(in.current, 0);
  EXPECT_EQ(in.total, 7);
  EXPECT_TRUE(in.complete);
}

TEST(OngoingWindowTest, RejectsAPeriodThatIsNotPositive) {
  EXPECT_THROW(OngoingWindow{0}, std::invalid_argument);
  EXPECT_THROW(OngoingWindow{-1}, std::invalid_argument);
  EXPECT_THROW(OngoingWindow{std::numeric_limits<double>::quiet_NaN()}, std::invalid_argument);
}

}  // namespace
}  // namespace eoc::autoscale
