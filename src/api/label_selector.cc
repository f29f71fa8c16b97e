#include "api/label_selector.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>
#include <string_view>

#include "api/inference_pool.h"
#include "api/json_reader.h"
#include "api/names.h"
#include "common/text.h"

namespace eoc::api {
namespace {

using nlohmann::json;
using Operator = LabelRequirement::Operator;

// Bounds on what a selector may hold: far past any real one, small enough to match quickly.
constexpr std::size_t kMaxMatchLabels = 64;
constexpr std::size_t kMaxMatchExpressions = 64;
constexpr std::size_t kMaxValues = 256;

constexpr std::array<internal::EnumName<Operator>, 4> kOperators{{
    {Operator::kIn, "In"},
    {Operator::kNotIn, "NotIn"},
    {Operator::kExists, "Exists"},
    {Operator::kDoesNotExist, "DoesNotExist"},
}};

constexpr internal::StringRule kKeyRule{
    .max_length = kMaxDnsSubdomainLength + 1 + kMaxLabelNameLength,
    .valid = IsLabelKey,
    .expected =
        "must be a label key: an optional DNS subdomain prefix and '/', then 1-63 "
        "characters of [A-Za-z0-9._-] that start and end with a letter or digit"};
constexpr internal::StringRule kValueRule{
    .max_length = kMaxLabelNameLength,
    .allow_empty = true,
    .valid = IsLabelValue,
    .expected =
        "must be a label value: at most 63 characters of [A-Za-z0-9._-] that start and "
        "end with a letter or digit"};

void ParseMatchLabels(const json& labels, const std::string& field,
                      std::vector<LabelRequirement>& out, std::vector<FieldError>& errors) {
  if (!labels.is_object()) {
    errors.push_back({field, "must be an object"});
    return;
  }
  if (labels.size() > kMaxMatchLabels) {
    errors.push_back({field, "must have at most " + std::to_string(kMaxMatchLabels) +
                                 " entries, got " + std::to_string(labels.size())});
    return;
  }
  for (const auto& [key, value] : labels.items()) {
    const std::string path = internal::KeyPath(field, key);
    const std::size_t before = errors.size();
    if (!IsLabelKey(key)) {
      errors.push_back({path, std::string(kKeyRule.expected) + ", got " + Quoted(key)});
    }
    std::optional<std::string> v = internal::ReadString(value, kValueRule, path, errors);
    if (v && errors.size() == before) out.push_back({key, Operator::kIn, {std::move(*v)}});
  }
}

std::optional<LabelRequirement> ParseExpression(const json& expression, const std::string& field,
                                                std::vector<FieldError>& errors) {
  const std::size_t before = errors.size();
  const internal::ObjectReader reader(&expression, field, errors);
  if (errors.size() != before) return std::nullopt;
  LabelRequirement requirement;
  if (reader.Require("key")) reader.String("key", requirement.key, kKeyRule);
  const bool has_operator =
      reader.Require("operator") && reader.Enum("operator", requirement.op, kOperators);
  const bool needs_values = requirement.op == Operator::kIn || requirement.op == Operator::kNotIn;
  if (const json* values = reader.Array("values", kMaxValues)) {
    for (std::size_t i = 0; i < values->size(); ++i) {
      std::optional<std::string> v = internal::ReadString(
          (*values)[i], kValueRule, reader.Path("values") + "[" + std::to_string(i) + "]", errors);
      if (v) requirement.values.push_back(std::move(*v));
    }
    if (has_operator && !needs_values && !values->empty()) {
      reader.Error("values", "must be empty when operator is " +
                                 std::string(internal::EnumToString(requirement.op, kOperators)));
    }
  }
  if (has_operator && needs_values && requirement.values.empty() && errors.size() == before) {
    reader.Error("values", "must not be empty when operator is " +
                               std::string(internal::EnumToString(requirement.op, kOperators)));
  }
  if (errors.size() != before) return std::nullopt;
  return requirement;
}

// Appends the values joined by commas.
void AppendValues(const std::vector<std::string>& values, std::string& out) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    out += values[i];
  }
}

// Reads a selector string left to right (ParseLabelSelectorString); the first problem ends it.
class SelectorScanner {
 public:
  explicit SelectorScanner(std::string_view text) : text_(text) {}

  std::optional<std::vector<LabelRequirement>> Requirements() {
    std::vector<LabelRequirement> out;
    if (AtEnd()) return out;
    while (error_.empty()) {
      if (out.size() == kMaxMatchLabels + kMaxMatchExpressions) {
        return Fail("has more than " + std::to_string(out.size()) + " requirements");
      }
      std::optional<LabelRequirement> r = Requirement();
      if (!r) break;
      out.push_back(std::move(*r));
      if (AtEnd()) return out;
      if (!Take(",")) Fail("expected ',' between requirements");
    }
    return std::nullopt;
  }

  const std::string& error() const { return error_; }

