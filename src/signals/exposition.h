// A parser of the Prometheus text exposition format 0.0.4, the /metrics page of vLLM, SGLang,
// TensorRT-LLM, dcgm-exporter and Kepler: families with their # HELP and # TYPE, samples with
// their labels, values and optional millisecond timestamps. It keeps only the families a caller
// asks for, so that a 1 MB page costs a few kept series, while the rest of the page is still
// checked; and it is bounded on hostile input (ParseLimits). Pure: no I/O.
//
//   ParseOptions options{.keep = KeepFamilies({"vllm:num_requests_running"})};
//   ParseResult result = ParseExposition(page_text, options);
//   if (!result.ok()) return result.error().ToString();  // "line 12: label value not quoted"
//   for (const Sample& s : result.page().Find("vllm:num_requests_running")->samples) {
//     std::optional<std::string_view> model = s.LabelValue("model_name");  // s.value: 3
//   }
//
// What it accepts, and where it follows which of Prometheus' two parsers (prometheus/common
// expfmt's TextParser and prometheus/prometheus textparse's PromParser; their cases are
// tests/unit/signals/prom_format_cases_test.cc):
// - A histogram's name_bucket/_sum/_count and a summary's name_sum/_count join the family of
//   `name` when a # TYPE line declared `name` so before them (expfmt); else each is a family of
//   its own, untyped. A family's samples may be spread among other families' (expfmt merges
//   them); samples stay as written, each with its own timestamp (no grouping by label set).
// - Quoted UTF-8 names ({"my.metric","label.name"="v"}), as both parsers with UTF-8 names.
// - A syntax error anywhere fails the whole page, as Prometheus rejects a page it cannot parse;
//   so do expfmt's semantic checks: a second HELP or TYPE for a family, a TYPE after its
//   samples, an unknown type, a `quantile` or `le` that is not a float, a negative histogram
//   count or bucket, a duplicate label name, the label name __name__.
// Where the two disagree:
// - A page must end with a new-line (expfmt; textparse accepts a last line without one). A page
//   cut short by a size limit or a dropped connection then fails instead of giving a wrong last
//   value ("123" cut to "12"). Blanks alone after the last new-line are fine (both).
// - Label pairs separated by blanks without a comma (`{a="1" b="2"}`) are accepted (textparse;
//   expfmt refuses them, in no case of its own). The rule: expfmt where its own cases decide,
//   else textparse, which is what a Prometheus server scrapes these engines with.
// - NUL bytes are accepted inside label values and HELP text (textparse's cases; expfmt takes
//   them as well), nowhere else.
// - CR: neither accepts CRLF line ends (CR is no blank to either); a sample line ending in CR
//   fails with a message that says so.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace eoc::signals {

// The # TYPE of a family; kUntyped when there is none.
enum class MetricType : std::uint8_t {
  kUntyped,
  kCounter,
  kGauge,
  kHistogram,
  kGaugeHistogram,
  kSummary
};

// "untyped", "counter", "gauge", "histogram", "gaugehistogram", "summary".
std::string_view MetricTypeName(MetricType type);

struct Label {
  std::string name;
  std::string value;
  bool operator==(const Label&) const = default;
};

// One sample line: its series name as written ("foo_bucket" in the histogram family "foo"),
// its labels in the order written, unescaped (a quoted metric name is not among them).
struct Sample {
  std::string name;
  std::vector<Label> labels;
  double value = 0;
  std::optional<std::int64_t> timestamp_ms;

  // The value of the label `label`; nullopt when the sample has none of that name.
  std::optional<std::string_view> LabelValue(std::string_view label) const;
};

struct Family {
  std::string name;
  MetricType type = MetricType::kUntyped;
  std::string help;
  std::vector<Sample> samples;
};

// The families kept from one page, in the order of their first kept sample; a family without a
// sample (a lone # HELP) is not among them.
struct Page {
  std::vector<Family> families;

  // The family of that name; nullptr when the page kept none.
  const Family* Find(std::string_view name) const;
  std::size_t SampleCount() const;
};

// Bounds on what a page may hold; past one, the page fails with an error that names it.
struct ParseLimits {
  std::size_t max_bytes = 16U << 20U;  // the whole page
  std::size_t max_line_bytes = 64U << 10U;
  std::size_t max_labels_per_sample = 128;
  std::size_t max_label_name_bytes = 1024;
  std::size_t max_label_value_bytes = 16U << 10U;
  std::size_t max_families = 100'000;      // distinct family names, kept or not
  std::size_t max_kept_samples = 200'000;  // samples of the kept families
};

// Whether to keep the family of that name; called once per family of the page.
using FamilyFilter = std::function<bool(std::string_view family)>;

// A filter that keeps exactly these families.
FamilyFilter KeepFamilies(std::vector<std::string> names);

struct ParseOptions {
  FamilyFilter keep;  // empty: keep every family
  ParseLimits limits;
};

// Why a page failed: the 1-based line (0 for the page as a whole) and what is wrong there.
struct ParseError {
  std::size_t line = 0;
  std::string message;

  // "line 12: label value not quoted", or the message alone for line 0.
  std::string ToString() const;
};

// A parsed page or why it failed.
class ParseResult {
 public:
  explicit ParseResult(Page page) : page_(std::move(page)) {}
  explicit ParseResult(ParseError error) : error_(std::move(error)) {}

  bool ok() const { return !error_.has_value(); }
  // The page; empty when !ok().
  const Page& page() const { return page_; }
  Page TakePage() { return std::move(page_); }
  // The error; only when !ok().
  const ParseError& error() const { return *error_; }

 private:
  Page page_;
  std::optional<ParseError> error_;
};

ParseResult ParseExposition(std::string_view text, const ParseOptions& options = {});

}  // namespace eoc::signals
