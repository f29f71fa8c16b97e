#include "routing/publish_decision.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "routing/weights.h"

namespace eoc::routing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

const Clock::time_point kT0 = Clock::time_point() + std::chrono::hours(1);
const PublishRules kRules{.threshold = 50, .interval = seconds(10), .min_gap = seconds(1)};
constexpr Strategy kJoule = Strategy::kJouleWeighted;

Worker W(const std::string& name, std::int32_t weight, bool draining = false) {
  return {.key = WorkerKeyOf("prod/" + name),
          .pod = "prod/" + name,
          .address = "10.0.0.1:8000",
          .weight = weight,
          .draining = draining};
}

// The table published at kT0.
class PublishDecisionTest : public ::testing::Test {
 protected:
  std::vector<Worker> published_ = {W("a", 1000), W("b", 500), W("c", 250)};

  std::optional<LastPublication> Last(Clock::time_point at = kT0) const {
    return LastPublication{.strategy = kJoule, .workers = published_, .at = at};
  }
  PublishDecision Decide(const std::vector<Worker>& candidate, Clock::time_point now,
                         const PublishRules& rules = kRules) const {
    return DecidePublish(Last(), kJoule, candidate, now, rules);
  }
};

PublishDecision Now(PublishReason reason, Clock::time_point now) {
  return {.verdict = PublishVerdict::kNow, .reason = reason, .earliest = now};
}
PublishDecision NotYet(PublishReason reason, Clock::time_point at) {
  return {.verdict = PublishVerdict::kNotYet, .reason = reason, .earliest = at};
}
const PublishDecision kNothing{.verdict = PublishVerdict::kNothing};

TEST_F(PublishDecisionTest, TheFirstTablePublishesAtOnceEvenEmpty) {
  EXPECT_EQ(DecidePublish(std::nullopt, kJoule, published_, kT0, kRules),
            Now(PublishReason::kFirst, kT0));
  EXPECT_EQ(DecidePublish(std::nullopt, kJoule, {}, kT0, kRules), Now(PublishReason::kFirst, kT0));
}

TEST_F(PublishDecisionTest, NothingChangedNeverPublishes) {
  EXPECT_EQ(Decide(published_, kT0), kNothing);
  EXPECT_EQ(Decide(published_, kT0 + std::chrono::hours(24)), kNothing);
  // Another order of the same workers is the same table.
  EXPECT_EQ(Decide({published_[2], published_[0], published_[1]}, kT0 + seconds(30)), kNothing);
}

TEST_F(PublishDecisionTest, AnEmptyPoolThatStaysEmptyPublishesNothing) {
  published_.clear();
  EXPECT_EQ(Decide({}, kT0 + seconds(30)), kNothing);
  EXPECT_EQ(Decide({W("a", 1000)}, kT0 + seconds(30)),
            Now(PublishReason::kMembership, kT0 + seconds(30)));
}

TEST_F(PublishDecisionTest, AWorkerJoiningPublishesWithinASecond) {
  const std::vector<Worker> joined = {W("a", 1000), W("b", 500), W("c", 250), W("d", 1000)};
  EXPECT_EQ(Decide(joined, kT0 + milliseconds(300)),
            NotYet(PublishReason::kMembership, kT0 + seconds(1)));
  EXPECT_EQ(Decide(joined, kT0 + seconds(1)), Now(PublishReason::kMembership, kT0 + seconds(1)));
  EXPECT_EQ(Decide(joined, kT0 + seconds(7)), Now(PublishReason::kMembership, kT0 + seconds(7)));
}

TEST_F(PublishDecisionTest, AWorkerLeavingOrBeingReplacedIsAMembershipChange) {
  EXPECT_EQ(Decide({W("a", 1000), W("b", 500)}, kT0 + seconds(2)),
            Now(PublishReason::kMembership, kT0 + seconds(2)));
  // As many workers as before, but one is another pod.
  EXPECT_EQ(Decide({W("a", 1000), W("b", 500), W("z", 250)}, kT0 + seconds(2)),
            Now(PublishReason::kMembership, kT0 + seconds(2)));
  EXPECT_EQ(Decide({}, kT0 + seconds(2)), Now(PublishReason::kMembership, kT0 + seconds(2)));
}

TEST_F(PublishDecisionTest, AWorkersNewAddressOrModelsIsAMembershipChange) {
  auto moved = published_;
  moved[1].address = "10.0.0.9:8000";
  EXPECT_EQ(Decide(moved, kT0 + seconds(2)), Now(PublishReason::kMembership, kT0 + seconds(2)));
  auto models = published_;
  models[1].capability.models = {"llama-3-8b"};
  EXPECT_EQ(Decide(models, kT0 + seconds(2)), Now(PublishReason::kMembership, kT0 + seconds(2)));
}

