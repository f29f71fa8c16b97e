#include "node_agent_affinity.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <utility>

#include "common/json_members.h"

namespace eoc::testing::internal {
namespace {

using nlohmann::json;

constexpr const char* kNameField = "metadata.name";

// The whole of `text` as an integer, as the scheduler reads Gt and Lt.
std::optional<std::int64_t> Integer(const std::string& text) {
  std::int64_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return n;
}

// Why a requirement cannot be evaluated, or "" when it can.
std::string Check(const NodeSelectorRequirement& r, bool field) {
  const std::string what = (field ? "matchFields " : "matchExpressions ") + r.key + " " + r.op;
  if (field && r.key != kNameField) return what + ": only the field metadata.name is supported";
  if (r.op == "In" || r.op == "NotIn") {
    return r.values.empty() ? what + ": needs values" : "";
  }
  if (field) return what + ": a field takes In or NotIn only";
  if (r.op == "Exists" || r.op == "DoesNotExist") {
    return r.values.empty() ? "" : what + ": takes no values";
  }
  if (r.op == "Gt" || r.op == "Lt") {
    return r.values.size() == 1 && Integer(r.values[0]) ? "" : what + ": needs one integer value";
  }
  return what + ": unknown operator";
}

// Reads a list of requirements into `out`; "" or the problem.
std::string ReadRequirements(const json* list, bool field,
                             std::vector<NodeSelectorRequirement>& out) {
  const char* name = field ? "matchFields" : "matchExpressions";
  if (list == nullptr || list->is_null()) return "";
  if (!list->is_array()) return std::string(name) + " is not a list";
  for (const json& item : *list) {
    if (!item.is_object()) return std::string(name) + " has an entry that is not an object";
    NodeSelectorRequirement r{.key = StringOrEmpty(item, "key"),
                              .op = StringOrEmpty(item, "operator")};
    if (const json* values = MemberOrNull(item, "values");
        values != nullptr && !values->is_null()) {
      if (!values->is_array()) return std::string(name) + " " + r.key + ": values is not a list";
      for (const json& v : *values) {
        if (!v.is_string()) return std::string(name) + " " + r.key + ": a value is not a string";
        r.values.push_back(v.get<std::string>());
      }
    }
    if (std::string problem = Check(r, field); !problem.empty()) return problem;
    out.push_back(std::move(r));
  }
  return "";
}

bool Holds(const NodeSelectorRequirement& r, const std::string* value) {
  const auto in = [&] {
    return value != nullptr &&
           std::find(r.values.begin(), r.values.end(), *value) != r.values.end();
  };
  if (r.op == "In") return in();
  if (r.op == "NotIn") return !in();
  if (r.op == "Exists") return value != nullptr;
  if (r.op == "DoesNotExist") return value == nullptr;
  if (value == nullptr) return false;
  const auto have = Integer(*value);
  const auto want = Integer(r.values.front());
  if (!have || !want) return false;
  return r.op == "Gt" ? *have > *want : *have < *want;
}

}  // namespace

bool RequiredNodeAffinity::Matches(const std::string& node_name,
                                   const std::map<std::string, std::string>& node_labels) const {
  if (!present) return true;
  if (!problem.empty()) return false;
  return std::any_of(terms.begin(), terms.end(), [&](const NodeSelectorTerm& term) {
    if (term.match_expressions.empty() && term.match_fields.empty()) return false;
    const bool labels = std::all_of(
        term.match_expressions.begin(), term.match_expressions.end(), [&](const auto& r) {
          const auto it = node_labels.find(r.key);
          return Holds(r, it == node_labels.end() ? nullptr : &it->second);
        });
    return labels && std::all_of(term.match_fields.begin(), term.match_fields.end(),
                                 [&](const auto& r) { return Holds(r, &node_name); });
  });
}

RequiredNodeAffinity ParseRequiredNodeAffinity(const json* spec) {
  RequiredNodeAffinity affinity;
  const json* required = MemberOrNull(MemberOrNull(MemberOrNull(spec, "affinity"), "nodeAffinity"),
                                      "requiredDuringSchedulingIgnoredDuringExecution");
  if (required == nullptr || required->is_null()) return affinity;
  affinity.present = true;
  const json* terms = MemberOrNull(required, "nodeSelectorTerms");
  if (!required->is_object() || terms == nullptr || !terms->is_array()) {
    affinity.problem =
        "requiredDuringSchedulingIgnoredDuringExecution has no nodeSelectorTerms list";
    return affinity;
  }
  for (const json& item : *terms) {
    NodeSelectorTerm term;
    if (!item.is_object()) {
      affinity.problem = "nodeSelectorTerms has an entry that is not an object";
    } else if (std::string p = ReadRequirements(MemberOrNull(item, "matchExpressions"), false,
                                                term.match_expressions);
               !p.empty()) {
      affinity.problem = std::move(p);
    } else if (std::string q =
                   ReadRequirements(MemberOrNull(item, "matchFields"), true, term.match_fields);
               !q.empty()) {
      affinity.problem = std::move(q);
    }
    if (!affinity.problem.empty()) {
      affinity.terms.clear();
      return affinity;
    }
    affinity.terms.push_back(std::move(term));
  }
  return affinity;
}

}  // namespace eoc::testing::internal
