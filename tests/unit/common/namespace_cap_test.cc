#include "common/namespace_cap.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace eoc {
namespace {

using ::testing::HasSubstr;

NamespaceCap Cap(std::size_t limit) {
  return NamespaceCap({.limit = limit, .what = "SDK URLs", .flag = "--max-sdk-urls"});
}

TEST(NamespaceCap, ANamespaceAtItsLimitRefusesANewValueNamingTheLimitAndItsFlag) {
  NamespaceCap cap = Cap(2);
  EXPECT_EQ(cap.Use("t/a", "t", "http://one"), "");
  EXPECT_EQ(cap.Use("t/b", "t", "http://two"), "");
  const std::string why = cap.Use("t/c", "t", "http://three");
  EXPECT_THAT(why, HasSubstr("namespace \"t\" already uses 2 distinct SDK URLs"));
  EXPECT_THAT(why, HasSubstr("--max-sdk-urls"));
  EXPECT_THAT(why, ::testing::Not(HasSubstr("three")));  // the tenant's value is not echoed
  EXPECT_EQ(cap.Distinct("t"), 2U);
  // A value already in use is shared and counts once; other namespaces have limits of their own.
  EXPECT_EQ(cap.Use("t/d", "t", "http://one"), "");
  EXPECT_EQ(cap.Distinct("t"), 2U);
  EXPECT_EQ(cap.Use("u/a", "u", "http://three"), "");
  // Asking again changes nothing for the admitted, and nothing for the refused.
  EXPECT_EQ(cap.Use("t/a", "t", "http://one"), "");
  EXPECT_NE(cap.Use("t/c", "t", "http://three"), "");
}

TEST(NamespaceCap, RoomMadeByAPoolThatLeavesOrMovesIsTakenByTheNextToAsk) {
  NamespaceCap cap = Cap(1);
  EXPECT_EQ(cap.Use("t/a", "t", "x"), "");
  EXPECT_EQ(cap.Use("t/b", "t", "x"), "");
  EXPECT_NE(cap.Use("t/c", "t", "y"), "");
  // One of two users leaves: "x" is still used.
  cap.Forget("t/a");
  EXPECT_NE(cap.Use("t/c", "t", "y"), "");
  // The last user of "x" names nothing any more: room for "y".
  EXPECT_EQ(cap.Use("t/b", "t", ""), "");
  EXPECT_EQ(cap.Distinct("t"), 0U);
  EXPECT_EQ(cap.Use("t/c", "t", "y"), "");
  // A user moving to another value gives up its old one first, so a namespace's only user may.
  EXPECT_EQ(cap.Use("t/c", "t", "z"), "");
  EXPECT_EQ(cap.Distinct("t"), 1U);
  cap.Forget("t/c");
  cap.Forget("t/c");  // twice: nothing
  cap.Forget("nobody");
  EXPECT_EQ(cap.Distinct("t"), 0U);
}

}  // namespace
}  // namespace eoc
