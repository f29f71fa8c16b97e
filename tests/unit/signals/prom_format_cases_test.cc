// Every case of the Prometheus project's own text-format parser tests, as
// ../shared/metrics-samples/prom-format-cases.md gives them (prom_format_cases.inc, generated
// from it): prometheus/common expfmt/text_parse_test.go@d2417e2c (A) and prometheus/prometheus
// model/textparse/promparse_test.go@03bdf895 (B). Valid inputs parse (to the samples the
// upstream tests expect, checked below for each), invalid ones fail, and expfmt's errors name the
// same line. The UTF-8 validation outcome is the one taken (A-E41 and A-E42 valid).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "signals/exposition.h"

namespace eoc::signals {
namespace {

using namespace std::string_view_literals;

enum class Outcome {
  kValid,
  kInvalid,
  // Valid to textparse, whose input ends without a new-line; we follow expfmt there (A-E0), so
  // the input is valid once a final new-line is added, and fails without it.
  kValidWithFinalNewline,
};

struct FormatCase {
  std::string_view id;
  std::string_view title;
  std::string_view input;
  Outcome outcome;
  std::size_t error_line;  // expfmt's error cases: the line its message names
};

const std::vector<FormatCase>& Cases() {
  static const std::vector<FormatCase> cases = {
#include "prom_format_cases.inc"
  };
  return cases;
}

const FormatCase& Case(std::string_view id) {
  for (const FormatCase& c : Cases()) {
    if (c.id == id) return c;
  }
  ADD_FAILURE() << "no case " << id;
  static const FormatCase none{};
  return none;
}

Page Parsed(std::string_view id) {
  std::string input(Case(id).input);
  if (Case(id).outcome == Outcome::kValidWithFinalNewline) input.push_back('\n');
  ParseResult result = ParseExposition(input);
  EXPECT_TRUE(result.ok()) << id << ": " << (result.ok() ? "" : result.error().ToString());
  return result.TakePage();
}

std::vector<Label> Labels(std::initializer_list<std::pair<std::string, std::string>> pairs) {
  std::vector<Label> labels;
  for (const auto& [name, value] : pairs) labels.push_back(Label{name, value});
  return labels;
}

TEST(PromFormatCases, AllNinetyFourCasesHaveTheirOutcome) {
  ASSERT_EQ(Cases().size(), 94U);  // 18 + 48 (A), 2 + 17 + 9 (B)
  for (const FormatCase& c : Cases()) {
    SCOPED_TRACE(std::string(c.id) + ": " + std::string(c.title));
    const ParseResult as_given = ParseExposition(c.input);
    switch (c.outcome) {
      case Outcome::kValid:
        EXPECT_TRUE(as_given.ok()) << as_given.error().ToString();
        break;
      case Outcome::kInvalid:
        ASSERT_FALSE(as_given.ok());
        if (c.error_line != 0) {
          EXPECT_EQ(as_given.error().line, c.error_line) << as_given.error().ToString();
        }
        break;
      case Outcome::kValidWithFinalNewline: {
        ASSERT_FALSE(as_given.ok());
        EXPECT_NE(as_given.error().message.find("does not end with a new-line"), std::string::npos)
            << as_given.error().ToString();
        const ParseResult with_newline = ParseExposition(std::string(c.input) + "\n");
        EXPECT_TRUE(with_newline.ok()) << with_newline.error().ToString();
        break;
      }
    }
  }
}

TEST(PromFormatCases, AV1UntypedSamplesTimestampEmptyBraces) {
  const Page page = Parsed("A-V1");
  ASSERT_EQ(page.families.size(), 3U);  // the HELP of "line" has no sample: not kept
  EXPECT_EQ(page.families[0].name, "minimal_metric");
  EXPECT_EQ(page.families[0].samples[0].value, 1.234);
  EXPECT_EQ(page.families[1].samples[0].value, -3e3);
  EXPECT_EQ(page.families[1].samples[0].timestamp_ms, 103948);
  EXPECT_EQ(page.families[2].name, "no_labels");
  EXPECT_TRUE(page.families[2].samples[0].labels.empty());
  EXPECT_EQ(page.families[2].type, MetricType::kUntyped);
}

TEST(PromFormatCases, AV2EscapesWhitespaceSpecialValues) {
  const Page page = Parsed("A-V2");
  ASSERT_EQ(page.families.size(), 2U);
  const Family& name = page.families[0];
  EXPECT_EQ(name.type, MetricType::kCounter);
  EXPECT_EQ(name.help, "two-line\n doc  str\\ing");
  ASSERT_EQ(name.samples.size(), 2U);
  EXPECT_TRUE(std::isnan(name.samples[0].value));
  EXPECT_EQ(name.samples[1].labels,
            Labels({{"labelname", "val2"}, {"basename", "base\"v\\al\nue"}}));
  EXPECT_EQ(name.samples[1].timestamp_ms, 1234567890);
  const Family& name2 = page.families[1];
  EXPECT_EQ(name2.type, MetricType::kGauge);
  EXPECT_EQ(name2.help, "doc str\"ing 2");
  EXPECT_EQ(name2.samples[0].value, INFINITY);
  EXPECT_EQ(name2.samples[0].timestamp_ms, 54321);
  EXPECT_EQ(name2.samples[1].labels, Labels({{"labelname", "val1"}}));  // trailing comma
  EXPECT_EQ(name2.samples[1].value, -INFINITY);
}

TEST(PromFormatCases, AV3SummaryPartsJoinTheirFamilyAcrossOthers) {
  const Page page = Parsed("A-V3");
  const Family* summary = page.Find("my_summary");
  ASSERT_NE(summary, nullptr);
  EXPECT_EQ(summary->type, MetricType::kSummary);
  EXPECT_EQ(summary->help, "");  // "# HELP my_summary" without text is no HELP
  std::vector<std::string> names;
  names.reserve(summary->samples.size());
  for (const Sample& s : summary->samples) names.push_back(s.name);
  EXPECT_EQ(names, (std::vector<std::string>{"my_summary", "my_summary", "my_summary_count",
                                             "my_summary_sum", "my_summary_count", "my_summary_sum",
                                             "my_summary", "my_summary"}));
  EXPECT_EQ(summary->samples[3].value, 4711);
  EXPECT_EQ(summary->samples[3].timestamp_ms, 2);
  EXPECT_EQ(summary->samples[5].value, 8);  // written 08
  EXPECT_TRUE(std::isnan(summary->samples[7].value));
  EXPECT_EQ(summary->samples[7].LabelValue("quantile"), "-12.34");
  ASSERT_NE(page.Find("fake_sum"), nullptr);  // fake is no summary: its own family
  EXPECT_EQ(page.Find("decoy")->samples[0].timestamp_ms, -2);
  const Family* another = page.Find("another_summary");
  ASSERT_NE(another, nullptr);
  ASSERT_EQ(another->samples.size(), 2U);
  EXPECT_EQ(another->samples[1].LabelValue("quantile"), ".3");
  EXPECT_EQ(another->samples[1].value, -1.2);
  EXPECT_EQ(page.families.size(), 4U);
}

TEST(PromFormatCases, AV4ToAV17Histograms) {
  for (const std::string_view id :
       {"A-V4"sv, "A-V12"sv, "A-V13"sv, "A-V14"sv, "A-V15"sv, "A-V16"sv, "A-V17"sv}) {
    SCOPED_TRACE(id);
    const Page page = Parsed(id);
    ASSERT_EQ(page.families.size(), 1U);
    const Family& h = page.families[0];
    EXPECT_EQ(h.name, "request_duration_microseconds");
    EXPECT_EQ(h.help, "The response latency.");
    EXPECT_EQ(h.type, id == "A-V15" || id == "A-V16" || id == "A-V17" ? MetricType::kGaugeHistogram
                                                                      : MetricType::kHistogram);
    EXPECT_EQ(h.samples.size(), id == "A-V13" ? 6U : 7U);  // A-V13 has no +Inf bucket
    EXPECT_EQ(h.samples[0].name, "request_duration_microseconds_bucket");
    EXPECT_EQ(h.samples[0].LabelValue("le"), "100");
    EXPECT_EQ(h.samples[h.samples.size() - 2].value, 1.7560473e+06);
  }
  EXPECT_EQ(Parsed("A-V12").families[0].samples.back().value, 2693.9);
  EXPECT_EQ(Parsed("A-V14").families[0].samples[3].value, 1524.8);
}

TEST(PromFormatCases, AV5ToAV11QuotedNames) {
  Page page = Parsed("A-V5");
  ASSERT_EQ(page.families.size(), 1U);
  EXPECT_EQ(page.families[0].name, "my.noncompliant.metric");
  EXPECT_EQ(page.families[0].type, MetricType::kCounter);
  EXPECT_EQ(page.families[0].samples[0].labels, Labels({{"label.name", "value"}}));

  page = Parsed("A-V6");
  ASSERT_EQ(page.families.size(), 1U);
  EXPECT_EQ(page.families[0].samples[1].value, 0.23);
  EXPECT_EQ(page.families[0].samples[1].timestamp_ms, 1234567890);

  page = Parsed("A-V7");
  ASSERT_EQ(page.families.size(), 1U);
  EXPECT_EQ(page.families[0].help, "boring help");
  EXPECT_EQ(page.families[0].samples.size(), 2U);

  page = Parsed("A-V8");
  ASSERT_EQ(page.families.size(), 1U);
  EXPECT_EQ(page.families[0].help, "gauge\ndoc\nstr\"ing");
  EXPECT_EQ(page.families[0].samples[0].labels,
            Labels({{"name.1", "val with\nnew line"},
                    {"name*2", "val with \\backslash and \"quotes\""}}));
  EXPECT_EQ(page.families[0].samples[1].labels, Labels({{"name.1", "Björn"}, {"name*2", "佖佥"}}));
  EXPECT_EQ(page.families[0].samples[1].value, 3.14e+42);

  page = Parsed("A-V9");
  ASSERT_EQ(page.families.size(), 1U);
  EXPECT_EQ(page.families[0].name, "my\"noncompliant\nmetric\\");
  EXPECT_EQ(page.families[0].type, MetricType::kCounter);
  EXPECT_EQ(page.families[0].samples[0].labels, Labels({{"label\"name\n", "value"}}));

  page = Parsed("A-V10");
  ASSERT_EQ(page.families.size(), 1U);
  EXPECT_EQ(page.families[0].name, "my.noncompliant.metric");
  EXPECT_EQ(page.families[0].samples[0].labels, Labels({{"labelname", "value"}}));

  page = Parsed("A-V11");
  ASSERT_EQ(page.families.size(), 3U);
  EXPECT_EQ(page.families[2].name, "name.3");
}

TEST(PromFormatCases, AE41AndAE42ValidWithUtf8Names) {
  EXPECT_EQ(Parsed("A-E41").families[0].name, "metric.name");
  EXPECT_EQ(Parsed("A-E42").families[0].samples[0].labels,
            Labels({{"foo", "bar"}, {"dotted.label", "bla"}}));
}

TEST(PromFormatCases, BV1TestPromParseStream) {
  const Page page = Parsed("B-V1");
  const Family* gc = page.Find("go_gc_duration_seconds");
  ASSERT_NE(gc, nullptr);
  EXPECT_EQ(gc->type, MetricType::kSummary);  // "# \tTYPE" still a TYPE line
  EXPECT_EQ(gc->help, "A summary of the GC invocation durations.");
  ASSERT_EQ(gc->samples.size(), 11U);  // 5 + 5 with odd blanks + _count
  EXPECT_EQ(gc->samples[1].value, 7.424100000000001e-05);
  EXPECT_EQ(gc->samples[9].labels, Labels({{"quantile", "2.0"}, {"a", "b"}}));  // no comma
  EXPECT_EQ(gc->samples[10].name, "go_gc_duration_seconds_count");
  EXPECT_EQ(gc->samples[10].value, 99);
  EXPECT_EQ(page.Find("wind_speed")->samples[0].labels, Labels({{"A", "2"}, {"c", "3"}}));
  EXPECT_EQ(page.Find("some:aggregate:rate5m")->samples[0].value, 1);
  const Family* goroutines = page.Find("go_goroutines");
  ASSERT_NE(goroutines, nullptr);
  EXPECT_EQ(goroutines->type, MetricType::kGauge);
  EXPECT_EQ(goroutines->samples[0].timestamp_ms, 123123);
  EXPECT_NE(page.Find("_metric_starting_with_underscore"), nullptr);
  const Family* test = page.Find("testmetric");
  ASSERT_EQ(test->samples.size(), 2U);
  EXPECT_EQ(test->samples[1].labels, Labels({{"label", "\"bar\""}}));
  const Family* null_byte = page.Find("null_byte_metric");
  ASSERT_NE(null_byte, nullptr);
  EXPECT_EQ(null_byte->samples[0].labels, Labels({{"a", std::string("abc\0", 4)}}));
  EXPECT_EQ(page.Find("nohelp1"), nullptr);  // HELP lines without samples
}

TEST(PromFormatCases, BV2Utf8Names) {
  const Page page = Parsed("B-V2");
  const Family* gc = page.Find("go.gc_duration_seconds");
  ASSERT_NE(gc, nullptr);
  EXPECT_EQ(gc->type, MetricType::kSummary);
  EXPECT_EQ(gc->samples.size(), 10U);
  EXPECT_EQ(gc->samples[9].name, "go.gc_duration_seconds_count");
  ASSERT_EQ(page.families.size(), 2U);
  EXPECT_EQ(page.families[1].name,
            "Heizölrückstoßabdämpfung 10€ metric with \"interesting\" {character\nchoices}");
  EXPECT_EQ(page.families[1].samples[0].labels, Labels({{"strange©™\n'quoted' \"name\"", "6"}}));
  EXPECT_EQ(page.families[1].samples[0].value, 10);
}

TEST(PromFormatCases, BN1ToBN4NulInLabelValues) {
  EXPECT_EQ(Parsed("B-N2").families[0].samples[0].labels, Labels({{"b", std::string("\0ss", 3)}}));
  EXPECT_EQ(Parsed("B-N3").families[0].samples[0].labels, Labels({{"b", std::string(1, '\0')}}));
}

}  // namespace
}  // namespace eoc::signals
