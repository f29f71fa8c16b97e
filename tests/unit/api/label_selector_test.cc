#include "api/label_selector.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "allocation_counter.h"
#include "api/inference_pool.h"
#include "printers.h"

namespace eoc::api {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using Op = LabelRequirement::Operator;

LabelSelector Parse(const json& selector, std::vector<FieldError>& errors) {
  return ParseLabelSelector(selector, "spec.selector", errors);
}

LabelSelector ParseOk(const json& selector) {
  std::vector<FieldError> errors;
  LabelSelector s = Parse(selector, errors);
  EXPECT_TRUE(errors.empty()) << errors.front().ToString();
  return s;
}

TEST(ParseLabelSelector, MatchLabelsAndExpressionsSortedByKey) {
  const LabelSelector s = ParseOk(json::parse(R"({
    "matchLabels": {"tier": "gpu", "app": "chat"},
    "matchExpressions": [
      {"key": "zone", "operator": "In", "values": ["b", "a", "b"]},
      {"key": "canary", "operator": "DoesNotExist"},
      {"key": "release", "operator": "NotIn", "values": ["old"]},
      {"key": "model", "operator": "Exists", "values": []}
    ]})"));
  EXPECT_THAT(s.requirements(), ElementsAre(LabelRequirement{"app", Op::kIn, {"chat"}},
                                            LabelRequirement{"canary", Op::kDoesNotExist, {}},
                                            LabelRequirement{"model", Op::kExists, {}},
                                            LabelRequirement{"release", Op::kNotIn, {"old"}},
                                            LabelRequirement{"tier", Op::kIn, {"gpu"}},
                                            LabelRequirement{"zone", Op::kIn, {"a", "b"}}));
  EXPECT_EQ(s.ToString(), "app=chat,!canary,model,release notin (old),tier=gpu,zone in (a,b)");
}

TEST(ParseLabelSelector, EmptyObjectIsAnEmptySelector) {
  const LabelSelector s = ParseOk(json::object());
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.ToString(), "");
  EXPECT_TRUE(s.Matches({}));
}

TEST(ParseLabelSelector, ErrorsNameTheExactField) {
  std::vector<FieldError> errors;
  const LabelSelector s = Parse(json::parse(R"({
    "matchLabels": {"app": "chat", "bad key": "x", "tier": "a b", "n": 5},
    "matchExpressions": [
      {"key": "ok", "operator": "Exists"},
      {"key": "zone", "operator": "Near", "values": ["a"]},
      {"operator": "In", "values": ["a"]},
      {"key": "x", "operator": "In"},
      {"key": "y", "operator": "In", "values": []},
      {"key": "z", "operator": "Exists", "values": ["a"]},
      {"key": "w", "operator": "NotIn", "values": ["ok", "not ok", 3]},
      "not an object"
    ]})"),
                                errors);
  std::vector<std::string> fields;
  fields.reserve(errors.size());
  for (const FieldError& e : errors) fields.push_back(e.field);
  EXPECT_THAT(
      fields,
      ElementsAre(
          "spec.selector.matchLabels[bad key]", "spec.selector.matchLabels[n]",
          "spec.selector.matchLabels[tier]", "spec.selector.matchExpressions[1].operator",
          "spec.selector.matchExpressions[2].key", "spec.selector.matchExpressions[3].values",
          "spec.selector.matchExpressions[4].values", "spec.selector.matchExpressions[5].values",
          "spec.selector.matchExpressions[6].values[1]",
          "spec.selector.matchExpressions[6].values[2]", "spec.selector.matchExpressions[7]"));
  EXPECT_THAT(errors[3].message,
              ::testing::HasSubstr("must be one of In, NotIn, Exists, DoesNotExist, got \"Near\""));
  EXPECT_EQ(errors[4].message, "required");
  EXPECT_EQ(errors[5].message, "must not be empty when operator is In");
  EXPECT_EQ(errors[7].message, "must be empty when operator is Exists");
  EXPECT_EQ(errors[9].message, "must be a string");
  EXPECT_EQ(errors[10].message, "must be an object");
  // The good requirements are kept.
  EXPECT_EQ(s.ToString(), "app=chat,ok");
}

TEST(ParseLabelSelector, WrongTypes) {
  std::vector<FieldError> errors;
  (void)Parse(json::array(), errors);
  (void)Parse(json::parse(R"({"matchLabels": [], "matchExpressions": {}})"), errors);
  ASSERT_EQ(errors.size(), 3U);
  EXPECT_EQ(errors[0].ToString(), "spec.selector: must be an object");
  EXPECT_EQ(errors[1].ToString(), "spec.selector.matchLabels: must be an object");
  EXPECT_EQ(errors[2].ToString(), "spec.selector.matchExpressions: must be an array");
}

