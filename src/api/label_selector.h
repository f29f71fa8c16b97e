// A Kubernetes label selector (matchLabels and matchExpressions), as InferencePool.spec.selector
// carries it: parsed and checked once, matched against a pod's labels without allocating, and
// written as the selector string a list or watch takes.
//
//   auto selector = eoc::api::ParseLabelSelector(spec.at("selector"), "spec.selector", errors);
//   if (selector.Matches(pod.labels)) ...         // labels: sorted (key, value) pairs
//   selector.ToString()                           // "app=chat,!canary,tier in (a,b)"
//   auto parsed = eoc::api::ParseLabelSelectorString("app=chat,tier in (a,b)", error);
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace eoc::api {

struct FieldError;

// Label key/value pairs sorted by key (kube::StringPairs has this shape).
using Labels = std::vector<std::pair<std::string, std::string>>;

struct LabelRequirement {
  enum class Operator : std::uint8_t { kIn, kNotIn, kExists, kDoesNotExist };
  std::string key;
  Operator op = Operator::kIn;
  std::vector<std::string> values;  // sorted; empty for Exists and DoesNotExist

  bool operator==(const LabelRequirement&) const = default;
};

class LabelSelector {
 public:
  LabelSelector() = default;
  // matchLabels become `In` requirements with one value; all sorted by key.
  explicit LabelSelector(std::vector<LabelRequirement> requirements);

  // True when every requirement holds. An empty selector matches everything (as Kubernetes'),
  // which is why InferencePool validation refuses one.
  bool Matches(const Labels& sorted_labels) const;
  bool empty() const { return requirements_.empty(); }
  const std::vector<LabelRequirement>& requirements() const { return requirements_; }
  std::string ToString() const;

  bool operator==(const LabelSelector&) const = default;

 private:
  std::vector<LabelRequirement> requirements_;
};

// Reads a metav1.LabelSelector at `field`. Problems (wrong types, an unknown operator, values
// with Exists, no values with In, keys or values that are not valid label syntax) are appended to
// `errors` naming the exact field ("spec.selector.matchExpressions[1].operator"); the
// requirements that were good are kept.
LabelSelector ParseLabelSelector(const nlohmann::json& selector, const std::string& field,
                                 std::vector<FieldError>& errors);

// Reads a selector string, as a list's labelSelector and autoscaling/v1 Scale's status.selector
// carry it: comma-separated requirements `k=v`, `k==v`, `k!=v` (NotIn one value), `k in (a,b)`,
// `k notin (a,b)`, `k` and `!k`, with spaces around the parts. The empty string is the empty
// selector. nullopt, with `error` saying what and where, for anything else (the numeric `gt`/`lt`
// forms included: InferencePool selectors have no such operator), or past the bounds
// ParseLabelSelector keeps.
std::optional<LabelSelector> ParseLabelSelectorString(std::string_view text, std::string& error);

}  // namespace eoc::api
