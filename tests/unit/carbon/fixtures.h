// The Carbon Aware SDK docs' answers in tests/unit/carbon/fixtures/, and one answer of our own
// (copies of
// ../shared/metrics-samples/carbon-aware-sdk-*.json; their sources are in fixtures/SOURCES.md).
//
//   std::string body = eoc::controller::carbon::testing::Fixture("carbon-aware-...-docs.json");
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "controller/carbon/sdk_address.h"

namespace eoc::controller::carbon::testing {

// An answer to /emissions/bylocations for eastus (70 g/kWh) and westus (64), as the SDK writes it.
inline constexpr const char* kTwoZones =
    R"([{"location":"eastus","time":"2022-05-17T20:45:11.5092741+00:00","rating":70},)"
    R"({"location":"westus","time":"2022-05-17T20:45:11.5092741+00:00","rating":64}])";

// The addresses the local fake SDKs listen on (127.0.0.1), allowed as --carbon-sdk-allowed-cidrs
// allows them: a loopback SDK is refused by default.
inline std::vector<Cidr> AllowLoopback() {
  std::string error;
  return ParseCidrList("127.0.0.1/32", &error).value();
}

inline std::string Fixture(const std::string& name) {
  std::ifstream in(std::string(EOC_CARBON_FIXTURES_DIR) + "/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << "no fixture " << name;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace eoc::controller::carbon::testing
