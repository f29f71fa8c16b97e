// Reading /emissions/bylocations answers: the docs' real answers (fixtures/SOURCES.md), then
// invalid JSON, wrong shapes, bad ratings, missing zones and huge bodies.
#include "controller/carbon/emissions_answer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fixtures.h"

namespace eoc::controller::carbon {
namespace {

using testing::Fixture;
using ::testing::HasSubstr;
using ::testing::StartsWith;

EmissionsAnswer Parse(const std::string& body, std::vector<std::string> zones) {
  return ParseEmissionsByLocations(body, zones);
}

// carbon-aware-webapi.md's /emissions/bylocations answer is invalid JSON as published (no comma
// after "location"): refused, saying where.
TEST(EmissionsAnswerTest, DocsByLocationsAnswerIsInvalidJsonAndRefused) {
  const auto a =
      Parse(Fixture("carbon-aware-sdk-emissions-bylocations-docs.json"), {"eastus", "westus"});
  ASSERT_TRUE(a.error.has_value());
  EXPECT_THAT(*a.error, StartsWith("the answer: not valid JSON at "));
  EXPECT_THAT(*a.error, HasSubstr("line 4"));
  EXPECT_TRUE(a.ratings.empty());
}

// The same answer with the missing commas put back reads as the docs mean it.
TEST(EmissionsAnswerTest, DocsByLocationsAnswerWithItsCommasReads) {
  std::string body = Fixture("carbon-aware-sdk-emissions-bylocations-docs.json");
  for (std::size_t at = 0; (at = body.find("\"\n", at)) != std::string::npos;) {
    if (body.compare(at + 2, 5, "    \"") == 0) body.insert(at + 1, ",");
    at += 2;
  }
  const auto a = Parse(body, {"eastus", "westus"});
  ASSERT_FALSE(a.error.has_value()) << *a.error;
  EXPECT_EQ(a.ratings.at("eastus"), 70);
  EXPECT_EQ(a.ratings.at("westus"), 64);
  EXPECT_TRUE(a.missing.empty());
}

TEST(EmissionsAnswerTest, DocsBestAnswerIsInvalidJsonAndRefused) {
  const auto a =
      Parse(Fixture("carbon-aware-sdk-emissions-bylocations-best-docs.json"), {"eastus"});
  ASSERT_TRUE(a.error.has_value());
  EXPECT_THAT(*a.error, StartsWith("the answer: not valid JSON at "));
}

// /emissions/bylocation's answer has the same shape (with seven fractional digits in its time).
TEST(EmissionsAnswerTest, DocsByLocationAnswerReads) {
  const auto a = Parse(Fixture("carbon-aware-sdk-emissions-bylocation-docs.json"), {"eastus"});
  ASSERT_FALSE(a.error.has_value()) << *a.error;
  EXPECT_EQ(a.ratings.at("eastus"), 70);
}

// WattTime's 5-minute series, newest first: the newest time wins, not the first or the last entry.
TEST(EmissionsAnswerTest, QuickstartSeriesTakesTheNewestTime) {
  const auto a =
      Parse(Fixture("carbon-aware-sdk-emissions-bylocation-quickstart.json"), {"CAISO_NORTH"});
  ASSERT_FALSE(a.error.has_value()) << *a.error;
  EXPECT_DOUBLE_EQ(a.ratings.at("CAISO_NORTH"), 439.07741416000005);  // 14:30, the newest
}

TEST(EmissionsAnswerTest, NewestTimeWinsWhateverTheOrder) {
  const auto a = Parse(R"([
    {"location": "IE", "time": "2022-07-19T14:00:00+00:00", "rating": 500},
    {"location": "IE", "time": "2022-07-19T15:00:00+01:00", "rating": 400},
    {"location": "IE", "time": "2022-07-19T14:30:00Z", "rating": 450}
  ])",
                       {"IE"});
  ASSERT_FALSE(a.error.has_value()) << *a.error;
  EXPECT_EQ(a.ratings.at("IE"), 450);  // 15:00+01:00 is 14:00Z
}

