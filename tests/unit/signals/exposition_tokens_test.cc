#include "signals/exposition_tokens.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

namespace eoc::signals {
namespace {

TEST(ParseSampleValue, DecimalFormsGoAccepts) {
  EXPECT_EQ(ParseSampleValue("1.234"), 1.234);
  EXPECT_EQ(ParseSampleValue("-3e3"), -3000);
  EXPECT_EQ(ParseSampleValue("+3E+3"), 3000);
  EXPECT_EQ(ParseSampleValue("08"), 8);
  EXPECT_EQ(ParseSampleValue(".3"), 0.3);
  EXPECT_EQ(ParseSampleValue("1."), 1);
  EXPECT_EQ(ParseSampleValue("1.7560473e+06"), 1756047.3);
  EXPECT_EQ(ParseSampleValue("-0"), 0);
  EXPECT_TRUE(std::signbit(*ParseSampleValue("-0")));
}

TEST(ParseSampleValue, InfinityAndNanInAnyCase) {
  const double inf = std::numeric_limits<double>::infinity();
  for (const char* text : {"+Inf", "inf", "INF", "Infinity", "+infinity"}) {
    EXPECT_EQ(ParseSampleValue(text), inf) << text;
  }
  EXPECT_EQ(ParseSampleValue("-Inf"), -inf);
  EXPECT_EQ(ParseSampleValue("-infinity"), -inf);
  for (const char* text : {"NaN", "nan", "NAN"}) EXPECT_TRUE(std::isnan(*ParseSampleValue(text)));
  EXPECT_FALSE(ParseSampleValue("+NaN"));  // Go takes no sign on nan
  EXPECT_FALSE(ParseSampleValue("infin"));
}

TEST(ParseSampleValue, RefusesWhatThePrometheusParsersRefuse) {
  for (const char* text : {"", "+", "-", ".", "e3", "1e", "1e+", "0x1p-3", "0x1", "0b1", "0o1",
                           "1_2", "1,5", "true", "1.2.3", " 1", "1 ", "--1", "nan(1)"}) {
    EXPECT_FALSE(ParseSampleValue(text)) << text;
  }
}

TEST(ParseSampleValue, TooLargeRefusedTooSmallIsZero) {
  EXPECT_FALSE(ParseSampleValue("1e400"));  // Go's ErrRange
  EXPECT_FALSE(ParseSampleValue("-1e400"));
  EXPECT_EQ(ParseSampleValue("1e-400"), 0);  // Go gives 0 without error
  EXPECT_EQ(ParseSampleValue("0.0000000000000000000000000000000000000000000000000000000000000000"
                             "0000000000000000000000000000000000000000000000000000000000000000"
                             "0000000000000000000000000000000000000000000000000000000000000000"
                             "0000000000000000000000000000000000000000000000000000000000000000"
                             "0000000000000000000000000000000000000000000000000000000000000000"
                             "00001"),
            0);
  EXPECT_GT(*ParseSampleValue("4.9e-324"), 0);  // the smallest denormal
  EXPECT_EQ(ParseSampleValue("1e99999999999999999999"), std::nullopt);
}

TEST(ParseTimestamp, SignedDecimalIntegersIn64Bits) {
  EXPECT_EQ(ParseTimestamp("103948"), 103948);
  EXPECT_EQ(ParseTimestamp("-2"), -2);
  EXPECT_EQ(ParseTimestamp("+5"), 5);
  EXPECT_EQ(ParseTimestamp("9223372036854775807"), std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(ParseTimestamp("-9223372036854775808"), std::numeric_limits<std::int64_t>::min());
  for (const char* text : {"", "-", "2.72", "1_2", "9223372036854775808", "1e3", "0x10"}) {
    EXPECT_FALSE(ParseTimestamp(text)) << text;
  }
}

TEST(IsValidUtf8, AsGoSays) {
  EXPECT_TRUE(IsValidUtf8("Björn 佖佥 €"));
  EXPECT_TRUE(IsValidUtf8(std::string("a\0b", 3)));
  EXPECT_TRUE(IsValidUtf8("\xF4\x8F\xBF\xBF"));  // U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xbd"));             // a lone continuation byte
  EXPECT_FALSE(IsValidUtf8("\xff"));
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));          // overlong
  EXPECT_FALSE(IsValidUtf8("\xE0\x80\xAF"));      // overlong
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));      // a surrogate
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xE2\x82"));          // cut short
}

TEST(ScanQuoted, EscapesAndErrors) {
  QuotedScan scan = ScanQuoted(R"(x"a\"b\\c\n"y)", 1);
  EXPECT_EQ(scan.error, QuotedError::kNone);
  EXPECT_EQ(scan.end, 12U);
  EXPECT_TRUE(scan.escaped);
  EXPECT_EQ(Unescape(R"(a\"b\\c\n)"), "a\"b\\c\n");
  EXPECT_EQ(ScanQuoted(R"("abc)", 0).error, QuotedError::kUnterminated);
  EXPECT_EQ(ScanQuoted(R"("abc\)", 0).error, QuotedError::kUnterminated);
  EXPECT_EQ(ScanQuoted(R"("a\tb")", 0).error, QuotedError::kBadEscape);
  EXPECT_EQ(ScanQuoted("\"\xff\"", 0).error, QuotedError::kBadUtf8);
  EXPECT_FALSE(ScanQuoted(R"("plain")", 0).escaped);
  std::string out;
  EXPECT_FALSE(Unescape(R"(a\x)", &out));
  EXPECT_FALSE(Unescape("a\\", &out));
}

}  // namespace
}  // namespace eoc::signals