TEST_F(PublishDecisionTest, ADrainingFlagPublishesWithinASecond) {
  auto draining = published_;
  draining[2].draining = true;
  EXPECT_EQ(Decide(draining, kT0 + milliseconds(10)),
            NotYet(PublishReason::kDraining, kT0 + seconds(1)));
  EXPECT_EQ(Decide(draining, kT0 + seconds(1)), Now(PublishReason::kDraining, kT0 + seconds(1)));
}

TEST_F(PublishDecisionTest, AFlappingDrainingFlagPublishesAtMostOnceASecond) {
  auto draining = published_;
  draining[2].draining = true;
  // It flips and flips back inside the second: nothing left to publish.
  EXPECT_EQ(Decide(draining, kT0 + milliseconds(200)),
            NotYet(PublishReason::kDraining, kT0 + seconds(1)));
  EXPECT_EQ(Decide(published_, kT0 + milliseconds(400)), kNothing);
  // It flips at every decision; each publication holds the next back by a second.
  Clock::time_point last = kT0;
  int publications = 0;
  for (int tick = 1; tick <= 50; ++tick) {  // every 100 ms for 5 s
    const Clock::time_point now = kT0 + tick * milliseconds(100);
    auto candidate = published_;
    candidate[2].draining = !candidate[2].draining;
    const auto d =
        DecidePublish(LastPublication{.strategy = kJoule, .workers = published_, .at = last},
                      kJoule, candidate, now, kRules);
    if (d.publish()) {
      EXPECT_GE(now - last, seconds(1));
      last = now;
      published_ = candidate;
      ++publications;
    } else {
      EXPECT_EQ(d, NotYet(PublishReason::kDraining, last + seconds(1)));
    }
  }
  EXPECT_EQ(publications, 5);
}

TEST_F(PublishDecisionTest, AWeightMovedByTheThresholdExactlyIsNotPublished) {
  EXPECT_EQ(Decide({W("a", 1000), W("b", 550), W("c", 200)}, kT0 + seconds(30)), kNothing);
}

TEST_F(PublishDecisionTest, AWeightMovedByMoreThanTheThresholdPublishesAfterTheInterval) {
  const std::vector<Worker> moved = {W("a", 1000), W("b", 551), W("c", 250)};
  EXPECT_EQ(Decide(moved, kT0 + seconds(3)), NotYet(PublishReason::kWeights, kT0 + seconds(10)));
  EXPECT_EQ(Decide(moved, kT0 + seconds(10) - milliseconds(1)),
            NotYet(PublishReason::kWeights, kT0 + seconds(10)));
  EXPECT_EQ(Decide(moved, kT0 + seconds(10)), Now(PublishReason::kWeights, kT0 + seconds(10)));
  EXPECT_EQ(Decide(moved, kT0 + seconds(45)), Now(PublishReason::kWeights, kT0 + seconds(45)));
}

TEST_F(PublishDecisionTest, OneWorkerMovingDownPastTheThresholdSuffices) {
  EXPECT_EQ(Decide({W("a", 1000), W("b", 500), W("c", 199)}, kT0 + seconds(10)),
            Now(PublishReason::kWeights, kT0 + seconds(10)));
}

TEST_F(PublishDecisionTest, SmallDriftsAddUpAgainstThePublishedWeight) {
  // Each decision sees b 20 higher than the one before: never past 50 from its neighbour, but
  // the third is 60 from what was published.
  EXPECT_EQ(Decide({W("a", 1000), W("b", 520), W("c", 250)}, kT0 + seconds(10)), kNothing);
  EXPECT_EQ(Decide({W("a", 1000), W("b", 540), W("c", 250)}, kT0 + seconds(20)), kNothing);
  EXPECT_EQ(Decide({W("a", 1000), W("b", 560), W("c", 250)}, kT0 + seconds(30)),
            Now(PublishReason::kWeights, kT0 + seconds(30)));
}

TEST_F(PublishDecisionTest, AMoveThatReturnsWithinTheThresholdBeforeItsTimeIsDropped) {
  EXPECT_EQ(Decide({W("a", 1000), W("b", 700), W("c", 250)}, kT0 + seconds(4)),
            NotYet(PublishReason::kWeights, kT0 + seconds(10)));
  EXPECT_EQ(Decide({W("a", 1000), W("b", 530), W("c", 250)}, kT0 + seconds(10)), kNothing);
}

TEST_F(PublishDecisionTest, AMembershipChangeDuringTheIntervalWaitPublishesWithinASecond) {
  EXPECT_EQ(Decide({W("a", 1000), W("b", 900), W("c", 250)}, kT0 + seconds(2)),
            NotYet(PublishReason::kWeights, kT0 + seconds(10)));
  const std::vector<Worker> both = {W("a", 1000), W("b", 900), W("c", 250), W("d", 1000)};
  EXPECT_EQ(Decide(both, kT0 + seconds(3)), Now(PublishReason::kMembership, kT0 + seconds(3)));
  // Just after a publication, the same change waits for the gap, not for the interval.
  EXPECT_EQ(Decide(both, kT0 + milliseconds(500)),
            NotYet(PublishReason::kMembership, kT0 + seconds(1)));
}

