#include "common/yaml_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace eoc {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::StartsWith;

json Parse(const std::string& text) {
  std::string error;
  std::optional<json> doc = ParseYaml(text, error);
  EXPECT_TRUE(doc.has_value()) << error;
  return doc.value_or(json());
}

std::string ErrorOf(const std::string& text) {
  std::string error;
  EXPECT_FALSE(ParseYaml(text, error).has_value()) << text;
  return error;
}

TEST(YamlToJson, PlainScalarsAreTypedQuotedOnesStayStrings) {
  const json doc = Parse(R"(
int: 42
negative: -7
plus: +3
float: 2.5
exponent: 1e3
dot: .5
yes: true
no: FALSE
none: ~
empty:
nulls: [null, Null]
text: vllm
version: "1.20"
quoted_int: '42'
huge: 123456789012345678901234567890
not_a_number: 1.2.3
)");
  EXPECT_EQ(doc["int"], json(42));
  EXPECT_TRUE(doc["int"].is_number_integer());
  EXPECT_EQ(doc["negative"], json(-7));
  EXPECT_EQ(doc["plus"], json(3));
  EXPECT_EQ(doc["float"], json(2.5));
  EXPECT_EQ(doc["exponent"], json(1000.0));
  EXPECT_EQ(doc["dot"], json(0.5));
  EXPECT_EQ(doc["yes"], json(true));
  EXPECT_EQ(doc["no"], json(false));
  EXPECT_TRUE(doc["none"].is_null());
  EXPECT_TRUE(doc["empty"].is_null());
  EXPECT_EQ(doc["nulls"], json::parse("[null, null]"));
  EXPECT_EQ(doc["text"], json("vllm"));
  EXPECT_EQ(doc["version"], json("1.20"));
  EXPECT_EQ(doc["quoted_int"], json("42"));
  EXPECT_TRUE(doc["huge"].is_number_float());
  EXPECT_EQ(doc["not_a_number"], json("1.2.3"));
}

TEST(YamlToJson, NestingAndAliases) {
  const json doc = Parse(R"(
base: &base {strategy: JouleWeighted, weights: [1, 2]}
copy: *base
list:
  - name: a
    spec: {x: 1}
)");
  EXPECT_EQ(doc["copy"], doc["base"]);
  EXPECT_EQ(doc["list"][0]["spec"]["x"], json(1));
  EXPECT_TRUE(Parse("").is_null());
}

TEST(ParseYaml, ErrorsSayWhere) {
  EXPECT_THAT(ErrorOf("a: [1, 2\nb: 3\n"), StartsWith("line "));
  EXPECT_THAT(ErrorOf("a: 1\n  b: 2\n"), StartsWith("line 2, column "));
  EXPECT_THAT(ErrorOf("? [1, 2]\n: x\n"), HasSubstr("a mapping key must be a scalar"));
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += "[";
  for (int i = 0; i < 100; ++i) deep += "]";
  EXPECT_THAT(ErrorOf(deep), HasSubstr("nested more than 64 levels deep"));
}

TEST(LoadYamlFile, NamesTheFileAndBoundsItsSize) {
  const std::string path = ::testing::TempDir() + "/yaml_json_test.yaml";
  {
    std::ofstream out(path);
    out << "a: 1\nb: [x, y]\n";
  }
  std::string error;
  const std::optional<json> doc = LoadYamlFile(path, 1024, error);
  ASSERT_TRUE(doc.has_value()) << error;
  EXPECT_EQ((*doc)["b"], json::parse(R"(["x", "y"])"));
  EXPECT_FALSE(LoadYamlFile(path, 4, error).has_value());
  EXPECT_THAT(error, StartsWith(path + ": "));
  EXPECT_THAT(error, HasSubstr("larger than 4 bytes"));
  EXPECT_FALSE(LoadYamlFile(path + ".missing", 1024, error).has_value());
  EXPECT_THAT(error, HasSubstr("No such file"));
  {
    std::ofstream out(path);
    out << "a: [1\n";
  }
  EXPECT_FALSE(LoadYamlFile(path, 1024, error).has_value());
  EXPECT_THAT(error, StartsWith(path + ": line "));
  std::remove(path.c_str());
}

}  // namespace
}  // namespace eoc
