#include "common/descriptors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

namespace eoc {
namespace {

using ::testing::HasSubstr;

const std::vector<DescriptorUse> kUses = {
    {"--pick-max-connections", 4096}, {"--scrape-max-in-flight", 64}, {"--fd-reserve", 1024}};

TEST(PlanDescriptors, RaisesTheSoftLimitToTheHardOneWhenTheUsesFit) {
  std::string error;
  const auto plan = PlanDescriptors({.soft = 1024, .hard = 1'048'576}, kUses, &error);
  ASSERT_TRUE(plan) << error;
  EXPECT_EQ(plan->soft, 1'048'576U);
  EXPECT_EQ(plan->needed, 4096U + 64 + 1024);
  // Exactly full fits.
  EXPECT_TRUE(PlanDescriptors({.soft = 256, .hard = 5184}, kUses, &error));
}

TEST(PlanDescriptors, AHardLimitTooLowForTheCapsIsAnErrorNamingEachFlagAndTheNumbers) {
  std::string error;
  EXPECT_EQ(PlanDescriptors({.soft = 1024, .hard = 5183}, kUses, &error), std::nullopt);
  EXPECT_THAT(error, HasSubstr("--pick-max-connections 4096 + --scrape-max-in-flight 64 + "
                               "--fd-reserve 1024 = 5184 descriptors"));
  EXPECT_THAT(error, HasSubstr("over the hard limit of 5183"));
}

TEST(PlanDescriptors, NeverLowersTheSoftLimitAndCopesWithNoLimitAndHugeCounts) {
  std::string error;
  // No hard limit: the soft one is raised to what the uses need, never lowered.
  auto plan = PlanDescriptors({.soft = 1024, .hard = kNoDescriptorLimit}, kUses, &error);
  ASSERT_TRUE(plan) << error;
  EXPECT_EQ(plan->soft, 5184U);
  plan = PlanDescriptors({.soft = 100'000, .hard = kNoDescriptorLimit}, kUses, &error);
  ASSERT_TRUE(plan) << error;
  EXPECT_EQ(plan->soft, 100'000U);
  // A sum that would overflow saturates, and so does not fit.
  const std::vector<DescriptorUse> huge = {{"a", kNoDescriptorLimit - 1}, {"b", 5}};
  EXPECT_EQ(PlanDescriptors({.soft = 1, .hard = kNoDescriptorLimit - 1}, huge, &error),
            std::nullopt);
  EXPECT_THAT(error, HasSubstr("over the hard limit"));
  // Nothing to hold: any limit fits.
  EXPECT_TRUE(PlanDescriptors({.soft = 0, .hard = 0}, {}, &error));
}

TEST(DescriptorLimits, TheWrapperReadsAndSetsThisProcesssLimit) {
  std::string error;
  const auto before = ReadDescriptorLimits(&error);
  ASSERT_TRUE(before) << error;
  ASSERT_NE(before->hard, 0U);
  ASSERT_TRUE(SetSoftDescriptorLimit(before->hard, &error)) << error;
  const auto raised = ReadDescriptorLimits(&error);
  ASSERT_TRUE(raised) << error;
  EXPECT_EQ(raised->soft, before->hard);
  EXPECT_EQ(raised->hard, before->hard);
  ASSERT_TRUE(SetSoftDescriptorLimit(before->soft, &error)) << error;
  EXPECT_EQ(ReadDescriptorLimits(&error), before);
  // Above the hard limit: refused, and said why.
  if (before->hard != kNoDescriptorLimit) {
    EXPECT_FALSE(SetSoftDescriptorLimit(before->hard + 1, &error));
    EXPECT_THAT(error, HasSubstr("cannot raise the soft open-files limit"));
  }
}

}  // namespace
}  // namespace eoc