TEST_F(PublishDecisionTest, TheIntervalCountsFromTheLastPublicationWhateverItsReason) {
  // Published at kT0 for a membership change; a weight that moved at kT0 + 1 s still waits until
  // kT0 + 10 s.
  EXPECT_EQ(Decide({W("a", 1000), W("b", 300), W("c", 250)}, kT0 + seconds(1)),
            NotYet(PublishReason::kWeights, kT0 + seconds(10)));
}

TEST_F(PublishDecisionTest, AZeroThresholdPublishesAnyMoveAndANegativeOneActsAsZero) {
  const std::vector<Worker> moved = {W("a", 1000), W("b", 501), W("c", 250)};
  EXPECT_EQ(Decide(moved, kT0 + seconds(10), {.threshold = 0}),
            Now(PublishReason::kWeights, kT0 + seconds(10)));
  EXPECT_EQ(Decide(moved, kT0 + seconds(10), {.threshold = -5}),
            Now(PublishReason::kWeights, kT0 + seconds(10)));
  EXPECT_EQ(Decide(published_, kT0 + seconds(10), {.threshold = 0}), kNothing);
}

TEST_F(PublishDecisionTest, AThresholdOfTheWholeScaleNeverPublishesWeightsAlone) {
  EXPECT_EQ(
      Decide({W("a", 0), W("b", 1000), W("c", 0)}, kT0 + seconds(60), {.threshold = kMaxWeight}),
      kNothing);
}

TEST_F(PublishDecisionTest, TheIntervalAndGapAreTheRulesOwn) {
  const PublishRules rules{.threshold = 50, .interval = seconds(30), .min_gap = seconds(2)};
  EXPECT_EQ(Decide({W("a", 1000), W("b", 900), W("c", 250)}, kT0 + seconds(10), rules),
            NotYet(PublishReason::kWeights, kT0 + seconds(30)));
  EXPECT_EQ(Decide({W("a", 1000)}, kT0 + seconds(1), rules),
            NotYet(PublishReason::kMembership, kT0 + seconds(2)));
}

TEST_F(PublishDecisionTest, AnIntervalShorterThanTheGapStillWaitsForTheGap) {
  const PublishRules rules{.threshold = 50, .interval = seconds(0), .min_gap = seconds(1)};
  const std::vector<Worker> moved = {W("a", 1000), W("b", 900), W("c", 250)};
  EXPECT_EQ(Decide(moved, kT0 + milliseconds(100), rules),
            NotYet(PublishReason::kWeights, kT0 + seconds(1)));
  // On a tie the urgent reason is reported.
  const std::vector<Worker> both = {W("a", 1000), W("b", 900, true), W("c", 250)};
  EXPECT_EQ(Decide(both, kT0 + seconds(1), rules), Now(PublishReason::kDraining, kT0 + seconds(1)));
}

TEST_F(PublishDecisionTest, AStrategyChangePublishesWithinASecond) {
  EXPECT_EQ(
      DecidePublish(Last(), Strategy::kLeastBusy, published_, kT0 + milliseconds(500), kRules),
      NotYet(PublishReason::kStrategy, kT0 + seconds(1)));
  const std::vector<Worker> one = {W("a", 1000)};
  EXPECT_EQ(DecidePublish(Last(), Strategy::kLeastBusy, one, kT0 + seconds(1), kRules),
            Now(PublishReason::kStrategy, kT0 + seconds(1)));
}

TEST_F(PublishDecisionTest, TheFirstReasonThatAppliesIsReported) {
  auto all = std::vector<Worker>{W("a", 1000), W("b", 900, true), W("d", 1000)};
  EXPECT_EQ(Decide(all, kT0 + seconds(1)).reason, PublishReason::kMembership);
  all = {W("a", 1000), W("b", 900, true), W("c", 250)};
  EXPECT_EQ(Decide(all, kT0 + seconds(1)).reason, PublishReason::kDraining);
}

TEST(PublishNamesTest, ReasonsAndVerdictsHaveTheirNames) {
  EXPECT_EQ(ToString(PublishReason::kFirst), "first");
  EXPECT_EQ(ToString(PublishReason::kStrategy), "strategy");
  EXPECT_EQ(ToString(PublishReason::kMembership), "membership");
  EXPECT_EQ(ToString(PublishReason::kDraining), "draining");
  EXPECT_EQ(ToString(PublishReason::kWeights), "weights");
  EXPECT_EQ(ToString(PublishVerdict::kNow), "now");
  EXPECT_EQ(ToString(PublishVerdict::kNotYet), "not-yet");
  EXPECT_EQ(ToString(PublishVerdict::kNothing), "nothing");
}

}  // namespace
}  // namespace eoc::routing