// The quickstart's /emissions/bylocations/best answers one object: not this endpoint's shape.
TEST(EmissionsAnswerTest, QuickstartBestObjectIsRefused) {
  const auto a =
      Parse(Fixture("carbon-aware-sdk-emissions-bylocations-best-quickstart.json"), {"AZPS"});
  ASSERT_TRUE(a.error.has_value());
  EXPECT_EQ(*a.error, "expected a JSON array of {location, time, rating}, got object");
}

// The forecast excerpt holds a literal "...".
TEST(EmissionsAnswerTest, ForecastExcerptIsInvalidJsonAndRefused) {
  const auto a = Parse(Fixture("carbon-aware-sdk-emissions-forecasts-current-docs.json"), {"IE"});
  ASSERT_TRUE(a.error.has_value());
  EXPECT_THAT(*a.error, StartsWith("the answer: not valid JSON at "));
}

TEST(EmissionsAnswerTest, MissingZonesAreListedOthersStillCount) {
  const auto a = Parse(R"([{"location": "eastus", "time": "2022-05-17T20:45:11Z", "rating": 70},
                           {"location": "northeurope", "time": "2022-05-17T20:45:11Z", "rating": 1}])",
                       {"eastus", "westus"});
  ASSERT_FALSE(a.error.has_value()) << *a.error;
  EXPECT_EQ(a.ratings.size(), 1U);
  EXPECT_EQ(a.ratings.at("eastus"), 70);
  EXPECT_EQ(a.missing.at("westus"), "no entry for location \"westus\"");
}

TEST(EmissionsAnswerTest, AnEmptyArrayMissesEveryZone) {
  const auto a = Parse("[]", {"eastus"});
  ASSERT_FALSE(a.error.has_value());
  EXPECT_TRUE(a.ratings.empty());
  EXPECT_EQ(a.missing.size(), 1U);
}

struct BadCase {
  const char* body;
  const char* error;
};

TEST(EmissionsAnswerTest, BadEntriesAreRefusedNamingWhereAndWhat) {
  const BadCase cases[] = {
      {R"({"location": "eastus"})",
       "expected a JSON array of {location, time, rating}, got object"},
      {R"("hello")", "expected a JSON array of {location, time, rating}, got string"},
      {R"([1])", "[0]: expected an object, got number"},
      {R"([{"time": "2022-05-17T20:45:11Z", "rating": 70}])", "[0].location: missing"},
      {R"([{"location": 5, "time": "2022-05-17T20:45:11Z", "rating": 70}])",
       "[0].location: expected a string, got number"},
      {R"([{"location": "", "time": "2022-05-17T20:45:11Z", "rating": 70}])",
       "[0].location: empty"},
      {R"([{"location": "a", "rating": 70}])", "[0].time: missing"},
      {R"([{"location": "a", "time": 1652820311, "rating": 70}])",
       "[0].time: expected a string, got number"},
      {R"([{"location": "a", "time": "yesterday", "rating": 70}])",
       "[0].time: \"yesterday\" is not an RFC 3339 time"},
      {R"([{"location": "a", "time": "2022-05-17T20:45:11Z"}])", "[0].rating: missing"},
      {R"([{"location": "a", "time": "2022-05-17T20:45:11Z", "rating": 1},
           {"location": "b", "time": "2022-05-17T20:45:11Z", "rating": 2},
           {"location": "c", "time": "2022-05-17T20:45:11Z", "rating": "70"}])",
       "[2].rating: expected a number, got \"70\""},
      {R"([{"location": "a", "time": "2022-05-17T20:45:11Z", "rating": null}])",
       "[0].rating: expected a number, got null"},
      {R"([{"location": "a", "time": "2022-05-17T20:45:11Z", "rating": -5}])",
       "[0].rating: -5.0 is out of range [0, 100000] gCO2e/kWh"},
      {R"([{"location": "a", "time": "2022-05-17T20:45:11Z", "rating": 100000.5}])",
       "[0].rating: 100000.5 is out of range [0, 100000] gCO2e/kWh"},
      {R"([{"location": "a", "time": "2022-05-17T20:45:11Z", "rating": 1e400}])",
       "the answer: not valid JSON: a number out of range"},
  };
  for (const auto& c : cases) {
    const auto a = Parse(c.body, {"a"});
    ASSERT_TRUE(a.error.has_value()) << c.body;
    EXPECT_EQ(*a.error, c.error) << c.body;
    EXPECT_TRUE(a.ratings.empty()) << c.body;
  }
}

