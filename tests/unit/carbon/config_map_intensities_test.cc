// A ConfigMap's data as zone intensities: what the informer keeps of it, and what a pool's table
// records from it (a value, or why there is none).
#include "controller/carbon/config_map_intensities.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kube/types.h"

namespace eoc::controller::carbon {
namespace {

using nlohmann::json;
using std::chrono::hours;
using std::chrono::minutes;
using ::testing::HasSubstr;

const signals::SteadyTime kT0 = signals::SteadyTime{} + hours(100);

json ConfigMap(const json& data) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", "grid"}, {"namespace", "prod"}, {"resourceVersion", "7"}}},
          {"data", data}};
}

TEST(IntensityConfigMapTest, KeepsEachZonesNumberAndWhyAValueIsNotOne) {
  const IntensityConfigMap cm = ToIntensityConfigMap(ConfigMap({{"eastus", "70"},
                                                                {"westus", " 412.5\n"},
                                                                {"north", "1e3"},
                                                                {"low", "-3"},
                                                                {"high", "100001"},
                                                                {"word", "dirty"},
                                                                {"empty", ""},
                                                                {"trail", "70 g"},
                                                                {"nan", "nan"},
                                                                {"long", std::string(65, '1')}}));
  EXPECT_EQ(cm.ns, "prod");
  EXPECT_EQ(cm.name, "grid");
  EXPECT_EQ(cm.values, (std::map<std::string, double, std::less<>>{
                           {"eastus", 70}, {"north", 1000}, {"westus", 412.5}}));
  ASSERT_EQ(cm.invalid.size(), 7U);
  EXPECT_EQ(cm.invalid.at("word"), "\"dirty\" is not a number (gCO2e/kWh)");
  EXPECT_EQ(cm.invalid.at("empty"), "\"\" is not a number (gCO2e/kWh)");
  EXPECT_EQ(cm.invalid.at("trail"), "\"70 g\" is not a number (gCO2e/kWh)");
  EXPECT_EQ(cm.invalid.at("low"), "-3 gCO2e/kWh is out of range [0, 100000]");
  EXPECT_EQ(cm.invalid.at("high"), "100001 gCO2e/kWh is out of range [0, 100000]");
  EXPECT_THAT(cm.invalid.at("nan"), HasSubstr("out of range"));
  EXPECT_EQ(cm.invalid.at("long"), "the value is longer than 64 characters");
  EXPECT_EQ(cm.ignored, 0U);
}

TEST(IntensityConfigMapTest, NoDataIsEmptyAndAWrongShapeIsRefusedByField) {
  json no_data = ConfigMap(nullptr);
  no_data.erase("data");
  EXPECT_TRUE(ToIntensityConfigMap(no_data).values.empty());
  EXPECT_TRUE(ToIntensityConfigMap(ConfigMap(nullptr)).values.empty());
  EXPECT_THROW(ToIntensityConfigMap(ConfigMap(json::array())), kube::MappingError);
  try {
    ToIntensityConfigMap(ConfigMap({{"eastus", 70}}));
    FAIL() << "a number where a string belongs was accepted";
  } catch (const kube::MappingError& e) {
    EXPECT_STREQ(e.what(), "data[\"eastus\"]: expected a string");
  }
  EXPECT_THROW(ToIntensityConfigMap(json{{"data", {{"eastus", "70"}}}}), kube::MappingError);
}

TEST(IntensityConfigMapTest, ReadsAtMostTheZoneLimitAndCountsTheRest) {
  json data = json::object();
  for (std::size_t i = 0; i < signals::kMaxCarbonZones + 3; ++i) {
    data["z" + std::to_string(100000 + i)] = "5";
  }
  const IntensityConfigMap cm = ToIntensityConfigMap(ConfigMap(data));
  EXPECT_EQ(cm.values.size(), signals::kMaxCarbonZones);
  EXPECT_EQ(cm.ignored, 3U);
  signals::ZoneIntensities table;
  const std::vector<std::string> zones{"z100000", "zz"};
  ReadIntensityConfigMap(&cm, "prod/grid", zones, kT0, table);
  EXPECT_EQ(table.Get("z100000", kT0), 5);
  ASSERT_EQ(table.Errors(kT0).size(), 1U);
  EXPECT_EQ(table.Errors(kT0)[0].error,
            "ConfigMap prod/grid: no key \"zz\" among the first 1024 (3 more were not read)");
}

TEST(ReadIntensityConfigMapTest, RecordsEachZonesValueOrWhyItHasNone) {
  const IntensityConfigMap cm =
      ToIntensityConfigMap(ConfigMap({{"eastus", "70"}, {"westus", "dirty"}}));
  signals::ZoneIntensities table(minutes(10));
  const std::vector<std::string> zones{"eastus", "westus", "north"};
  ReadIntensityConfigMap(&cm, "prod/grid", zones, kT0, table);
  EXPECT_EQ(table.Get("eastus", kT0), 70);
  const auto errors = table.Errors(kT0);
  ASSERT_EQ(errors.size(), 2U);
  EXPECT_EQ(errors[0].zone, "north");
  EXPECT_EQ(errors[0].error, "ConfigMap prod/grid: no key \"north\"");
  EXPECT_EQ(errors[1].zone, "westus");
  EXPECT_EQ(errors[1].error,
            "ConfigMap prod/grid: key \"westus\": \"dirty\" is not a number (gCO2e/kWh)");

  // Deleted: the last good value is used for the table's hold, counted from the last read.
  ReadIntensityConfigMap(nullptr, "prod/grid", zones, kT0 + minutes(5), table);
  EXPECT_EQ(table.Get("eastus", kT0 + minutes(9)), 70);
  EXPECT_EQ(table.Get("eastus", kT0 + minutes(11)), std::nullopt);
  EXPECT_THAT(table.Errors(kT0 + minutes(11))[0].error,
              HasSubstr("ConfigMap prod/grid: not found"));
}

TEST(ReadIntensityConfigMapTest, APresentValueIsAsNewAsTheRead) {
  const IntensityConfigMap cm = ToIntensityConfigMap(ConfigMap({{"eastus", "70"}}));
  signals::ZoneIntensities table(minutes(10));
  const std::vector<std::string> zones{"eastus"};
  ReadIntensityConfigMap(&cm, "prod/grid", zones, kT0, table);
  // Unchanged for hours: still good, since each reconcile reads it again.
  ReadIntensityConfigMap(&cm, "prod/grid", zones, kT0 + hours(5), table);
  EXPECT_EQ(table.Get("eastus", kT0 + hours(5) + minutes(9)), 70);
}

}  // namespace
}  // namespace eoc::controller::carbon
