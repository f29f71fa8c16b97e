#include "telemetry/logging.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <chrono>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/rfc3339.h"

namespace eoc::telemetry {
namespace {

using ::testing::HasSubstr;

// Captures a logger's lines; restores the process-wide level the test may change.
class LoggingTest : public ::testing::Test {
 protected:
  ~LoggingTest() override { SetLogLevel(LogLevel::kInfo); }

  Logger MakeLogger(std::string name) {
    return {std::move(name), std::make_shared<spdlog::sinks::ostream_sink_mt>(out_)};
  }

  std::vector<std::string> Lines() const {
    std::vector<std::string> lines;
    std::istringstream in(out_.str());
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }

  // The only line written so far, parsed; fails the test when there is not exactly one.
  nlohmann::json OnlyLine() const {
    const auto lines = Lines();
    if (lines.size() != 1) {
      ADD_FAILURE() << "want one line, got:\n" << out_.str();
      return {};
    }
    return nlohmann::json::parse(lines[0]);
  }

  std::ostringstream out_;
};

TEST_F(LoggingTest, WritesOneJsonObjectWithTimeLevelLoggerMessageAndFields) {
  MakeLogger("reflector")
      .Info("relisted", {{"resource", "pods"},
                         {"items", 200},
                         {"ratio", 0.25},
                         {"synced", true},
                         {"generation", std::numeric_limits<std::uint64_t>::max()},
                         {"delta", -3}});

  ASSERT_EQ(out_.str().back(), '\n');
  const nlohmann::json line = OnlyLine();
  EXPECT_EQ(line["level"], "info");
  EXPECT_EQ(line["logger"], "reflector");
  EXPECT_EQ(line["msg"], "relisted");
  EXPECT_EQ(line["resource"], "pods");
  EXPECT_EQ(line["items"], 200);
  EXPECT_EQ(line["ratio"], 0.25);
  EXPECT_EQ(line["synced"], true);
  EXPECT_EQ(line["generation"].get<std::uint64_t>(), std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(line["delta"], -3);
  EXPECT_EQ(out_.str().substr(0, 7), R"({"ts":")");  // the line's own keys first, then fields

  const std::string ts = line["ts"];
  EXPECT_TRUE(std::regex_match(ts, std::regex(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)")))
      << ts;
  const auto when = ParseRfc3339(ts);
  ASSERT_TRUE(when.has_value()) << ts;
  // UTC, not local time: within an hour of now (this asserts the time zone, not a speed).
  EXPECT_LT(std::chrono::abs(std::chrono::system_clock::now() - *when), std::chrono::hours(1));
}

TEST_F(LoggingTest, EscapesMessageKeysAndValues) {
  const std::string nasty = std::string("say \"hi\"\\\n\ttab \x01 bad utf8 \xff end");
  MakeLogger("web \"front\"").Error(nasty, {{"key \"q\"\n", nasty}, {"err", "line1\nline2"}});

  ASSERT_EQ(Lines().size(), 1U) << "a newline inside a value must not split the line";
  const nlohmann::json line = OnlyLine();
  EXPECT_EQ(line["logger"], "web \"front\"");
  EXPECT_EQ(line["level"], "error");
  const std::string want = "say \"hi\"\\\n\ttab \x01 bad utf8 \uFFFD end";
  EXPECT_EQ(line["msg"], want);
  EXPECT_EQ(line["key \"q\"\n"], want);
  EXPECT_EQ(line["err"], "line1\nline2");
}

TEST_F(LoggingTest, NonFiniteNumbersAreWrittenAsStrings) {
  MakeLogger("energy").Warn("odd reading", {{"watts", std::numeric_limits<double>::quiet_NaN()},
                                            {"slope", std::numeric_limits<double>::infinity()},
                                            {"floor", -std::numeric_limits<float>::infinity()}});
  const nlohmann::json line = OnlyLine();
  EXPECT_EQ(line["level"], "warn");
  EXPECT_EQ(line["watts"], "NaN");
  EXPECT_EQ(line["slope"], "+Inf");
  EXPECT_EQ(line["floor"], "-Inf");
}

TEST_F(LoggingTest, DropsLinesBelowTheProcessLevel) {
  const Logger log = MakeLogger("scaler");
  log.Debug("hidden at the default level");
  EXPECT_EQ(out_.str(), "");
  EXPECT_FALSE(log.Enabled(LogLevel::kDebug));

  SetLogLevel(LogLevel::kWarn);
  log.Info("hidden");
  log.Warn("shown");
  EXPECT_EQ(OnlyLine()["msg"], "shown");

  out_.str("");
  SetLogLevel(LogLevel::kDebug);
  EXPECT_TRUE(log.Enabled(LogLevel::kDebug));
  log.Debug("now shown");
  EXPECT_EQ(OnlyLine()["level"], "debug");
}

TEST_F(LoggingTest, LinesFromManyThreadsStayWhole) {
  const Logger log = MakeLogger("pick");
  constexpr int kThreads = 4;
  constexpr int kLinesEach = 200;
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&log, t] {
      for (int i = 0; i < kLinesEach; ++i) {
        log.Info("picked", {{"thread", t}, {"i", i}, {"pad", std::string(100, 'x')}});
      }
    });
  }
  for (auto& thread : threads) thread.join();

  const auto lines = Lines();
  ASSERT_EQ(lines.size(), static_cast<std::size_t>(kThreads * kLinesEach));
  for (const auto& text : lines) {
    const auto line = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    ASSERT_FALSE(line.is_discarded()) << text;
    EXPECT_EQ(line["msg"], "picked");
  }
}

TEST(ParseLogLevelTest, AcceptsTheFourLevels) {
  EXPECT_EQ(ParseLogLevel("debug"), LogLevel::kDebug);
  EXPECT_EQ(ParseLogLevel("info"), LogLevel::kInfo);
  EXPECT_EQ(ParseLogLevel("warn"), LogLevel::kWarn);
  EXPECT_EQ(ParseLogLevel("error"), LogLevel::kError);
  for (const LogLevel level :
       {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError}) {
    EXPECT_EQ(ParseLogLevel(LogLevelName(level)), level);
  }
}

TEST(ParseLogLevelTest, RejectsAnythingElseNamingTheValue) {
  for (const std::string_view bad : {"verbose", "INFO", "warning", ""}) {
    try {
      (void)ParseLogLevel(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const std::invalid_argument& e) {
      EXPECT_THAT(e.what(), HasSubstr("\"" + std::string(bad) + "\""));
      EXPECT_THAT(e.what(), HasSubstr("debug, info, warn, error"));
    }
  }
}

}  // namespace
}  // namespace eoc::telemetry
