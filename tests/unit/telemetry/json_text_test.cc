#include "telemetry/json_text.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace eoc::telemetry {
namespace {

std::string Json(std::string_view text) {
  std::string out;
  AppendJsonString(out, text);
  return out;
}

TEST(AppendJsonStringTest, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(Json("plain"), R"("plain")");
  EXPECT_EQ(Json("a\"b\\c"), R"("a\"b\\c")");
  EXPECT_EQ(Json("l1\nl2\r\t"), R"("l1\nl2\r\t")");
  EXPECT_EQ(Json(std::string_view("\x01\x1f\x7f", 3)), R"("\u0001\u001f\u007f")");
  EXPECT_EQ(Json(std::string_view("nul\0end", 7)), R"("nul\u0000end")");
}

TEST(AppendJsonStringTest, KeepsWellFormedUtf8) {
  EXPECT_EQ(Json("gCO\u2082e \U0001F331"), "\"gCO\u2082e \U0001F331\"");
}

TEST(AppendJsonStringTest, ReplacesMalformedUtf8SoTheResultAlwaysParses) {
  const std::string replacement = "\uFFFD";
  EXPECT_EQ(Json("a\xff"
                 "b"),
            "\"a" + replacement + "b\"");
  EXPECT_EQ(Json("\xC0\xAF"), "\"" + replacement + replacement + "\"");  // overlong '/'
  EXPECT_EQ(Json("\xED\xA0\x80"),
            "\"" + replacement + replacement + replacement + "\"");  // a surrogate
  EXPECT_EQ(Json("cut \xE2\x82"), "\"cut " + replacement + replacement + "\"");
  for (const std::string_view text : {"\xF4\x90\x80\x80", "\xF0\x80\x80", "\x80", "\xFE\xFF"}) {
    EXPECT_TRUE(nlohmann::json::accept(Json(text))) << Json(text);
  }
}

}  // namespace
}  // namespace eoc::telemetry
