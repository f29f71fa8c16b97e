#include "common/text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

namespace eoc {
namespace {

using ::testing::ElementsAre;

TEST(TrimWhitespace, BothEnds) {
  EXPECT_EQ(TrimWhitespace(" \t a b \r\n"), "a b");
  EXPECT_EQ(TrimWhitespace(" \n"), "");
  EXPECT_EQ(TrimWhitespace("x"), "x");
}

TEST(Join, PutsTheSeparatorBetweenParts) {
  EXPECT_EQ(Join({"a", "b", "c"}, ", "), "a, b, c");
  EXPECT_EQ(Join({"a"}, ", "), "a");
  EXPECT_EQ(Join({}, ", "), "");
}

// Quotes stay (the text is not inside quotes), a backslash does not (it starts an escape).
TEST(Printable, EscapesAllButPrintableAsciiAndCuts) {
  EXPECT_EQ(Printable(R"(say "hi" \o/)", 100), R"(say "hi" \x5co/)");
  EXPECT_EQ(Printable("l1\nl2\x1b[2J", 100), R"(l1\x0al2\x1b[2J)");
  EXPECT_EQ(Printable("abcdef", 3), "abc...");
  EXPECT_EQ(Printable("abc", 3), "abc");
}

TEST(SplitPathList, KeepsEmptyEntries) {
  EXPECT_THAT(SplitPathList("a::b"), ElementsAre("a", "", "b"));
  EXPECT_THAT(SplitPathList(""), ElementsAre(""));
  EXPECT_THAT(SplitPathList("/x/y:"), ElementsAre("/x/y", ""));
}

TEST(Quoted, CutsLongValues) {
  EXPECT_EQ(Quoted("prod"), "\"prod\"");
  const std::string shown = Quoted(std::string(1000, 'a'));
  EXPECT_EQ(shown, "\"" + std::string(100, 'a') + "\"...");
}

// One line of printable ASCII whatever the value holds: quotes, backslashes, line breaks, control
// bytes and bytes past ASCII (invalid UTF-8 included) as \xNN.
TEST(Quoted, EscapesAllButPrintableAscii) {
  EXPECT_EQ(Quoted("a\"b\\c"), R"("a\x22b\x5cc")");
  EXPECT_EQ(Quoted("l1\nl2\r\t"), R"("l1\x0al2\x0d\x09")");
  EXPECT_EQ(Quoted(std::string("\0\x7f\xc3\xa9\xff", 5)), R"("\x00\x7f\xc3\xa9\xff")");
  EXPECT_EQ(Quoted(std::string(99, 'a') + "\n\n"), "\"" + std::string(99, 'a') + "\\x0a\"...");
}

TEST(Base64, RoundTripsAndRefusesGarbage) {
  for (const std::string& s :
       std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10", 3)}) {
    EXPECT_EQ(Base64Decode(Base64Encode(s)), s);
  }
  EXPECT_EQ(Base64Encode("hello"), "aGVsbG8=");
  EXPECT_EQ(Base64Decode("aGVs\nbG8="), "hello");      // line breaks, as PEM-ish data has
  EXPECT_FALSE(Base64Decode("aGVsbG8").has_value());   // missing padding
  EXPECT_FALSE(Base64Decode("aGV=bG8=").has_value());  // padding in the middle
  EXPECT_FALSE(Base64Decode("aGVsbG8*").has_value());
  EXPECT_FALSE(Base64Decode("a===").has_value());
}

}  // namespace
}  // namespace eoc
