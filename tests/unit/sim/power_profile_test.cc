#include "sim/power_profile.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <sstream>
#include <streambuf>
#include <string>
#include <vector>

#include "shared_files.h"

namespace eoc::sim {
namespace {

using ::testing::AllOf;
using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Optional;

// shared/energy-profiles, or "" when it has no mlenergy.csv.
std::string EnergyProfilesDir() {
  const std::string csv = testing::SharedFile("energy-profiles/mlenergy.csv");
  return csv.empty() ? csv : std::filesystem::path(csv).parent_path().string();
}

// A profile whose measured step times are 0.01 s at batch 10, 0.0125 s at 20 and 0.02 s at 40.
PowerProfile Synthetic() {
  return {
      {{.batch = 40, .watts = 400, .tokens_per_second = 2000},
       {.batch = 10, .watts = 200, .tokens_per_second = 1000},
       {.batch = 20, .watts = 280, .tokens_per_second = 1500},
       {.batch = 20, .watts = 320, .tokens_per_second = 1700}},  // with the one above: 300, 1600
      50};
}

// Some columns out of the real file's order, a quoted one with commas and doubled quotes among
// them, and CRLF line ends, as a spreadsheet writes them.
constexpr const char* kHeader =
    "source,leaderboard_version,task,model,gpu,num_gpus,batch_size,avg_batch_size,"
    "throughput_tokens_per_s,derived_avg_power_per_gpu_w,converted\r\n";

std::string MlRow(const std::string& version, const std::string& task, const std::string& model,
                  const std::string& gpu, const std::string& num_gpus, const std::string& batch,
                  const std::string& throughput, const std::string& watts) {
  return "x@1," + version + "," + task + "," + model + "," + gpu + "," + num_gpus + ",0," + batch +
         "," + throughput + "," + watts + ",\"a=b/c, d=\"\"e\"\"\"\r\n";
}

const std::string kGpus =
    "gpu,tdp_w,idle_w,notes\n"
    "H100-80GB-HBM3,700,67.5,\"median, 7 readings\"\n"
    "A100-SXM4-40GB,400,,no idle reading included\n";

const ProfileKey kKey{
    .version = "v3.0", .task = "lm-arena-chat", .model = "org/m", .gpu = "H100-80GB-HBM3"};

PowerProfile Read(const std::string& mlenergy, const ProfileKey& key,
                  std::optional<double> idle = std::nullopt, const std::string& gpus = kGpus) {
  std::istringstream ml(mlenergy);
  std::istringstream g(gpus);
  return ReadPowerProfile(ml, g, key, idle, "inline");
}

// The message of the ProfileError that `read` throws; "" when it throws none.
template <typename F>
std::string ErrorOf(F read) {
  try {
    read();
  } catch (const ProfileError& e) {
    return e.what();
  }
  return "";
}

TEST(SplitCsvRecordTest, QuotedFieldsKeepCommasQuotesAndLineBreaks) {
  EXPECT_THAT(SplitCsvRecord("a,b,c"), Optional(ElementsAre("a", "b", "c")));
  EXPECT_THAT(SplitCsvRecord("a,\"x, y\",c"), Optional(ElementsAre("a", "x, y", "c")));
  EXPECT_THAT(SplitCsvRecord("\"say \"\"hi\"\", then go\",2"),
              Optional(ElementsAre("say \"hi\", then go", "2")));
  EXPECT_THAT(SplitCsvRecord("\"\"\"\",\"\""), Optional(ElementsAre("\"", "")));
  EXPECT_THAT(SplitCsvRecord("\"two\nlines\",z"), Optional(ElementsAre("two\nlines", "z")));
  EXPECT_THAT(SplitCsvRecord(",a,"), Optional(ElementsAre("", "a", "")));
  EXPECT_THAT(SplitCsvRecord(""), Optional(ElementsAre("")));
}

TEST(SplitCsvRecordTest, RefusesMalformedQuotes) {
  EXPECT_EQ(SplitCsvRecord("a,\"open"), std::nullopt);    // never closed
  EXPECT_EQ(SplitCsvRecord("a,\"x\"y,c"), std::nullopt);  // text after the closing quote
  EXPECT_EQ(SplitCsvRecord("a,b\"c,d"), std::nullopt);    // quote inside an unquoted field
  EXPECT_THAT(SplitCsvRecord("\"a\"\"\""), Optional(ElementsAre("a\"")));
}

TEST(PowerProfileTest, SortsAndAveragesEqualBatches) {
  const PowerProfile p = Synthetic();
  ASSERT_EQ(p.points().size(), 3U);
  EXPECT_DOUBLE_EQ(p.points()[0].batch, 10);
  EXPECT_DOUBLE_EQ(p.points()[1].batch, 20);
  EXPECT_DOUBLE_EQ(p.points()[1].watts, 300);
  EXPECT_DOUBLE_EQ(p.points()[1].tokens_per_second, 1600);
  EXPECT_DOUBLE_EQ(p.points()[2].batch, 40);
  EXPECT_DOUBLE_EQ(p.max_batch(), 40);
  EXPECT_DOUBLE_EQ(p.idle_watts(), 50);
}

TEST(PowerProfileTest, WattsInterpolatesFromIdle) {
  const PowerProfile p = Synthetic();
  EXPECT_DOUBLE_EQ(p.Watts(0), 50);
  EXPECT_DOUBLE_EQ(p.Watts(-3), 50);
  EXPECT_DOUBLE_EQ(p.Watts(5), 125);   // halfway from idle at 0 to 200 W at 10
  EXPECT_DOUBLE_EQ(p.Watts(10), 200);  // at the points
  EXPECT_DOUBLE_EQ(p.Watts(20), 300);
  EXPECT_DOUBLE_EQ(p.Watts(40), 400);
  EXPECT_DOUBLE_EQ(p.Watts(15), 250);  // between them
  EXPECT_DOUBLE_EQ(p.Watts(30), 350);
  EXPECT_DOUBLE_EQ(p.Watts(41), 400);  // above: flat
  EXPECT_DOUBLE_EQ(p.Watts(1000), 400);
}

TEST(PowerProfileTest, WattsNeverBelowIdle) {
  const PowerProfile p({{.batch = 10, .watts = 200, .tokens_per_second = 1000},
                        {.batch = 20, .watts = 400, .tokens_per_second = 1500}},
                       300);
  EXPECT_DOUBLE_EQ(p.Watts(5), 300);
  EXPECT_DOUBLE_EQ(p.Watts(10), 300);
  EXPECT_DOUBLE_EQ(p.Watts(15), 300);
  EXPECT_DOUBLE_EQ(p.Watts(17.5), 350);
}

TEST(PowerProfileTest, StepSecondsAtBetweenBelowAndAbove) {
  const PowerProfile p = Synthetic();
  // The first segment rises 0.00025 s per sequence, which at batch 1 gives 0.00775 s.
  EXPECT_DOUBLE_EQ(p.StepSeconds(1), 0.00775);
  EXPECT_DOUBLE_EQ(p.StepSeconds(0.5), 0.00775);
  EXPECT_DOUBLE_EQ(p.StepSeconds(0), 0.00775);
  EXPECT_DOUBLE_EQ(p.StepSeconds(5.5), 0.008875);  // halfway from the floor to batch 10
  EXPECT_DOUBLE_EQ(p.StepSeconds(10), 0.01);
  EXPECT_DOUBLE_EQ(p.StepSeconds(20), 0.0125);
  EXPECT_DOUBLE_EQ(p.StepSeconds(40), 0.02);
  EXPECT_DOUBLE_EQ(p.StepSeconds(15), 0.01125);
  EXPECT_DOUBLE_EQ(p.StepSeconds(30), 0.01625);
  EXPECT_DOUBLE_EQ(p.StepSeconds(60), 0.0275);  // the last segment's 0.000375 s per sequence on
}

TEST(PowerProfileTest, TokensPerSecondIsBatchOverStep) {
  const PowerProfile p = Synthetic();
  EXPECT_DOUBLE_EQ(p.TokensPerSecond(0), 0);
  EXPECT_DOUBLE_EQ(p.TokensPerSecond(-1), 0);
  EXPECT_DOUBLE_EQ(p.TokensPerSecond(10), 1000);  // the measured throughputs
  EXPECT_DOUBLE_EQ(p.TokensPerSecond(20), 1600);
  EXPECT_DOUBLE_EQ(p.TokensPerSecond(40), 2000);
  EXPECT_DOUBLE_EQ(p.TokensPerSecond(1), 1 / 0.00775);
  for (double b = 0.25; b < 100; b += 0.25) {
    EXPECT_DOUBLE_EQ(p.TokensPerSecond(b), b / p.StepSeconds(b)) << b;
  }
}

TEST(PowerProfileTest, FloorIsAtLeastFortyPercentOfTheFirstStep) {
  // Steps 0.01 s at 10 and 0.02 s at 11: the line reaches batch 1 below zero.
  const PowerProfile p({{.batch = 10, .watts = 200, .tokens_per_second = 1000},
                        {.batch = 11, .watts = 210, .tokens_per_second = 550}},
                       50);
  EXPECT_DOUBLE_EQ(p.StepSeconds(1), 0.004);
  EXPECT_DOUBLE_EQ(p.StepSeconds(5.5), 0.007);
}

TEST(PowerProfileTest, OnePointIsFlatBelowAndProportionalAbove) {
  const PowerProfile p({{.batch = 8, .watts = 400, .tokens_per_second = 800}}, 60);
  EXPECT_DOUBLE_EQ(p.StepSeconds(1), 0.01);
  EXPECT_DOUBLE_EQ(p.StepSeconds(8), 0.01);
  EXPECT_DOUBLE_EQ(p.StepSeconds(16), 0.02);
  EXPECT_DOUBLE_EQ(p.TokensPerSecond(16), 800);
  EXPECT_DOUBLE_EQ(p.TokensPerSecond(1), 100);
  EXPECT_DOUBLE_EQ(p.Watts(4), 230);
}

TEST(PowerProfileTest, StepSecondsNeverDecreases) {
  // Measured steps 0.02 s at 10, 0.015 s at 20 (noise), 0.03 s at 30.
  const PowerProfile p({{.batch = 10, .watts = 200, .tokens_per_second = 500},
                        {.batch = 20, .watts = 250, .tokens_per_second = 20 / 0.015},
                        {.batch = 30, .watts = 300, .tokens_per_second = 1000}},
                       50);
  EXPECT_DOUBLE_EQ(p.StepSeconds(15), 0.02);
  EXPECT_DOUBLE_EQ(p.StepSeconds(20), 0.02);
  EXPECT_DOUBLE_EQ(p.StepSeconds(25), 0.025);
  EXPECT_DOUBLE_EQ(p.points()[1].tokens_per_second, 20 / 0.015);  // the data kept as measured
  for (const PowerProfile& q : {p, Synthetic()}) {
    double previous = 0;
    for (double b = -1; b < 120; b += 0.125) {
      const double step = q.StepSeconds(b);
      EXPECT_GE(step, previous) << b;
      EXPECT_GT(step, 0) << b;
      previous = step;
    }
  }
}

TEST(PowerProfileTest, RefusesBadPoints) {
  EXPECT_THAT(ErrorOf([] { PowerProfile({}, 50); }), HasSubstr("at least one"));
  EXPECT_THAT(ErrorOf([] { PowerProfile({{.batch = 0, .watts = 1, .tokens_per_second = 1}}, 50); }),
              HasSubstr("> 0"));
  EXPECT_THAT(ErrorOf([] { PowerProfile({{.batch = 1, .watts = 1, .tokens_per_second = 1}}, -1); }),
              HasSubstr("idle watts"));
}

TEST(ReadPowerProfileTest, ReadsTheKeysRowsAndTheGpusIdle) {
  const std::string ml =
      std::string(kHeader) +
      MlRow("v3.0", "lm-arena-chat", "org/m", "H100-80GB-HBM3", "1", "16", "1600", "320") +
      MlRow("v3.0", "lm-arena-chat", "org/m", "H100-80GB-HBM3", "1", "8", "1000", "300") +
      MlRow("v3.0", "lm-arena-chat", "org/m", "H100-80GB-HBM3", "2", "8", "1500", "250") +
      MlRow("v3.0", "gpqa", "org/m", "H100-80GB-HBM3", "1", "8", "900", "290") +
      MlRow("v2.0", "lm-arena-chat", "org/m", "H100-80GB-HBM3", "1", "8", "900", "290") +
      MlRow("v3.0", "lm-arena-chat", "org/other", "H100-80GB-HBM3", "1", "8", "bad", "");
  const PowerProfile p = Read(ml, kKey);
  ASSERT_EQ(p.points().size(), 2U);
  EXPECT_DOUBLE_EQ(p.points()[0].batch, 8);
  EXPECT_DOUBLE_EQ(p.points()[0].watts, 300);
  EXPECT_DOUBLE_EQ(p.points()[1].tokens_per_second, 1600);
  EXPECT_DOUBLE_EQ(p.idle_watts(), 67.5);

  ProfileKey two = kKey;
  two.num_gpus = 2;
  const PowerProfile q = Read(ml, two);
  ASSERT_EQ(q.points().size(), 1U);
  EXPECT_DOUBLE_EQ(q.points()[0].watts, 500);  // 250 W per GPU x 2
  EXPECT_DOUBLE_EQ(q.idle_watts(), 135);

  const PowerProfile r = Read(ml, kKey, 40.0);  // the override replaces the file's reading
  EXPECT_DOUBLE_EQ(r.idle_watts(), 40);
}

TEST(ReadPowerProfileTest, NamesMissingColumns) {
  const std::string ml = "leaderboard_version,task,model,gpu,num_gpus,avg_batch_size\n";
  EXPECT_THAT(ErrorOf([&] { Read(ml, kKey); }),
              AllOf(HasSubstr("inline: mlenergy line 1"),
                    HasSubstr("derived_avg_power_per_gpu_w, throughput_tokens_per_s")));
  const std::string row =
      MlRow("v3.0", "lm-arena-chat", "org/m", "H100-80GB-HBM3", "1", "8", "1000", "300");
  EXPECT_THAT(ErrorOf([&] { Read(kHeader + row, kKey, std::nullopt, "gpu,tdp_w\n"); }),
              AllOf(HasSubstr("inline: gpus line 1"), HasSubstr("idle_w")));
  EXPECT_THAT(ErrorOf([&] { Read("", kKey); }), HasSubstr("no header"));
}

TEST(ReadPowerProfileTest, NamesTheLineAndColumnOfABadValue) {
  const std::string good =
      MlRow("v3.0", "lm-arena-chat", "org/m", "H100-80GB-HBM3", "1", "8", "1000", "300");
  EXPECT_THAT(ErrorOf([&] {
                Read(kHeader + good +
                         MlRow("v3.0", "lm-arena-chat", "org/m", "H100-80GB-HBM3", "1", "16",
                               "1.2.3", "300"),
                     kKey);
              }),
              AllOf(HasSubstr("mlenergy line 3"), HasSubstr("throughput_tokens_per_s"),
                    HasSubstr("not a number"), HasSubstr("\"1.2.3\"")));
  EXPECT_THAT(
      ErrorOf([&] {
        Read(kHeader + std::string("\n") + good +
                 MlRow("v3.0", "lm-arena-chat", "org/m", "H100-80GB-HBM3", "1", "16", "1000", ""),
             kKey);
      }),
      AllOf(HasSubstr("mlenergy line 4"), HasSubstr("derived_avg_power_per_gpu_w is blank")));
  EXPECT_THAT(ErrorOf([&] {
                Read(kHeader + MlRow("v3.0", "lm-arena-chat", "org/m", "H100-80GB-HBM3", "1", "-8",
                                     "1000", "300"),
                     kKey);
              }),
              AllOf(HasSubstr("line 2"), HasSubstr("avg_batch_size must be > 0")));
  EXPECT_THAT(ErrorOf([&] {
                Read(kHeader + MlRow("v3.0", "lm-arena-chat", "org/m", "H100-80GB-HBM3", "one", "8",
                                     "1000", "300"),
                     kKey);
              }),
              AllOf(HasSubstr("line 2"), HasSubstr("num_gpus")));
  EXPECT_THAT(ErrorOf([&] { Read(kHeader + std::string("a,b\n"), kKey); }),
              AllOf(HasSubstr("line 2"), HasSubstr("2 fields, the header has 11")));
  EXPECT_THAT(ErrorOf([&] { Read(kHeader + std::string("x,\"open\n\n"), kKey); }),
              AllOf(HasSubstr("line 2"), HasSubstr("never closed")));
  EXPECT_THAT(ErrorOf([&] { Read(kHeader + std::string("x,a\"\"b\n"), kKey); }),
              AllOf(HasSubstr("line 2"), HasSubstr("malformed quotes")));
}

TEST(ReadPowerProfileTest, ListsTheKeysThatExist) {
  const std::string ml =
      std::string(kHeader) +
      MlRow("v3.0", "gpqa", "org/m", "H100-80GB-HBM3", "1", "8", "1000", "300") +
      MlRow("v3.0", "gpqa", "org/m", "H100-80GB-HBM3", "1", "16", "1500", "310") +
      MlRow("v3.0", "lm-arena-chat", "org/m", "B200", "2", "8", "1000", "300") +
      MlRow("v3.0", "lm-arena-chat", "org/n", "H100-80GB-HBM3", "1", "8", "1000", "300");
  EXPECT_THAT(ErrorOf([&] { Read(ml, kKey); }),
              AllOf(HasSubstr("no rows for v3.0 \"lm-arena-chat\" \"org/m\" on 1 x H100-80GB-HBM3"),
                    HasSubstr("v3.0 \"gpqa\" on 1 x H100-80GB-HBM3 (2 rows)"),
                    HasSubstr("v3.0 \"lm-arena-chat\" on 2 x B200 (1 row)")));
  ProfileKey unknown = kKey;
  unknown.model = "org/x";
  EXPECT_THAT(ErrorOf([&] { Read(ml, unknown); }),
              AllOf(HasSubstr("no row names that model"), HasSubstr("org/m; org/n")));
  ProfileKey v1 = unknown;
  v1.version = "v1.0";
  EXPECT_THAT(ErrorOf([&] { Read(ml, v1); }),
              AllOf(HasSubstr("no v1.0 rows at all"), HasSubstr("versions there: v3.0")));
}

TEST(ReadPowerProfileTest, AGpuWithoutIdleNeedsTheOverride) {
  ProfileKey a100 = kKey;
  a100.gpu = "A100-SXM4-40GB";
  const std::string ml = std::string(kHeader) + MlRow("v3.0", "lm-arena-chat", "org/m",
                                                      "A100-SXM4-40GB", "1", "8", "1000", "300");
  EXPECT_THAT(ErrorOf([&] { Read(ml, a100); }),
              AllOf(HasSubstr("gpus line 3"), HasSubstr("A100-SXM4-40GB"),
                    HasSubstr("no idle_w reading"), HasSubstr("must be given")));
  EXPECT_DOUBLE_EQ(Read(ml, a100, 55.0).idle_watts(), 55);

  ProfileKey b200 = kKey;
  b200.gpu = "B200";
  const std::string b200_ml = std::string(kHeader) + MlRow("v3.0", "lm-arena-chat", "org/m", "B200",
                                                           "1", "8", "1000", "300");
  EXPECT_THAT(ErrorOf([&] { Read(b200_ml, b200); }),
              AllOf(HasSubstr("no row for GPU \"B200\""), HasSubstr("must be given")));
  EXPECT_THAT(ErrorOf([&] { Read(b200_ml, b200, -5.0); }), HasSubstr("finite and >= 0"));
}

// An endless stream of 'x': a stream with no end must still be refused, not read forever.
class EndlessBuffer : public std::streambuf {
 protected:
  int_type underflow() override {
    setg(buffer_.data(), buffer_.data(), buffer_.data() + buffer_.size());
    return traits_type::to_int_type('x');
  }

