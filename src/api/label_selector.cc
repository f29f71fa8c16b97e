#include "api/label_selector.h"

#include <algorithm>
#include <array>
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

}  // namespace eoc::api