 private:
  std::optional<LabelRequirement> Requirement() {
    LabelRequirement r;
    const bool negated = Take("!");
    r.key = std::string(Word());
    if (!IsLabelKey(r.key)) return Fail("expected a label key, got " + Quoted(r.key));
    if (negated) {
      r.op = Operator::kDoesNotExist;
    } else if (Take("!=")) {
      r.op = Operator::kNotIn;
      if (!Value(r)) return std::nullopt;
    } else if (Take("==") || Take("=")) {
      r.op = Operator::kIn;
      if (!Value(r)) return std::nullopt;
    } else if (AtEnd() || Peek(',')) {
      r.op = Operator::kExists;
    } else {
      const std::string_view op = Word();
      if (op != "in" && op != "notin") {
        return Fail("expected =, ==, !=, in or notin after " + Quoted(r.key) + ", got " +
                    Quoted(op.empty() ? text_.substr(pos_, 1) : op));
      }
      r.op = op == "in" ? Operator::kIn : Operator::kNotIn;
      if (!Take("(")) return Fail("expected '(' after " + std::string(op));
      if (Peek(')')) return Fail("expected at least one value for " + Quoted(r.key));
      do {
        if (r.values.size() == kMaxValues) {
          return Fail("has more than " + std::to_string(kMaxValues) + " values for " +
                      Quoted(r.key));
        }
        if (!Value(r)) return std::nullopt;
      } while (Take(","));
      if (!Take(")")) return Fail("expected ',' or ')' in the values of " + Quoted(r.key));
    }
    return r;
  }

  // Appends the next value to r.values; false (and the error set) when it is not a label value.
  bool Value(LabelRequirement& r) {
    const std::string_view v = Word();
    if (!IsLabelValue(v)) {
      Fail("expected a label value for " + Quoted(r.key) + ", got " + Quoted(v));
      return false;
    }
    r.values.emplace_back(v);
    return true;
  }

  static bool IsWordChar(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' || c == '-' ||
           c == '/';
  }
  void SkipSpaces() {
    while (pos_ < text_.size() && text_[pos_] == ' ') ++pos_;
  }
  bool AtEnd() {
    SkipSpaces();
    return pos_ >= text_.size();
  }
  bool Peek(char c) {
    SkipSpaces();
    return pos_ < text_.size() && text_[pos_] == c;
  }
  bool Take(std::string_view token) {
    SkipSpaces();
    if (!text_.substr(pos_).starts_with(token)) return false;
    pos_ += token.size();
    return true;
  }
  std::string_view Word() {
    SkipSpaces();
    const std::size_t start = pos_;
    while (pos_ < text_.size() && IsWordChar(text_[pos_])) ++pos_;
    return text_.substr(start, pos_ - start);
  }
  std::nullopt_t Fail(const std::string& what) {
    if (error_.empty()) error_ = what + " at character " + std::to_string(pos_ + 1);
    return std::nullopt;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  std::string error_;
};

}  // namespace

LabelSelector::LabelSelector(std::vector<LabelRequirement> requirements)
    : requirements_(std::move(requirements)) {
  for (LabelRequirement& r : requirements_) {
    std::sort(r.values.begin(), r.values.end());
    r.values.erase(std::unique(r.values.begin(), r.values.end()), r.values.end());
  }
  std::stable_sort(
      requirements_.begin(), requirements_.end(),
      [](const LabelRequirement& a, const LabelRequirement& b) { return a.key < b.key; });
}

bool LabelSelector::Matches(const Labels& sorted_labels) const {
  for (const LabelRequirement& r : requirements_) {
    const auto it = std::lower_bound(sorted_labels.begin(), sorted_labels.end(), r.key,
                                     [](const std::pair<std::string, std::string>& label,
                                        const std::string& key) { return label.first < key; });
    const bool has = it != sorted_labels.end() && it->first == r.key;
    const bool listed = has && std::binary_search(r.values.begin(), r.values.end(), it->second);
    switch (r.op) {
      case LabelRequirement::Operator::kIn:
        if (!listed) return false;
        break;
      case LabelRequirement::Operator::kNotIn:
        if (listed) return false;
        break;
      case LabelRequirement::Operator::kExists:
        if (!has) return false;
        break;
      case LabelRequirement::Operator::kDoesNotExist:
        if (has) return false;
        break;
    }
  }
  return true;
}

std::string LabelSelector::ToString() const {
  std::string out;
  for (const LabelRequirement& r : requirements_) {
    if (!out.empty()) out += ',';
    switch (r.op) {
      case LabelRequirement::Operator::kIn:
        if (r.values.size() == 1) {
          out += r.key + "=" + r.values.front();
        } else {
          out += r.key + " in (";
          AppendValues(r.values, out);
          out += ')';
        }
        break;
      case LabelRequirement::Operator::kNotIn:
        out += r.key + " notin (";
        AppendValues(r.values, out);
        out += ')';
        break;
      case LabelRequirement::Operator::kExists:
        out += r.key;
        break;
      case LabelRequirement::Operator::kDoesNotExist:
        out += "!" + r.key;
        break;
    }
  }
  return out;
}

LabelSelector ParseLabelSelector(const json& selector, const std::string& field,
                                 std::vector<FieldError>& errors) {
  std::vector<LabelRequirement> requirements;
  const internal::ObjectReader reader(&selector, field, errors);
  if (const json* labels = reader.Get("matchLabels")) {
    ParseMatchLabels(*labels, reader.Path("matchLabels"), requirements, errors);
  }
  if (const json* expressions = reader.Array("matchExpressions", kMaxMatchExpressions)) {
    for (std::size_t i = 0; i < expressions->size(); ++i) {
      std::optional<LabelRequirement> r =
          ParseExpression((*expressions)[i],
                          reader.Path("matchExpressions") + "[" + std::to_string(i) + "]", errors);
      if (r) requirements.push_back(std::move(*r));
    }
  }
  return LabelSelector(std::move(requirements));
}

std::optional<LabelSelector> ParseLabelSelectorString(std::string_view text, std::string& error) {
  SelectorScanner scanner(text);
  std::optional<std::vector<LabelRequirement>> requirements = scanner.Requirements();
  if (!requirements) {
    error = "selector " + Quoted(text) + ": " + scanner.error();
    return std::nullopt;
  }
  return LabelSelector(std::move(*requirements));
}

}  // namespace eoc::api