 private:
  std::string buffer_ = std::string(1 << 16, 'x');
};

TEST(ReadPowerProfileTest, RefusesOversizedInput) {
  EXPECT_THAT(ErrorOf([] {
                EndlessBuffer endless;
                std::istream ml(&endless);
                std::istringstream gpus(kGpus);
                ReadPowerProfile(ml, gpus, kKey, std::nullopt, "endless");
              }),
              HasSubstr("endless: mlenergy: larger than 64 MiB"));
  EXPECT_THAT(ErrorOf([] { Read(kHeader + std::string((1 << 20) + 1, 'x') + "\n", kKey); }),
              AllOf(HasSubstr("line 2"), HasSubstr("longer than 1 MiB")));
}

TEST(LoadPowerProfileTest, NamesAFileItCannotRead) {
  EXPECT_THAT(
      ErrorOf([] { LoadPowerProfile("/nonexistent/ml.csv", "/nonexistent/g.csv", kKey, {}); }),
      HasSubstr("/nonexistent/ml.csv"));
}

TEST(LoadPowerProfileTest, RealH100LlamaV3) {
  const std::string dir = EnergyProfilesDir();
  if (dir.empty()) GTEST_SKIP() << testing::NoSharedFile("energy-profiles/mlenergy.csv");
  const PowerProfile p = LoadPowerProfile(dir + "/mlenergy.csv", dir + "/gpus.csv",
                                          {.version = "v3.0",
                                           .task = "lm-arena-chat",
                                           .model = "meta-llama/Llama-3.1-8B-Instruct",
                                           .gpu = "H100-80GB-HBM3"},
                                          std::nullopt);
  EXPECT_EQ(p.points().size(), 11U);
  EXPECT_DOUBLE_EQ(p.idle_watts(), 67.316);
  EXPECT_THAT(p.Watts(8), DoubleNear(486.4, 1));
  EXPECT_THAT(p.Watts(192), DoubleNear(688, 2));
  EXPECT_DOUBLE_EQ(p.Watts(0), 67.316);
  EXPECT_THAT(p.Watts(4), AllOf(::testing::Gt(67.316), ::testing::Lt(486.4)));
  EXPECT_THAT(p.TokensPerSecond(p.points()[0].batch), DoubleNear(1069.57, 0.01));
  double previous = 0;
  for (double b = 0; b <= 1.5 * p.max_batch(); b += 1) {
    EXPECT_GE(p.StepSeconds(b), previous) << b;
    previous = p.StepSeconds(b);
  }
}

TEST(LoadPowerProfileTest, RealA100LlamaV2NeedsAnIdleOverride) {
  const std::string dir = EnergyProfilesDir();
  if (dir.empty()) GTEST_SKIP() << testing::NoSharedFile("energy-profiles/mlenergy.csv");
  const ProfileKey key{.version = "v2.0",
                       .task = "chat (ShareGPT)",
                       .model = "meta-llama/Meta-Llama-3.1-8B-Instruct",
                       .gpu = "A100-SXM4-40GB"};
  EXPECT_THAT(ErrorOf([&] {
                LoadPowerProfile(dir + "/mlenergy.csv", dir + "/gpus.csv", key, std::nullopt);
              }),
              AllOf(HasSubstr("gpus.csv line "), HasSubstr("no idle_w reading")));
  const PowerProfile p = LoadPowerProfile(dir + "/mlenergy.csv", dir + "/gpus.csv", key, 50.0);
  EXPECT_EQ(p.points().size(), 6U);
  EXPECT_DOUBLE_EQ(p.idle_watts(), 50);
  EXPECT_THAT(p.Watts(p.max_batch()), DoubleNear(195.2, 0.1));
}

}  // namespace
}  // namespace eoc::sim
