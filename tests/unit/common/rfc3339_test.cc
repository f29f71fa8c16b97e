#include "common/rfc3339.h"

#include <gtest/gtest.h>

namespace eoc {
namespace {

TEST(ParseRfc3339, AcceptsKubernetesTimes) {
  using std::chrono::sys_days;
  using namespace std::chrono_literals;
  const auto base = sys_days{std::chrono::year{2026} / 11 / 30} + 10h;
  EXPECT_EQ(ParseRfc3339("2026-11-30T10:00:00Z"), base);
  EXPECT_EQ(ParseRfc3339("2026-11-30t10:00:00z"), base);
  EXPECT_EQ(ParseRfc3339("2026-11-30T10:00:00.123456789Z"), base + 123456789ns);
  EXPECT_EQ(ParseRfc3339("2026-11-30T10:00:00.1234567891Z"), base + 123456789ns);
  EXPECT_EQ(ParseRfc3339("2026-11-30T11:30:00+01:30"), base);
  EXPECT_EQ(ParseRfc3339("2026-11-30T05:00:00-05:00"), base);
  EXPECT_EQ(ParseRfc3339("2024-02-29T00:00:00Z"), sys_days{std::chrono::year{2024} / 2 / 29});
}

TEST(ParseRfc3339, RejectsOthers) {
  for (const char* bad :
       {"", "2026-11-30", "2026-11-30T10:00:00", "2026-11-30 10:00:00Z", "2026-13-01T00:00:00Z",
        "2025-02-29T00:00:00Z", "2026-11-30T24:00:00Z", "2026-11-30T10:60:00Z",
        "2026-11-30T10:00:00.Z", "2026-11-30T10:00:00+1:00", "2026-11-30T10:00:00Zjunk",
        "2026-11-30T10:00:00+01:00junk", "tomorrow", "2026-11-30T10:00:00+24:00"}) {
    EXPECT_FALSE(ParseRfc3339(bad).has_value()) << bad;
  }
}

TEST(FormatRfc3339, SecondsAndMicrosecondsRoundTrip) {
  using namespace std::chrono_literals;
  const auto t =
      std::chrono::sys_days{std::chrono::year{2026} / 11 / 30} + 9h + 5min + 7s + 123456789ns;
  EXPECT_EQ(FormatRfc3339(t), "2026-11-30T09:05:07Z");
  EXPECT_EQ(FormatRfc3339Micro(t), "2026-11-30T09:05:07.123456Z");
  EXPECT_EQ(ParseRfc3339(FormatRfc3339Micro(t)), t - 789ns);
  EXPECT_EQ(FormatRfc3339Micro(std::chrono::sys_days{std::chrono::year{1999} / 1 / 2}),
            "1999-01-02T00:00:00.000000Z");
}

}  // namespace
}  // namespace eoc
