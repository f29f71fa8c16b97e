// Prometheus' own checker for tests: `promtool check metrics` on a text exposition, which parses
// it and lints it (names, units, _total on counters).
//
//   const std::string promtool = eoc::testing::FindPromtool();
//   if (promtool.empty()) GTEST_SKIP() << "promtool is not on PATH";
//   auto [status, output] = eoc::testing::PromtoolCheckMetrics(promtool, text);
//   EXPECT_EQ(status, 0) << output;   // 1: not parseable; 3: parsed, with lint findings
#pragma once

#include <string>
#include <utility>

namespace eoc::testing {

// promtool's path on $PATH, or "".
std::string FindPromtool();

// Runs `promtool check metrics` with `text` on its stdin: its exit status (-1 when it could not be
// run) and what it printed.
std::pair<int, std::string> PromtoolCheckMetrics(const std::string& promtool,
                                                 const std::string& text);

}  // namespace eoc::testing
