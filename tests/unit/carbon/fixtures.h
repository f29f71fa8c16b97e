// The Carbon Aware SDK docs' answers in tests/unit/carbon/fixtures/ (copies of
// ../shared/metrics-samples/carbon-aware-sdk-*.json; their sources are in fixtures/SOURCES.md).
//
//   std::string body = eoc::controller::carbon::testing::Fixture("carbon-aware-...-docs.json");
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace eoc::controller::carbon::testing {

inline std::string Fixture(const std::string& name) {
  std::ifstream in(std::string(EOC_CARBON_FIXTURES_DIR) + "/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << "no fixture " << name;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace eoc::controller::carbon::testing
