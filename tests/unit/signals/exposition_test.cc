#include "signals/exposition.h"

#include <gtest/gtest.h>

#include <string>

#include "fixtures.h"

namespace eoc::signals {
namespace {

using testing::Fixture;

ParseResult Parse(const std::string& text, const ParseOptions& options = {}) {
  return ParseExposition(text, options);
}

std::string ErrorOf(const std::string& text, const ParseOptions& options = {}) {
  const ParseResult result = Parse(text, options);
  return result.ok() ? "(parsed)" : result.error().ToString();
}

TEST(ParseExposition, EmptyPageAndBlankLines) {
  EXPECT_TRUE(Parse("").ok());
  EXPECT_TRUE(Parse("\n \n\t\n").ok());
  EXPECT_EQ(Parse("\n\n").page().families.size(), 0U);
  EXPECT_TRUE(Parse("a 1\n  \t").ok());  // blanks after the last new-line
}

TEST(ParseExposition, KeepsOnlyTheFamiliesAskedFor) {
  const std::string text =
      "# HELP a A.\n# TYPE a gauge\na{x=\"1\"} 1\n"
      "# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 3\n"
      "b 2\nh_sum 4\nh_count 3\na{x=\"2\"} 5\n";
  const ParseResult result = Parse(text, {.keep = KeepFamilies({"a", "h"})});
  ASSERT_TRUE(result.ok()) << result.error().ToString();
  const Page& page = result.page();
  ASSERT_EQ(page.families.size(), 2U);
  EXPECT_EQ(page.families[0].name, "a");
  EXPECT_EQ(page.families[0].help, "A.");
  EXPECT_EQ(page.families[0].samples.size(), 2U);  // interleaved with other families
  EXPECT_EQ(page.families[1].name, "h");
  EXPECT_EQ(page.families[1].type, MetricType::kHistogram);
  EXPECT_EQ(page.families[1].samples.size(), 4U);
  EXPECT_EQ(page.Find("b"), nullptr);
  EXPECT_EQ(page.SampleCount(), 6U);
}

TEST(ParseExposition, FilterIsAskedOncePerFamily) {
  int asked = 0;
  const ParseResult result = Parse("a 1\na 2\nb 1\na 3\n", {.keep = [&](std::string_view name) {
                                     ++asked;
                                     return name == "a";
                                   }});
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(asked, 2);
  EXPECT_EQ(result.page().SampleCount(), 3U);
}

TEST(ParseExposition, SkippedFamiliesAreStillChecked) {
  const ParseOptions only_a{.keep = KeepFamilies({"a"})};
  EXPECT_EQ(ErrorOf("a 1\nb{x=\"1\",x=\"2\"} 1\n", only_a), "line 2: duplicate label name \"x\"");
  EXPECT_EQ(ErrorOf("a 1\n# TYPE s summary\ns{quantile=\"x\"} 1\n", only_a),
            "line 3: the quantile label \"x\" is not a float");
  EXPECT_EQ(ErrorOf("a 1\nb{x=y} 1\n", only_a),
            "line 2: label value not quoted, for the label \"x\"");
  EXPECT_EQ(ErrorOf("# HELP b one\n# HELP b two\na 1\n", only_a),
            "line 2: second # HELP for \"b\"");
}

TEST(ParseExposition, SuffixesWithoutTypeAreTheirOwnFamilies) {
  const Page page = Parse("h_bucket{le=\"1\"} 1\nh_sum 2\nh_count 1\n").TakePage();
  ASSERT_EQ(page.families.size(), 3U);
  EXPECT_EQ(page.families[0].name, "h_bucket");
  // ...and after a TYPE of another kind too.
  const Page typed = Parse("# TYPE g gauge\ng 1\ng_count 2\n").TakePage();
  EXPECT_EQ(typed.families.size(), 2U);
}

TEST(ParseExposition, TypeKeywordAnyCaseAndUntyped) {
  const Page page = Parse("# TYPE a COUNTER\na 1\n# TYPE b untyped\nb 1\n").TakePage();
  EXPECT_EQ(page.families[0].type, MetricType::kCounter);
  EXPECT_EQ(page.families[1].type, MetricType::kUntyped);
  EXPECT_EQ(ErrorOf("# TYPE a counter extra\n"),
            "line 1: text after the type in # TYPE: \" extra\"");
  EXPECT_EQ(MetricTypeName(MetricType::kGaugeHistogram), "gaugehistogram");
}

TEST(ParseExposition, CommentsAreFree) {
  EXPECT_TRUE(Parse("# anything \\t \xff goes\n#\n# HELP\n# TYPE\n# HELP a\n# EOF\na 1\n").ok());
}

TEST(ParseExposition, HelpAfterSamplesReachesTheFamily) {
  const Page page = Parse("a 1\n# HELP a late help\n").TakePage();
  EXPECT_EQ(page.families[0].help, "late help");
}

TEST(ParseExposition, ErrorsNameTheLine) {
  EXPECT_EQ(ErrorOf("a 1\n\nb{x=\"1\" 2\n"),
            "line 3: expected ',' or '}' after a label value, found \"2\"");
  EXPECT_EQ(ErrorOf("a 1\nb{x=\"1\"\n"), "line 2: label set not closed with '}'");
  EXPECT_EQ(ErrorOf("a{,} 1\n"), "line 1: ',' where a label name was expected");
  EXPECT_EQ(ErrorOf("a 1\nb 2"), "line 2: the page does not end with a new-line (cut short?)");
  EXPECT_EQ(ErrorOf("a1 1 2 3\n"), "line 1: text after the timestamp: \" 3\"");
  EXPECT_EQ(ErrorOf("{\"a\"} 1 2 3\n"), "line 1: text after the timestamp: \" 3\"");
  EXPECT_EQ(ErrorOf("a{x=\"1\"}\n"), "line 1: no value after the metric \"a\"");
}

TEST(ParseExposition, CrlfLineEndsFailSayingSo) {
  EXPECT_EQ(ErrorOf("a 1\r\n"),
            "line 1: the line ends with a carriage return: CRLF line ends are not the text format");
  EXPECT_TRUE(Parse("# a comment\r\n").ok());
}

TEST(ParseExposition, LimitsAreEnforcedAndNamed) {
  ParseLimits limits;
  limits.max_bytes = 10;
  EXPECT_EQ(ErrorOf("a 1\nb 2\nc 3\n", {.limits = limits}), "12 bytes, more than max_bytes (10)");
  limits = {};
  limits.max_line_bytes = 8;
  EXPECT_EQ(ErrorOf("a 1\nlonger_name 1\n", {.limits = limits}),
            "line 2: 13 bytes on the line, more than max_line_bytes (8)");
  limits = {};
  limits.max_labels_per_sample = 2;
  EXPECT_EQ(ErrorOf("a{x=\"1\",y=\"2\",z=\"3\"} 1\n", {.limits = limits}),
            "line 1: 3 labels on a sample, more than max_labels_per_sample (2)");
  limits = {};
  limits.max_label_name_bytes = 3;
  EXPECT_EQ(ErrorOf("a{abcd=\"1\"} 1\n", {.limits = limits}),
            "line 1: 4 bytes in a label name, more than max_label_name_bytes (3)");
  limits = {};
  limits.max_label_value_bytes = 3;
  EXPECT_EQ(ErrorOf("a{x=\"abcd\"} 1\n", {.limits = limits}),
            "line 1: 4 bytes in a label value, more than max_label_value_bytes (3)");
  limits = {};
  limits.max_families = 2;
  EXPECT_EQ(ErrorOf("a 1\nb 1\na 2\nc 1\n", {.limits = limits}),
            "line 4: 3 families, more than max_families (2)");
  limits = {};
  limits.max_kept_samples = 2;
  EXPECT_EQ(ErrorOf("a 1\nb 1\na 2\n", {.limits = limits}),
            "line 3: 3 samples kept, more than max_kept_samples (2)");
  // Samples of families not kept do not count.
  EXPECT_TRUE(Parse("a 1\nb 1\nb 2\nb 3\n", {.keep = KeepFamilies({"a"}), .limits = limits}).ok());
}

TEST(ParseExposition, RealPagesParseWhole) {
  for (const char* name :
       {"vllm-v0.5-opt125m-full.prom", "vllm-v1-0.10-glm45-excerpt.prom",
        "vllm-v1-dp-engine1-excerpt.prom", "vllm-v0-lora-multimodel-excerpt.prom",
        "vllm-v1-qwen3-sampled-excerpt.prom", "sglang-llama31-8b-docs-full.prom",
        "sglang-v0.5.1-qwen32b-excerpt.prom", "sglang-dp8-deepseek-r1-excerpt.prom",
        "sglang-pd-deepseek-r1-excerpt.prom", "trtllm-triton-backend-readme-excerpt.prom",
        "trtllm-serve-pr5785-excerpt.prom", "trtllm-serve-aibrix2004-excerpt.prom",
        "dcgm-kops-l4-full.prom", "kepler-0.7-rapl-sysfs-excerpt.prom"}) {
    const ParseResult result = Parse(Fixture(name));
    EXPECT_TRUE(result.ok()) << name << ": " << result.error().ToString();
    EXPECT_GT(result.page().SampleCount(), 0U) << name;
  }
}

TEST(ParseExposition, VllmFullPageFamilies) {
  const Page page = Parse(Fixture("vllm-v0.5-opt125m-full.prom")).TakePage();
  const Family* ttft = page.Find("vllm:time_to_first_token_seconds");
  ASSERT_NE(ttft, nullptr);
  EXPECT_EQ(ttft->type, MetricType::kHistogram);
  EXPECT_EQ(ttft->samples.back().name, "vllm:time_to_first_token_seconds_sum");
  const Family* info = page.Find("vllm:cache_config_info");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->samples[0].LabelValue("num_gpu_blocks"), "7281");
  EXPECT_EQ(info->samples[0].LabelValue("model_name"), std::nullopt);
}

}  // namespace
}  // namespace eoc::signals
