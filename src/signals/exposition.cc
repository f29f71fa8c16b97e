#include "signals/exposition.h"

#include <algorithm>
#include <array>
#include <utility>

#include "common/enum_name.h"
#include "common/text.h"
#include "signals/exposition_tokens.h"

namespace eoc::signals {
namespace {

constexpr std::array<EnumName<MetricType>, 7> kTypeNames{{
    {MetricType::kUntyped, "untyped"},
    {MetricType::kCounter, "counter"},
    {MetricType::kGauge, "gauge"},
    {MetricType::kHistogram, "histogram"},
    {MetricType::kGaugeHistogram, "gaugehistogram"},
    {MetricType::kGaugeHistogram, "gauge_histogram"},  // expfmt takes both spellings
    {MetricType::kSummary, "summary"},
}};

bool IsHistogram(MetricType type) {
  return type == MetricType::kHistogram || type == MetricType::kGaugeHistogram;
}

std::size_t SkipBlanks(std::string_view line, std::size_t pos) {
  while (pos < line.size() && IsBlank(line[pos])) ++pos;
  return pos;
}

std::string Exceeds(std::size_t size, std::string_view what, std::string_view limit,
                    std::size_t max) {
  return std::to_string(size) + " " + std::string(what) + ", more than " + std::string(limit) +
         " (" + std::to_string(max) + ")";
}

const char* QuotedErrorText(QuotedError error) {
  switch (error) {
    case QuotedError::kUnterminated:
      return "not terminated on its line (a new-line in it must be written \\n)";
    case QuotedError::kBadEscape:
      return R"(has an invalid escape sequence (only \\, \" and \n))";
    case QuotedError::kBadUtf8:
      return "is not valid UTF-8";
    case QuotedError::kNone:
      break;
  }
  return "";
}

// A label as the line holds it: views of the line, escapes not yet replaced.
struct RawLabel {
  std::string_view name;
  std::string_view value;
  bool name_escaped = false;
  bool value_escaped = false;
};

class Parser {
 public:
  explicit Parser(const ParseOptions& options) : options_(options), limits_(options.limits) {}

  ParseResult Run(std::string_view text);

 private:
  struct FamilyState {
    MetricType type = MetricType::kUntyped;
    bool has_help = false;
    bool has_type = false;
    bool has_samples = false;
    bool keep = false;
    std::int64_t kept_index = -1;  // in page_.families
    std::string help;              // kept families only
  };

  bool Line(std::string_view line);
  bool Comment(std::string_view line, std::size_t pos);
  bool SampleLine(std::string_view line, std::size_t pos);
  bool LabelSet(std::string_view line, std::size_t& pos);
  bool CheckLabels(MetricType type, bool is_base, bool is_bucket);
  FamilyState* State(std::string_view name);  // found or added; nullptr past max_families
  Family& Kept(FamilyState& state, std::string_view name);
  bool Fail(std::string message) {
    error_ = std::move(message);
    return false;
  }

