// The policy's arithmetic: the core ratio, the scaling factors and their rounding, the bounds,
// the zero paths and the metrics holds (the delay logic has policy_delay_test.cc).
#include "autoscale/policy.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <limits>
#include <optional>
#include <ostream>
#include <string>

namespace eoc::autoscale {
namespace {

// No delays: each tick's scaled value is applied at once, so a case reads straight off.
PolicyConfig Immediate() {
  return {.min_replicas = 0,
          .max_replicas = 1000,
          .target_ongoing_requests = 16,
          .upscale_delay_seconds = 0,
          .downscale_delay_seconds = 0,
          .downscale_to_zero_delay_seconds = 0};
}

struct FactorCase {
  const char* name;
  double target_ongoing;
  double up;
  double down;
  std::int32_t current;
  std::int32_t target;
  double total;
  double want_desired;
  std::int32_t want_scaled;
  std::int32_t want_replicas;
};

void PrintTo(const FactorCase& c, std::ostream* os) { *os << c.name; }

class FactorsTest : public ::testing::TestWithParam<FactorCase> {};

TEST_P(FactorsTest, DecidesAsRay) {
  const FactorCase& c = GetParam();
  PolicyConfig config = Immediate();
  config.target_ongoing_requests = c.target_ongoing;
  config.upscaling_factor = c.up;
  config.downscaling_factor = c.down;
  DelayTimer timer;
  const Decision d =
      Decide(config, {.now_seconds = 5, .current = c.current, .target = c.target, .total = c.total},
             timer);
  EXPECT_EQ(d.desired, c.want_desired) << c.name;  // exactly: the order of the operations matters
  EXPECT_EQ(d.scaled, c.want_scaled) << c.name;
  EXPECT_EQ(d.replicas, c.want_replicas) << c.name;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, FactorsTest,
    ::testing::Values(
        // current * (total / (t * current)) is not total / t at every boundary: 464 / 16 is 29,
        // but 7 * (464 / 112) is 29.000000000000004, so 30 replicas.
        FactorCase{"7x464/112", 16, 1, 1, 7, 7, 464, 29.000000000000004, 30, 30},
        // ... and 9 * (1 / 9) is exactly 1.
        FactorCase{"9x1/9", 1, 1, 1, 9, 9, 1, 1, 1, 1},
        // Exact multiples of t: no change.
        FactorCase{"at target", 16, 1, 1, 4, 4, 64, 4, 4, 4},
        // A factor of one half moves halfway, rounding up.
        FactorCase{"up half", 16, 0.5, 1, 4, 4, 160, 10, 7, 7},
        FactorCase{"down half", 16, 1, 0.5, 10, 10, 32, 2, 6, 6},
        // The factor rounds a downscale away (ceil(10 - 0.11) is 10) although ceil(desired) is 9:
        // one replica down instead.
        FactorCase{"stuck down", 16, 1, 0.1, 10, 10, 142.4, 8.9, 9, 9},
        // ceil(desired) is not below current: no forced step (ceil(9.5) is 10).
        FactorCase{"not stuck", 16, 1, 0.1, 10, 10, 152, 9.5, 10, 10},
        // An upscaling factor over one overshoots: ceil(2 + 3 * (4 - 2)).
        FactorCase{"up x3", 16, 3, 1, 2, 2, 64, 4, 8, 8},
        // A downscaling factor over one overshoots below zero: max(0, ...), then not under one
        // replica as target is not 1.
        FactorCase{"down x5", 16, 1, 5, 4, 4, 16, 1, 0, 1},
        // No load: all the way down (to zero here, as the delays are zero and target was 1).
        FactorCase{"idle from one", 16, 1, 1, 1, 1, 0, 0, 0, 0},
        // From several replicas, a downscale stops at one (only 1 -> 0 reaches zero).
        FactorCase{"idle from four", 16, 1, 1, 4, 4, 0, 0, 0, 1}),
    [](const ::testing::TestParamInfo<FactorCase>& p) {
      std::string name = p.param.name;
      for (char& ch : name) {
        if (std::isalnum(static_cast<unsigned char>(ch)) == 0) ch = '_';
      }
      return name;
    });

TEST(PolicyTest, TheBoundsApplyAfterTheDelay) {
  PolicyConfig config = Immediate();
  config.min_replicas = 2;
  config.max_replicas = 5;
  DelayTimer timer;
  // Twice the load of 5 replicas: scaled says 10, the bound says 5.
  Decision d = Decide(config, {.now_seconds = 0, .current = 5, .target = 5, .total = 160}, timer);
  EXPECT_EQ(d.scaled, 10);
  EXPECT_EQ(d.replicas, 5);
  EXPECT_EQ(d.step, Step::kScaled);
  // No load: scaled says 0 (1 after the delay logic, as target is not 1), the bound says 2.
  d = Decide(config, {.now_seconds = 1, .current = 2, .target = 2, .total = 0}, timer);
  EXPECT_EQ(d.scaled, 0);
  EXPECT_EQ(d.replicas, 2);
}

TEST(PolicyTest, TheBoundsApplyToTheZeroPaths) {
  PolicyConfig config = Immediate();
  config.min_replicas = 0;
  config.max_replicas = 3;
  config.upscaling_factor = 7.5;  // from zero: ceil(7.5) = 8, above the bound
  DelayTimer timer;
  const Decision d =
      Decide(config, {.now_seconds = 0, .current = 0, .target = 0, .total = 1}, timer);
  EXPECT_EQ(d.step, Step::kFromZero);
  EXPECT_EQ(d.scaled, 8);
  EXPECT_EQ(d.replicas, 3);
}

TEST(PolicyTest, FromZeroGoesUpAtOnceToTheFactorOrTarget) {
  PolicyConfig config = Immediate();
  config.upscale_delay_seconds = 30;  // not waited for
  struct Case {
    double factor;
    std::int32_t target;
    std::int32_t want;
  };
  for (const Case c :
       {Case{1, 0, 1}, Case{0.2, 0, 1}, Case{2.5, 0, 3}, Case{1, 4, 4}, Case{2.5, 2, 3}}) {
    config.upscaling_factor = c.factor;
    DelayTimer timer;
    const Decision d =
        Decide(config, {.now_seconds = 0, .current = 0, .target = c.target, .total = 0.5}, timer);
    EXPECT_EQ(d.step, Step::kFromZero) << c.factor << " " << c.target;
    EXPECT_EQ(d.replicas, c.want) << c.factor << " " << c.target;
  }
}

TEST(PolicyTest, AnEmptyPoolWithNothingWaitingKeepsItsTarget) {
  const PolicyConfig config = Immediate();
  DelayTimer timer;
  // Target 2 decided, no pod ready yet: the decision stays 2 (the pods are on their way).
  Decision d = Decide(config, {.now_seconds = 0, .current = 0, .target = 2, .total = 0}, timer);
  EXPECT_EQ(d.step, Step::kIdleAtZero);
  EXPECT_EQ(d.replicas, 2);
  d = Decide(config, {.now_seconds = 0, .current = 0, .target = 0, .total = 0}, timer);
  EXPECT_EQ(d.step, Step::kIdleAtZero);
  EXPECT_EQ(d.replicas, 0);
  // Unknown load on an empty pool is nothing waiting: there are no workers to measure.
  d = Decide(config, {.now_seconds = 0, .current = 0, .target = 0, .total = std::nullopt}, timer);
  EXPECT_EQ(d.replicas, 0);
}

TEST(PolicyTest, UnknownLoadHolds) {
  const PolicyConfig config = Immediate();
  DelayTimer timer{.direction = Direction::kDown, .since_seconds = 0};
  for (const std::optional<double> total :
       {std::optional<double>{}, std::optional(std::numeric_limits<double>::quiet_NaN()),
        std::optional(std::numeric_limits<double>::infinity()), std::optional(-1.0)}) {
    timer = {.direction = Direction::kDown, .since_seconds = 0};
    const Decision d =
        Decide(config, {.now_seconds = 100, .current = 4, .target = 4, .total = total}, timer);
    EXPECT_EQ(d.step, Step::kMetricsUnknown);
    EXPECT_EQ(d.replicas, 4);
    // The tick pointed nowhere on figures that can be trusted: the down timer starts over.
    EXPECT_FALSE(timer.running());
  }
}

TEST(PolicyTest, PartialLoadHoldsDownButNotUp) {
  const PolicyConfig config = Immediate();
  DelayTimer timer;
  // Some workers' load is missing and what is there says "fewer": held.
  Decision d = Decide(
      config, {.now_seconds = 0, .current = 4, .target = 4, .total = 16, .complete = false}, timer);
  EXPECT_EQ(d.step, Step::kMetricsPartial);
  EXPECT_EQ(d.replicas, 4);
  EXPECT_EQ(d.scaled, 1);
  // What is there already says "more": the real load is at least that, so it stands.
  d = Decide(config, {.now_seconds = 1, .current = 4, .target = 4, .total = 128, .complete = false},
             timer);
  EXPECT_EQ(d.step, Step::kScaled);
  EXPECT_EQ(d.replicas, 8);
}

TEST(PolicyTest, HugeLoadsSaturate) {
  PolicyConfig config = Immediate();
  config.max_replicas = std::numeric_limits<std::int32_t>::max();
  DelayTimer timer;
  const Decision d =
      Decide(config, {.now_seconds = 0, .current = 3, .target = 3, .total = 1e300}, timer);
  EXPECT_EQ(d.scaled, std::numeric_limits<std::int32_t>::max());
  EXPECT_EQ(d.replicas, std::numeric_limits<std::int32_t>::max());
}

TEST(PolicyTest, StepsHaveNames) {
  for (const auto& n : kStepNames) EXPECT_EQ(ToString(n.value), n.name);
  EXPECT_EQ(ToString(Step::kFromZero), "FromZero");
}

}  // namespace
}  // namespace eoc::autoscale
