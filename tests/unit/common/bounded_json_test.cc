// The bounded JSON parser at its limits, and values described for messages.
#include "common/bounded_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace eoc {
namespace {

using nlohmann::json;

constexpr JsonLimits kLimits{.max_depth = 4, .max_bytes = 64};

// Arrays nested `depth` deep: "[[[]]]" for 3.
std::string Nested(std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST(ParseBoundedJson, ReadsADocumentWithinItsLimits) {
  std::string error;
  const auto doc = ParseBoundedJson(R"({"a": [1, {"b": "c"}]})", kLimits, error);
  ASSERT_TRUE(doc) << error;
  EXPECT_EQ((*doc)["a"][1]["b"], "c");
}

TEST(ParseBoundedJson, DepthAtTheLimitPassesOneMoreFails) {
  std::string error;
  EXPECT_TRUE(ParseBoundedJson(Nested(4), kLimits, error)) << error;
  EXPECT_TRUE(ParseBoundedJson(R"({"a":{"b":{"c":[]}}})", kLimits, error)) << error;
  EXPECT_TRUE(ParseBoundedJson("7", {.max_depth = 0, .max_bytes = 64}, error)) << error;

  EXPECT_FALSE(ParseBoundedJson(Nested(5), kLimits, error));
  EXPECT_EQ(error, "nested deeper than 4 levels");
  EXPECT_FALSE(ParseBoundedJson(R"({"a":{"b":{"c":[{}]}}})", kLimits, error));
  EXPECT_EQ(error, "nested deeper than 4 levels");
  EXPECT_FALSE(ParseBoundedJson("{}", {.max_depth = 0, .max_bytes = 64}, error));
}

// 100,000 levels in 200 KB: refused as it is read, without recursing on it.
TEST(ParseBoundedJson, AHundredThousandLevelsAreRefused) {
  std::string error;
  EXPECT_FALSE(ParseBoundedJson(Nested(100'000), {.max_depth = 512, .max_bytes = 1 << 20}, error));
  EXPECT_EQ(error, "nested deeper than 512 levels");
}

TEST(ParseBoundedJson, SizeAtTheLimitPassesOneMoreFails) {
  std::string error;
  const std::string at_limit = "\"" + std::string(62, 'x') + "\"";
  ASSERT_EQ(at_limit.size(), 64U);
  EXPECT_TRUE(ParseBoundedJson(at_limit, kLimits, error)) << error;
  EXPECT_FALSE(ParseBoundedJson(at_limit + " ", kLimits, error));
  EXPECT_EQ(error, "65 bytes, over the limit of 64");
}

// A syntax error names where it is and never quotes the text (a secret, or megabytes of it).
TEST(ParseBoundedJson, SyntaxErrorsGiveThePositionOnly) {
  std::string error;
  EXPECT_FALSE(ParseBoundedJson("[1,\n 2,\n secret]", kLimits, error));
  EXPECT_EQ(error, "not valid JSON at byte 10 (line 3, column 2)");
  EXPECT_FALSE(ParseBoundedJson("[\"" + std::string(50, 'x'), kLimits, error));
  EXPECT_THAT(error, ::testing::StartsWith("not valid JSON at byte "));
  EXPECT_THAT(error, ::testing::Not(::testing::HasSubstr("xxx")));
  EXPECT_FALSE(ParseBoundedJson("", kLimits, error));
  EXPECT_EQ(error, "not valid JSON at byte 1 (line 1, column 1)");
  EXPECT_FALSE(ParseBoundedJson("[1e400]", kLimits, error));
  EXPECT_EQ(error, "not valid JSON: a number out of range");
}

TEST(DescribeJson, ShortAndEscapedWhateverTheValue) {
  EXPECT_EQ(DescribeJson(json("70")), "\"70\"");
  EXPECT_EQ(DescribeJson(json("a\"b\\c\nd\xc3\xa9")), R"("a\x22b\x5cc\x0ad\xc3\xa9")");
  EXPECT_EQ(DescribeJson(json(std::string(1000, 'x'))), "\"" + std::string(100, 'x') + "\"...");
  EXPECT_EQ(DescribeJson(json(-5)), "-5");
  EXPECT_EQ(DescribeJson(json(nullptr)), "null");
  EXPECT_EQ(DescribeJson(json(true)), "true");
  EXPECT_EQ(DescribeJson(json::array({1, 2})), "an array");
  EXPECT_EQ(DescribeJson(json::object({{"a", 1}})), "an object");
  std::string error;
  const auto deep = ParseBoundedJson(Nested(512), {.max_depth = 512, .max_bytes = 1 << 20}, error);
  ASSERT_TRUE(deep) << error;
  EXPECT_EQ(DescribeJson(*deep), "an array");
}

}  // namespace
}  // namespace eoc