TEST(ParseLabelSelector, HugeSelectorsAreRefusedWhole) {
  json selector = {{"matchLabels", json::object()}, {"matchExpressions", json::array()}};
  for (int i = 0; i < 100000; ++i) {
    selector["matchLabels"]["k" + std::to_string(i)] = "v";
    selector["matchExpressions"].push_back({{"key", "k"}, {"operator", "Exists"}});
  }
  std::vector<FieldError> errors;
  const LabelSelector s = Parse(selector, errors);
  ASSERT_EQ(errors.size(), 2U);
  EXPECT_EQ(errors[0].ToString(),
            "spec.selector.matchLabels: must have at most 64 entries, got 100000");
  EXPECT_EQ(errors[1].ToString(),
            "spec.selector.matchExpressions: must have at most 64 entries, got 100000");
  EXPECT_TRUE(s.empty());
}

TEST(ParseLabelSelector, LongKeysAreCutInTheFieldName) {
  std::vector<FieldError> errors;
  (void)Parse(json{{"matchLabels", {{std::string(5000, 'k'), "v"}}}}, errors);
  ASSERT_EQ(errors.size(), 1U);
  EXPECT_EQ(errors[0].field, "spec.selector.matchLabels[" + std::string(100, 'k') + "...]");
  EXPECT_LT(errors[0].message.size(), 400U);
}

TEST(LabelSelector, Matches) {
  const LabelSelector s = ParseOk(json::parse(R"({
    "matchLabels": {"app": "chat"},
    "matchExpressions": [
      {"key": "zone", "operator": "In", "values": ["a", "b"]},
      {"key": "release", "operator": "NotIn", "values": ["old"]},
      {"key": "canary", "operator": "DoesNotExist"},
      {"key": "gpu", "operator": "Exists"}
    ]})"));
  const Labels good = {{"app", "chat"}, {"gpu", "a100"}, {"zone", "b"}};
  EXPECT_TRUE(s.Matches(good));
  EXPECT_TRUE(s.Matches({{"app", "chat"}, {"gpu", ""}, {"release", "new"}, {"zone", "a"}}));
  EXPECT_FALSE(s.Matches({{"app", "web"}, {"gpu", "a100"}, {"zone", "b"}}));
  EXPECT_FALSE(s.Matches({{"gpu", "a100"}, {"zone", "b"}}));                   // no app
  EXPECT_FALSE(s.Matches({{"app", "chat"}, {"gpu", "a100"}, {"zone", "c"}}));  // zone
  EXPECT_FALSE(s.Matches({{"app", "chat"}, {"zone", "a"}}));                   // no gpu
  EXPECT_FALSE(s.Matches({{"app", "chat"}, {"canary", ""}, {"gpu", "x"}, {"zone", "a"}}));
  EXPECT_FALSE(
      s.Matches({{"app", "chat"}, {"gpu", "x"}, {"release", "old"}, {"zone", "a"}}));  // NotIn
  EXPECT_FALSE(s.Matches({}));
}

TEST(LabelSelector, MatchesWithoutAllocating) {
  const LabelSelector s = ParseOk(json::parse(R"({
    "matchLabels": {"app": "a-rather-long-label-value-beyond-small-strings"},
    "matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["x", "y"]}]})"));
  const Labels labels = {{"app", "a-rather-long-label-value-beyond-small-strings"},
                         {"zone", "a-zone-name-that-is-long-enough-to-be-on-the-heap"}};
  testing::AllocationCounter counter;
  counter.Start();
  auto probe = std::make_unique<int>(1);  // the counter counts
  ASSERT_EQ(counter.Stop(), 1);
  counter.Start();
  bool matched = false;
  for (int i = 0; i < 100; ++i) matched = s.Matches(labels);
  const int allocations = counter.Stop();
  EXPECT_TRUE(matched);
  EXPECT_EQ(allocations, 0);
}

TEST(LabelSelector, ConstructorSortsAndDeduplicates) {
  const LabelSelector s({{"b", Op::kIn, {"y", "x", "y"}}, {"a", Op::kNotIn, {"z"}}});
  EXPECT_THAT(s.requirements(), ElementsAre(LabelRequirement{"a", Op::kNotIn, {"z"}},
                                            LabelRequirement{"b", Op::kIn, {"x", "y"}}));
  EXPECT_EQ(s.ToString(), "a notin (z),b in (x,y)");
  EXPECT_EQ(s, LabelSelector({{"a", Op::kNotIn, {"z"}}, {"b", Op::kIn, {"x", "y"}}}));
}

TEST(LabelSelector, ToStringOfEmptyValues) {
  // Kubernetes' selector syntax: "k=" is an empty value, "(,a)" a list holding one.
  EXPECT_EQ(LabelSelector({{"k", Op::kIn, {""}}}).ToString(), "k=");
  EXPECT_EQ(LabelSelector({{"k", Op::kIn, {"a", ""}}}).ToString(), "k in (,a)");
  EXPECT_TRUE(LabelSelector({{"k", Op::kIn, {""}}}).Matches({{"k", ""}}));
}

