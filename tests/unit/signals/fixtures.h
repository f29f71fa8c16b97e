// The real metrics pages of tests/unit/signals/fixtures/ (copies of ../shared/metrics-samples/,
// each starting with its "# source:" line), read by name.
//
//   std::string page = eoc::signals::testing::Fixture("vllm-v0.5-opt125m-full.prom");
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace eoc::signals::testing {

inline std::string Fixture(const std::string& name) {
  std::ifstream in(std::string(EOC_SIGNALS_FIXTURES_DIR) + "/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << "no fixture " << name;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace eoc::signals::testing