  const ParseOptions& options_;
  const ParseLimits& limits_;
  StringMap<FamilyState> states_;
  Page page_;
  std::size_t kept_samples_ = 0;
  std::string error_;
  // Per sample line, reused.
  std::vector<RawLabel> labels_;
  std::vector<std::string_view> label_names_;
  std::string_view name_;
  bool name_escaped_ = false;
  std::string unescaped_name_;
};

ParseResult Parser::Run(std::string_view text) {
  if (text.size() > limits_.max_bytes) {
    return ParseResult(
        ParseError{0, Exceeds(text.size(), "bytes", "max_bytes", limits_.max_bytes)});
  }
  std::size_t number = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    ++number;
    const std::size_t newline = text.find('\n', start);
    const bool last = newline == std::string_view::npos;
    const std::string_view line =
        text.substr(start, last ? std::string_view::npos : newline - start);
    if (line.size() > limits_.max_line_bytes) {
      return ParseResult(ParseError{number, Exceeds(line.size(), "bytes on the line",
                                                    "max_line_bytes", limits_.max_line_bytes)});
    }
    if (!Line(line)) return ParseResult(ParseError{number, std::move(error_)});
    if (last) {
      if (SkipBlanks(line, 0) == line.size()) break;  // blanks after the last new-line
      return ParseResult(ParseError{number, "the page does not end with a new-line (cut short?)"});
    }
    start = newline + 1;
  }
  return ParseResult(std::move(page_));
}

bool Parser::Line(std::string_view line) {
  const std::size_t pos = SkipBlanks(line, 0);
  if (pos == line.size()) return true;
  if (line[pos] == '#') return Comment(line, pos + 1);
  if (line.back() == '\r') {
    return Fail("the line ends with a carriage return: CRLF line ends are not the text format");
  }
  return SampleLine(line, pos);
}

Parser::FamilyState* Parser::State(std::string_view name) {
  const auto found = states_.find(name);
  if (found != states_.end()) return &found->second;
  if (states_.size() >= limits_.max_families) {
    Fail(Exceeds(states_.size() + 1, "families", "max_families", limits_.max_families));
    return nullptr;
  }
  FamilyState& state = states_[std::string(name)];
  state.keep = !options_.keep || options_.keep(name);
  return &state;
}

Family& Parser::Kept(FamilyState& state, std::string_view name) {
  if (state.kept_index < 0) {
    state.kept_index = static_cast<std::int64_t>(page_.families.size());
    page_.families.push_back(Family{.name = std::string(name),
                                    .type = state.type,
                                    .help = std::move(state.help),
                                    .samples = {}});
  }
  return page_.families[static_cast<std::size_t>(state.kept_index)];
}

// `line` after its '#' at pos - 1: # HELP name text, # TYPE name type, or any other comment.
bool Parser::Comment(std::string_view line, std::size_t pos) {
  pos = SkipBlanks(line, pos);
  std::size_t end = pos;
  while (end < line.size() && !IsBlank(line[end])) ++end;
  const std::string_view keyword = line.substr(pos, end - pos);
  if (keyword != "HELP" && keyword != "TYPE") return true;
  pos = SkipBlanks(line, end);
  if (pos == line.size()) return true;  // "# HELP" alone: a comment (expfmt)
  std::string name_buffer;
  std::string_view name;
  if (line[pos] == '"') {
    const QuotedScan scan = ScanQuoted(line, pos);
    if (scan.error != QuotedError::kNone) {
      return Fail("metric name in # " + std::string(keyword) + " " + QuotedErrorText(scan.error));
    }
    name = line.substr(pos + 1, scan.end - pos - 2);
    if (scan.escaped) name = name_buffer = Unescape(name);
    pos = scan.end;
  } else {
    end = pos;
    while (end < line.size() && IsMetricNameChar(line[end])) ++end;
    name = line.substr(pos, end - pos);
    if (!name.empty() && !IsMetricNameStart(name[0])) end = pos;  // a digit first
    pos = end;
  }
  if (pos == line.size()) return true;  // a name and nothing more: a comment (expfmt)
  if (!IsBlank(line[pos]) || name.empty()) {
    return Fail("invalid metric name in # " + std::string(keyword) + " at " +
                Quoted(line.substr(pos, 20)));
  }
  pos = SkipBlanks(line, pos);
  if (pos == line.size()) return true;  // no text after the name (expfmt)
  FamilyState* state = State(name);
  if (state == nullptr) return false;
  const std::string_view rest = line.substr(pos);
  if (keyword == "HELP") {
    if (state->has_help) return Fail("second # HELP for " + Quoted(name));
    state->has_help = true;
    std::string help;
    if (!Unescape(rest, state->keep ? &help : nullptr)) {
      return Fail(R"(# HELP text has an invalid escape sequence (only \\, \" and \n))");
    }
    if (state->kept_index >= 0) {
      page_.families[static_cast<std::size_t>(state->kept_index)].help = std::move(help);
    } else {
      state->help = std::move(help);
    }
    return true;
  }
  end = 0;
  while (end < rest.size() && !IsBlank(rest[end])) ++end;
  std::string type_name(rest.substr(0, end));
  std::transform(type_name.begin(), type_name.end(), type_name.begin(),
                 [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; });
  const std::optional<MetricType> type = EnumNamed(type_name, kTypeNames);
  if (!type) return Fail("unknown metric type " + Quoted(rest.substr(0, end)));
  if (SkipBlanks(rest, end) != rest.size()) {
    return Fail("text after the type in # TYPE: " + Quoted(rest.substr(end)));
  }
  if (state->has_type || state->has_samples) {
    return Fail("second # TYPE for " + Quoted(name) + ", or # TYPE after its samples");
  }
  state->has_type = true;
  state->type = *type;
  return true;
}

// The label set at line[pos] == '{': labels into labels_, a quoted metric name into name_;
// pos ends past the '}'.
bool Parser::LabelSet(std::string_view line, std::size_t& pos) {
  ++pos;
  bool after_item = false;  // a label pair or quoted name, not yet followed by a comma
  while (true) {
    const std::size_t before = pos;
    pos = SkipBlanks(line, pos);
    if (pos == line.size()) return Fail("label set not closed with '}'");
    const char c = line[pos];
    if (c == '}') {
      ++pos;
      return true;
    }
    if (c == ',') {
      if (!after_item) return Fail("',' where a label name was expected");
      after_item = false;
      ++pos;
      continue;
    }
    // Pairs separated by blanks alone are accepted, as textparse does.
    if (after_item && (pos == before || (c != '"' && !IsLabelNameStart(c)))) {
      return Fail("expected ',' or '}' after a label value, found " + Quoted(line.substr(pos, 1)));
    }
    RawLabel label;
    if (c == '"') {
      const QuotedScan scan = ScanQuoted(line, pos);
      if (scan.error != QuotedError::kNone) {
        return Fail(std::string("quoted name ") + QuotedErrorText(scan.error));
      }
      const std::string_view quoted = line.substr(pos + 1, scan.end - pos - 2);
      pos = SkipBlanks(line, scan.end);
      if (pos < line.size() && (line[pos] == ',' || line[pos] == '}')) {
        if (!name_.empty() || name_escaped_) return Fail("two metric names for one sample");
        name_ = quoted;
        name_escaped_ = scan.escaped;
        if (name_.empty()) return Fail("empty metric name");
        after_item = true;
        continue;
      }
      if (pos == line.size() || line[pos] != '=') {
        return Fail("expected '=', ',' or '}' after the quoted name " + Quoted(quoted));
      }
      label.name = quoted;
      label.name_escaped = scan.escaped;
    } else {
      if (!IsLabelNameStart(c))
        return Fail("invalid label name at " + Quoted(line.substr(pos, 20)));
      const std::size_t start = pos;
      while (pos < line.size() && IsLabelNameChar(line[pos])) ++pos;
      label.name = line.substr(start, pos - start);
      pos = SkipBlanks(line, pos);
      if (pos == line.size() || line[pos] != '=') {
        return Fail("expected '=' after the label name " + Quoted(label.name));
      }
    }
    if (label.name.empty()) return Fail("empty label name");
    if (label.name.size() > limits_.max_label_name_bytes) {
      return Fail(Exceeds(label.name.size(), "bytes in a label name", "max_label_name_bytes",
                          limits_.max_label_name_bytes));
    }
    pos = SkipBlanks(line, pos + 1);  // past '='
    if (pos == line.size() || line[pos] != '"') {
      return Fail("label value not quoted, for the label " + Quoted(label.name));
    }
    const QuotedScan scan = ScanQuoted(line, pos);
    if (scan.error != QuotedError::kNone) {
      return Fail("label value of " + Quoted(label.name) + " " + QuotedErrorText(scan.error));
    }
    label.value = line.substr(pos + 1, scan.end - pos - 2);
    label.value_escaped = scan.escaped;
    if (label.value.size() > limits_.max_label_value_bytes) {
      return Fail(Exceeds(label.value.size(), "bytes in a label value", "max_label_value_bytes",
                          limits_.max_label_value_bytes));
    }
    if (labels_.size() >= limits_.max_labels_per_sample) {
      return Fail(Exceeds(labels_.size() + 1, "labels on a sample", "max_labels_per_sample",
                          limits_.max_labels_per_sample));
    }
    labels_.push_back(label);
    pos = scan.end;
    after_item = true;
  }
}

// The labels of the sample just read: no duplicate, no __name__, and a quantile (summary) or le
// (histogram bucket) that is a float. Raw names compare exactly: an escape's form is unique.
bool Parser::CheckLabels(MetricType type, bool is_base, bool is_bucket) {
  std::vector<std::string_view>& names = label_names_;
  names.clear();
  for (const RawLabel& label : labels_) {
    if (label.name == "__name__") {
      return Fail("the label name \"__name__\" is reserved");
    }
    names.push_back(label.name);
  }
  std::sort(names.begin(), names.end());
  const auto duplicate = std::adjacent_find(names.begin(), names.end());
  if (duplicate != names.end()) {
    return Fail("duplicate label name " + Quoted(*duplicate));
  }
  const std::string_view bound = type == MetricType::kSummary && is_base ? "quantile"
                                 : IsHistogram(type) && is_bucket        ? "le"
                                                                         : "";
  if (bound.empty()) return true;
  for (const RawLabel& label : labels_) {
    if (label.name != bound) continue;
    if (label.value_escaped || !ParseSampleValue(label.value)) {
      return Fail("the " + std::string(bound) + " label " + Quoted(label.value) +
                  " is not a float");
    }
  }
  return true;
}

bool Parser::SampleLine(std::string_view line, std::size_t pos) {
  labels_.clear();
  name_ = {};
  name_escaped_ = false;
  if (IsMetricNameStart(line[pos])) {
    const std::size_t start = pos;
    while (pos < line.size() && IsMetricNameChar(line[pos])) ++pos;
    name_ = line.substr(start, pos - start);
    if (pos < line.size() && !IsBlank(line[pos]) && line[pos] != '{') {
      return Fail("invalid character " + Quoted(line.substr(pos, 1)) + " after the metric name " +
                  Quoted(name_));
    }
    pos = SkipBlanks(line, pos);
    if (pos < line.size() && line[pos] == '{' && !LabelSet(line, pos)) return false;
  } else if (line[pos] == '{') {
    if (!LabelSet(line, pos)) return false;
    if (name_.empty()) return Fail("invalid metric name: the sample has none");
  } else {
    return Fail("invalid metric name at " + Quoted(line.substr(pos, 20)));
  }
  std::string_view name = name_;
  if (name_escaped_) name = unescaped_name_ = Unescape(name_);

  // The value, and a timestamp maybe.
  pos = SkipBlanks(line, pos);
  std::size_t end = pos;
  while (end < line.size() && !IsBlank(line[end])) ++end;
  if (end == pos) return Fail("no value after the metric " + Quoted(name));
  const std::optional<double> value = ParseSampleValue(line.substr(pos, end - pos));
  if (!value) return Fail("the value " + Quoted(line.substr(pos, end - pos)) + " is not a float");
  pos = SkipBlanks(line, end);
  std::optional<std::int64_t> timestamp;
  if (pos < line.size()) {
    end = pos;
    while (end < line.size() && !IsBlank(line[end])) ++end;
    timestamp = ParseTimestamp(line.substr(pos, end - pos));
    if (!timestamp) {
      return Fail("the timestamp " + Quoted(line.substr(pos, end - pos)) +
                  " is not an integer (milliseconds)");
    }
    if (SkipBlanks(line, end) != line.size()) {
      return Fail("text after the timestamp: " + Quoted(line.substr(end)));
    }
  }

  // The family: name_bucket/_sum/_count join a histogram or summary declared before them.
  FamilyState* state = nullptr;
  std::string_view family = name;
  bool is_bucket = false;
  bool is_count = false;
  for (const std::string_view suffix : {"_bucket", "_count", "_sum"}) {
    if (name.size() <= suffix.size() || !name.ends_with(suffix)) continue;
    const std::string_view base = name.substr(0, name.size() - suffix.size());
    const auto found = states_.find(base);
    if (found == states_.end()) break;
    const MetricType type = found->second.type;
    const bool joins =
        suffix == "_bucket" ? IsHistogram(type) : IsHistogram(type) || type == MetricType::kSummary;
    if (!joins) break;
    state = &found->second;
    family = base;
    is_bucket = suffix == "_bucket";
    is_count = suffix == "_count";
    break;
  }
  if (state == nullptr) state = State(name);
  if (state == nullptr) return false;
  if (!CheckLabels(state->type, family == name, is_bucket)) return false;
  if (IsHistogram(state->type) && *value < 0) {
    if (is_count) return Fail("negative count for the histogram " + Quoted(family));
    if (is_bucket) return Fail("negative bucket population for the histogram " + Quoted(family));
  }
  state->has_samples = true;
  if (!state->keep) return true;
  if (kept_samples_ >= limits_.max_kept_samples) {
    return Fail(
        Exceeds(kept_samples_ + 1, "samples kept", "max_kept_samples", limits_.max_kept_samples));
  }
  ++kept_samples_;
  Sample sample{
      .name = std::string(name), .labels = {}, .value = *value, .timestamp_ms = timestamp};
  sample.labels.reserve(labels_.size());
  for (const RawLabel& raw : labels_) {
    sample.labels.push_back(
        Label{raw.name_escaped ? Unescape(raw.name) : std::string(raw.name),
              raw.value_escaped ? Unescape(raw.value) : std::string(raw.value)});
  }
  Kept(*state, family).samples.push_back(std::move(sample));
  return true;
}

}  // namespace

std::string_view MetricTypeName(MetricType type) { return EnumToString(type, kTypeNames); }

std::optional<std::string_view> Sample::LabelValue(std::string_view label) const {
  for (const Label& l : labels) {
    if (l.name == label) return l.value;
  }
  return std::nullopt;
}

const Family* Page::Find(std::string_view name) const {
  for (const Family& family : families) {
    if (family.name == name) return &family;
  }
  return nullptr;
}

std::size_t Page::SampleCount() const {
  std::size_t count = 0;
  for (const Family& family : families) count += family.samples.size();
  return count;
}

FamilyFilter KeepFamilies(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  return [names = std::move(names)](std::string_view family) {
    return std::binary_search(names.begin(), names.end(), family, std::less<>());
  };
}

std::string ParseError::ToString() const {
  return line == 0 ? message : "line " + std::to_string(line) + ": " + message;
}

ParseResult ParseExposition(std::string_view text, const ParseOptions& options) {
  return Parser(options).Run(text);
}

}  // namespace eoc::signals