TEST(LabelSelector, PrefixedKeys) {
  const LabelSelector s = ParseOk(json::parse(
      R"({"matchLabels": {"app.kubernetes.io/name": "vllm"},
          "matchExpressions": [{"key": "eoc.dev/canary", "operator": "DoesNotExist"}]})"));
  EXPECT_EQ(s.ToString(), "app.kubernetes.io/name=vllm,!eoc.dev/canary");
  EXPECT_TRUE(s.Matches({{"app.kubernetes.io/name", "vllm"}}));
  EXPECT_FALSE(s.Matches({{"app.kubernetes.io/name", "vllm"}, {"eoc.dev/canary", "true"}}));
}

// The selector string of a list or a Scale's status.selector.
LabelSelector ParseStringOk(std::string_view text) {
  std::string error;
  std::optional<LabelSelector> s = ParseLabelSelectorString(text, error);
  EXPECT_TRUE(s.has_value()) << error;
  return s.value_or(LabelSelector{});
}

std::string StringError(std::string_view text) {
  std::string error;
  EXPECT_FALSE(ParseLabelSelectorString(text, error).has_value()) << text;
  return error;
}

TEST(ParseLabelSelectorString, EveryFormReadsBackAsToStringWritesIt) {
  const LabelSelector s = ParseStringOk(
      " app = chat ,tier in ( b, a ),zone notin (x),gpu, !canary,release!=old,track==blue");
  EXPECT_THAT(s.requirements(), ElementsAre(LabelRequirement{"app", Op::kIn, {"chat"}},
                                            LabelRequirement{"canary", Op::kDoesNotExist, {}},
                                            LabelRequirement{"gpu", Op::kExists, {}},
                                            LabelRequirement{"release", Op::kNotIn, {"old"}},
                                            LabelRequirement{"tier", Op::kIn, {"a", "b"}},
                                            LabelRequirement{"track", Op::kIn, {"blue"}},
                                            LabelRequirement{"zone", Op::kNotIn, {"x"}}));
  EXPECT_EQ(ParseStringOk(s.ToString()), s);
  EXPECT_TRUE(ParseStringOk("").empty());
  EXPECT_TRUE(ParseStringOk("   ").empty());
}

TEST(ParseLabelSelectorString, AScalesSelectorPicksItsWorkloadsPods) {
  // What a Deployment's /scale reports: its spec.selector as a string.
  const LabelSelector s = ParseStringOk("accelerator=a100,app=vllm-llama");
  EXPECT_TRUE(s.Matches({{"accelerator", "a100"}, {"app", "vllm-llama"}, {"h", "1"}}));
  EXPECT_FALSE(s.Matches({{"accelerator", "h100"}, {"app", "vllm-llama"}}));
  EXPECT_EQ(ParseStringOk("app.kubernetes.io/name=vllm,k=").ToString(),
            "app.kubernetes.io/name=vllm,k=");
  EXPECT_TRUE(ParseStringOk("k in (,a)").Matches({{"k", ""}}));
}

TEST(ParseLabelSelectorString, ErrorsSayWhatAndWhere) {
  EXPECT_EQ(StringError("app=chat,,x"),
            "selector \"app=chat,,x\": expected a label key, got \"\" at character 10");
  EXPECT_EQ(StringError("app=chat zone=a"),
            "selector \"app=chat zone=a\": expected ',' between requirements at character 10");
  EXPECT_THAT(StringError("replicas>3"), ::testing::HasSubstr("expected =, ==, !=, in or notin "
                                                              "after \"replicas\", got \">\""));
  EXPECT_THAT(StringError("tier in a,b"), ::testing::HasSubstr("expected '(' after in"));
  EXPECT_THAT(StringError("tier in (a,b"),
              ::testing::HasSubstr("expected ',' or ')' in the values of \"tier\""));
  EXPECT_THAT(StringError("app=-chat-"),
              ::testing::HasSubstr("expected a label value for \"app\", got \"-chat-\""));
  EXPECT_THAT(StringError("!app=x"), ::testing::HasSubstr("expected ','"));
  EXPECT_THAT(StringError("tier notin ()"),
              ::testing::HasSubstr("expected at least one value for \"tier\""));
}

TEST(ParseLabelSelectorString, HugeSelectorsAreRefused) {
  std::string many;
  for (int i = 0; i < 200; ++i) many += "k" + std::to_string(i) + "=v,";
  many.pop_back();
  EXPECT_THAT(StringError(many), ::testing::HasSubstr("has more than 128 requirements"));
  std::string values = "k in (";
  for (int i = 0; i < 300; ++i) values += "v" + std::to_string(i) + ",";
  values.back() = ')';
  EXPECT_THAT(StringError(values), ::testing::HasSubstr("has more than 256 values for \"k\""));
  EXPECT_LT(StringError(values).size(), 400U);
}

}  // namespace
}  // namespace eoc::api