TEST(EmissionsAnswerTest, TheBoundsOfARealisticAnswerAreKept) {
  const auto a = Parse(R"([{"location": "a", "time": "2022-05-17T20:45:11Z", "rating": 0},
                           {"location": "b", "time": "2022-05-17T20:45:11Z", "rating": 100000}])",
                       {"a", "b"});
  ASSERT_FALSE(a.error.has_value()) << *a.error;
  EXPECT_EQ(a.ratings.at("a"), 0);
  EXPECT_EQ(a.ratings.at("b"), 100000);
}

TEST(EmissionsAnswerTest, HugeBodiesAndTooManyEntriesAreRefused) {
  const std::string huge(kMaxEmissionsAnswerBytes + 1, ' ');
  const auto a = Parse(huge, {"a"});
  ASSERT_TRUE(a.error.has_value());
  EXPECT_EQ(*a.error, "the answer: 1048577 bytes, over the limit of 1048576");

  std::string many = "[";
  for (std::size_t i = 0; i <= kMaxEmissionsEntries; ++i) many += i == 0 ? "1" : ",1";
  many += "]";
  ASSERT_LE(many.size(), kMaxEmissionsAnswerBytes);
  const auto b = Parse(many, {"a"});
  ASSERT_TRUE(b.error.has_value());
  EXPECT_EQ(*b.error, "the answer has 10001 entries, over the limit of 10000");
}

// A rating nested 100,000 arrays deep (200 KB, under the size limit) crashed the controller: the
// answer parsed, then writing the rating into the error message recursed once per level and
// overflowed the stack. It is refused while parsing, and so is a rating at the limit's next level.
TEST(EmissionsAnswerTest, ARatingNestedTooDeepIsRefusedWhileParsing) {
  const auto answer = [](std::size_t depth) {
    return R"([{"location": "a", "time": "2022-05-17T20:45:11Z", "rating": )" +
           std::string(depth, '[') + std::string(depth, ']') + "}]";
  };
  const std::string deep = answer(100'000);
  ASSERT_LE(deep.size(), kMaxEmissionsAnswerBytes);
  const auto a = Parse(deep, {"a"});
  ASSERT_TRUE(a.error.has_value());
  EXPECT_EQ(*a.error, "the answer: nested deeper than 32 levels");
  EXPECT_TRUE(a.ratings.empty());

  // The answer's array and its entry are two levels: a rating of 30 arrays is at the limit.
  const auto at_limit = Parse(answer(kMaxEmissionsAnswerDepth - 2), {"a"});
  ASSERT_TRUE(at_limit.error.has_value());
  EXPECT_EQ(*at_limit.error, "[0].rating: expected a number, got an array");
  const auto over = Parse(answer(kMaxEmissionsAnswerDepth - 1), {"a"});
  ASSERT_TRUE(over.error.has_value());
  EXPECT_EQ(*over.error, "the answer: nested deeper than 32 levels");
}

// A string rating is shown cut short and escaped, whatever it holds.
TEST(EmissionsAnswerTest, ABadRatingIsShownShortAndEscaped) {
  const auto a = Parse(R"([{"location": "a", "time": "2022-05-17T20:45:11Z", "rating": ")" +
                           std::string(100'000, 'x') + R"("}])",
                       {"a"});
  ASSERT_TRUE(a.error.has_value());
  EXPECT_EQ(*a.error, "[0].rating: expected a number, got \"" + std::string(100, 'x') + "\"...");
  const auto b =
      Parse(R"([{"location": "a", "time": "2022-05-17T20:45:11Z", "rating": "7\n0"}])", {"a"});
  ASSERT_TRUE(b.error.has_value());
  EXPECT_EQ(*b.error, R"([0].rating: expected a number, got "7\x0a0")");
}

TEST(EmissionsAnswerTest, EmptyAndTruncatedBodiesAreNotJson) {
  for (const char* body : {"", "[", R"([{"location": "a")", "<html>500</html>"}) {
    const auto a = Parse(body, {"a"});
    ASSERT_TRUE(a.error.has_value()) << body;
    EXPECT_THAT(*a.error, StartsWith("the answer: not valid JSON at ")) << body;
  }
}

}  // namespace
}  // namespace eoc::controller::carbon
