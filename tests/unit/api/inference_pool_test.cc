// ParseInferencePool on whole objects: metadata, types, bounds, errors and their order.
#include "api/inference_pool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>

#include "printers.h"

namespace eoc::api {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

json Minimal() {
  return json::parse(R"({
    "apiVersion": "eoc.dev/v1alpha1", "kind": "InferencePool",
    "metadata": {"name": "chat", "namespace": "llm", "uid": "u-1", "generation": 7},
    "spec": {"selector": {"matchLabels": {"app": "chat"}}, "targetPort": 8000}})");
}

// The minimal object with `spec_patch` merged into its spec (RFC 7386: null removes a field).
InferencePool ParseWith(const json& spec_patch) {
  json object = Minimal();
  object["spec"].merge_patch(spec_patch);
  return ParseInferencePool(object);
}

std::vector<std::string> Fields(const std::vector<FieldError>& errors) {
  std::vector<std::string> fields;
  fields.reserve(errors.size());
  for (const FieldError& e : errors) fields.push_back(e.field);
  return fields;
}

TEST(ParseInferencePool, MinimalObject) {
  const InferencePool pool = ParseInferencePool(Minimal());
  EXPECT_TRUE(pool.errors.empty());
  EXPECT_EQ(pool.name, "chat");
  EXPECT_EQ(pool.ns, "llm");
  EXPECT_EQ(pool.uid, "u-1");
  EXPECT_EQ(pool.generation, 7);
  EXPECT_EQ(pool.spec.target_port, 8000);
  EXPECT_EQ(pool.spec.selector.ToString(), "app=chat");
  EXPECT_EQ(pool.status, InferencePoolStatus{});
}

TEST(ParseInferencePool, ThrowsOnlyWithoutAName) {
  EXPECT_THROW(ParseInferencePool(json::object()), std::invalid_argument);
  EXPECT_THROW(ParseInferencePool(json::array()), std::invalid_argument);
  EXPECT_THROW(ParseInferencePool(json("text")), std::invalid_argument);
  EXPECT_THROW(ParseInferencePool(json{{"metadata", {{"name", 5}}}}), std::invalid_argument);
  EXPECT_THROW(ParseInferencePool(json{{"metadata", {{"name", ""}}}}), std::invalid_argument);
  EXPECT_THROW(ParseInferencePool(json{{"metadata", "chat"}}), std::invalid_argument);
  // Anything else is an error in the result, never an exception.
  EXPECT_NO_THROW(ParseInferencePool(json{{"metadata", {{"name", "x"}}}, {"spec", 5}}));
}

TEST(ParseInferencePool, NoSpecAtAll) {
  const InferencePool pool = ParseInferencePool(json{{"metadata", {{"name", "x"}}}});
  EXPECT_THAT(pool.errors, ElementsAre(FieldError{"spec.selector", "required"},
                                       FieldError{"spec.targetPort", "required"}));
}

TEST(ParseInferencePool, SpecOfTheWrongTypeIsOneError) {
  const InferencePool pool = ParseInferencePool(json{{"metadata", {{"name", "x"}}}, {"spec", 5}});
  EXPECT_THAT(pool.errors, ElementsAre(FieldError{"spec", "must be an object"}));
}

struct BadSpec {
  const char* patch;  // merged into the minimal spec
  const char* field;
  const char* message;  // a part of the one error's message
};

void PrintTo(const BadSpec& c, std::ostream* os) { *os << c.patch; }

class ParseInferencePoolBadSpec : public ::testing::TestWithParam<BadSpec> {};

TEST_P(ParseInferencePoolBadSpec, OneErrorNamingTheField) {
  const BadSpec& c = GetParam();
  const InferencePool pool = ParseWith(json::parse(c.patch));
  ASSERT_EQ(pool.errors.size(), 1U) << ::testing::PrintToString(Fields(pool.errors));
  EXPECT_EQ(pool.errors[0].field, c.field);
  EXPECT_THAT(pool.errors[0].message, HasSubstr(c.message));
}

INSTANTIATE_TEST_SUITE_P(
    Fields, ParseInferencePoolBadSpec,
    ::testing::Values(
        BadSpec{R"({"selector": null})", "spec.selector", "required"},
        BadSpec{R"({"selector": {"matchLabels": null}})", "spec.selector", "must select something"},
        BadSpec{R"({"selector": {"matchLabels": {"app": "a b"}}})",
                "spec.selector.matchLabels[app]", "must be a label value"},
        BadSpec{R"({"targetPort": null})", "spec.targetPort", "required"},
        BadSpec{R"({"targetPort": 0})", "spec.targetPort", "must be between 1 and 65535, got 0"},
        BadSpec{R"({"targetPort": 70000})", "spec.targetPort",
                "must be between 1 and 65535, got 70000"},
        BadSpec{R"({"targetPort": "8000"})", "spec.targetPort", "must be an integer"},
        BadSpec{R"({"targetPort": 8000.5})", "spec.targetPort", "must be an integer"},
        BadSpec{R"({"targetPort": "http"})", "spec.targetPort", "must be an integer"},
        BadSpec{R"({"models": "llama"})", "spec.models", "must be an array"},
        BadSpec{R"({"models": ["a", "b", "a"]})", "spec.models[2]", "duplicate model \"a\""},
        BadSpec{R"({"models": [""]})", "spec.models[0]", "must not be empty"},
        BadSpec{R"({"models": ["a,b"]})", "spec.models[0]", "must be a model name"},
        BadSpec{R"({"models": [7]})", "spec.models[0]", "must be a string"},
        BadSpec{R"({"engine": "foo"})", "spec.engine",
                "must be one of vllm, sglang, trtllm, generic, got \"foo\""},
        BadSpec{R"({"engine": "VLLM"})", "spec.engine", "got \"VLLM\""},
        BadSpec{R"({"engine": 1})", "spec.engine", "got 1"},
        BadSpec{R"({"metrics": "on"})", "spec.metrics", "must be an object"},
        BadSpec{R"({"metrics": {"port": 0}})", "spec.metrics.port", "between 1 and 65535"},
        BadSpec{R"({"metrics": {"path": "metrics"}})", "spec.metrics.path", "must be a URL path"},
        BadSpec{R"({"engine": "generic", "metrics": {"names": {"running": "9lives"}}})",
                "spec.metrics.names.running", "must be a Prometheus metric name"},
        BadSpec{R"({"engine": "generic", "metrics": {"names": {"waiting": "q"}}})",
                "spec.metrics.names.running", "required when engine is generic"},
        BadSpec{R"({"metrics": {"names": {"running": "r"}}})", "spec.metrics.names",
                "only read when engine is generic"},
        BadSpec{R"({"routing": {"publishThreshold": 0}})", "spec.routing.publishThreshold",
                "must be at least 1, got 0"},
        BadSpec{R"({"metrics": {"intervalSeconds": 0}})", "spec.metrics.intervalSeconds",
                "must be at least 1, got 0"},
        BadSpec{R"({"metrics": {"timeoutSeconds": 10}})", "spec.metrics.timeoutSeconds",
                "must be at most intervalSeconds (5), got 10"},
        BadSpec{R"({"metrics": {"access": "Proxy"}})", "spec.metrics.access",
                "must be one of Direct, APIServerProxy"},
        BadSpec{R"({"scaleTargetRef": {}})", "spec.scaleTargetRef.name", "required"},
        BadSpec{R"({"scaleTargetRef": "web"})", "spec.scaleTargetRef", "must be an object"},
        BadSpec{R"({"scaleTargetRef": {"name": "Web_1"}, "autoscaling": {"maxReplicas": 2}})",
                "spec.scaleTargetRef.name", "must be an object name"},
        BadSpec{R"({"scaleTargetRef": {"name": "web", "kind": "StatefulSet"},
                    "autoscaling": {"maxReplicas": 2}})",
                "spec.scaleTargetRef.apiVersion", "required when kind is given"},
        BadSpec{R"({"scaleTargetRef": {"name": "web", "apiVersion": "apps/v1"},
                    "autoscaling": {"maxReplicas": 2}})",
                "spec.scaleTargetRef.kind", "required when apiVersion is given"},
        BadSpec{R"({"scaleTargetRef": {"name": "web"}})", "spec.autoscaling.maxReplicas",
                "required when autoscaling is enabled"},
        BadSpec{R"({"autoscaling": {"enabled": "yes"}})", "spec.autoscaling.enabled",
                "must be a boolean"},
        BadSpec{R"({"autoscaling": {"minReplicas": -1}})", "spec.autoscaling.minReplicas",
                "must be at least 0, got -1"},
        BadSpec{R"({"autoscaling": {"minReplicas": 5, "maxReplicas": 2}})",
                "spec.autoscaling.minReplicas", "must be at most maxReplicas (2), got 5"},
        BadSpec{R"({"autoscaling": {"maxReplicas": 0}})", "spec.autoscaling.maxReplicas",
                "must be at least 1, got 0"},
        BadSpec{R"({"autoscaling": {"maxReplicas": 8, "initialReplicas": 9}})",
                "spec.autoscaling.initialReplicas",
                "must be between minReplicas (1) and maxReplicas (8), got 9"},
        BadSpec{R"({"autoscaling": {"minReplicas": 2, "initialReplicas": 1}})",
                "spec.autoscaling.initialReplicas", "must be at least minReplicas (2), got 1"},
        BadSpec{R"({"autoscaling": {"targetOngoingRequests": "16"}})",
                "spec.autoscaling.targetOngoingRequests", "must be a number"},
        BadSpec{R"({"autoscaling": {"targetOngoingRequests": 0}})",
                "spec.autoscaling.targetOngoingRequests", "must be greater than 0, got 0"},
        BadSpec{R"({"autoscaling": {"upscaleDelaySeconds": -1}})",
                "spec.autoscaling.upscaleDelaySeconds", "must be at least 0, got -1"},
        BadSpec{R"({"autoscaling": {"downscaleToZeroDelaySeconds": 1e9}})",
                "spec.autoscaling.downscaleToZeroDelaySeconds", "must be at most 604800"},
        BadSpec{R"({"autoscaling": {"upscalingFactor": 0}})", "spec.autoscaling.upscalingFactor",
                "must be greater than 0, got 0"},
        BadSpec{R"({"autoscaling": {"downscalingFactor": -0.5}})",
                "spec.autoscaling.downscalingFactor", "must be greater than 0, got -0.5"},
        BadSpec{R"({"autoscaling": {"lookBackPeriodSeconds": 0}})",
                "spec.autoscaling.lookBackPeriodSeconds", "must be greater than 0"},
        BadSpec{R"({"autoscaling": {"drainTimeoutSeconds": -1}})",
                "spec.autoscaling.drainTimeoutSeconds", "must be at least 0"},
        BadSpec{R"({"autoscaling": {"mode": "apply"}})", "spec.autoscaling.mode",
                "must be one of Apply, Recommend, got \"apply\""},
        BadSpec{R"({"routing": {"strategy": "Fastest"}})", "spec.routing.strategy",
                "must be one of RoundRobin, LeastBusy, LatencyWeighted, JouleWeighted, "
                "CarbonWeighted, got \"Fastest\""},
        BadSpec{R"({"routing": {"strategy": "CarbonWeighted"}})", "spec.carbon",
                "a source (static, configMapRef or carbonAwareSdk) is required when "
                "routing.strategy is CarbonWeighted"},
        BadSpec{R"({"routing": {"sessionAffinity": []}})", "spec.routing.sessionAffinity",
                "must be an object"},
        BadSpec{R"({"routing": {"sessionAffinity": {"ttlSeconds": 0}}})",
                "spec.routing.sessionAffinity.ttlSeconds", "must be at least 1, got 0"},
        BadSpec{R"({"routing": {"sessionAffinity": {"header": "x session"}}})",
                "spec.routing.sessionAffinity.header", "must be an HTTP header name"},
        BadSpec{R"({"routing": {"sessionAffinity": {"maxSessions": 0}}})",
                "spec.routing.sessionAffinity.maxSessions", "must be at least 1, got 0"},
        BadSpec{R"({"routing": {"prefixAffinity": {"blockSizeTokens": 0}}})",
                "spec.routing.prefixAffinity.blockSizeTokens", "must be at least 1, got 0"},
        BadSpec{R"({"routing": {"prefixAffinity": {"enabled": 1}}})",
                "spec.routing.prefixAffinity.enabled", "must be a boolean"},
        BadSpec{R"({"routing": {"prefixAffinity": {"loadMargin": -0.5}}})",
                "spec.routing.prefixAffinity.loadMargin", "must be at least 0, got -0.5"},
        BadSpec{R"({"routing": {"prefixAffinity": {"loadMargin": 10.5}}})",
                "spec.routing.prefixAffinity.loadMargin", "must be at most 10, got 10.5"},
        BadSpec{R"({"routing": {"prefixAffinity": {"loadMargin": "0.5"}}})",
                "spec.routing.prefixAffinity.loadMargin", "must be a number"},
        BadSpec{R"({"routing": {"admission": {"maxQueue": -1}}})",
                "spec.routing.admission.maxQueue", "must be at least 0, got -1"},
        BadSpec{R"({"routing": {"admission": {"queueTimeoutSeconds": 7200}}})",
                "spec.routing.admission.queueTimeoutSeconds", "must be at most 3600, got 7200"},
        BadSpec{R"({"routing": {"admission": {"maxRequestTokens": 100000001}}})",
                "spec.routing.admission.maxRequestTokens",
                "must be at most 100000000, got 100000001"},
        BadSpec{R"({"routing": {"admission": {"maxRequestTokens": -1}}})",
                "spec.routing.admission.maxRequestTokens", "must be at least 0, got -1"},
        BadSpec{R"({"routing": {"defaultPromptTokens": 0}})", "spec.routing.defaultPromptTokens",
                "must be at least 1, got 0"},
        BadSpec{R"({"routing": {"defaultExpectedTokens": 0}})",
                "spec.routing.defaultExpectedTokens", "must be at least 1, got 0"},
        BadSpec{R"({"routing": {"maxConcurrencyPerWorker": 0}})",
                "spec.routing.maxConcurrencyPerWorker", "must be at least 1, got 0"},
        BadSpec{R"({"routing": {"publishIntervalSeconds": 0}})",
                "spec.routing.publishIntervalSeconds", "must be at least 1, got 0"},
        BadSpec{R"({"energy": {"source": "dcgm"}})", "spec.energy.source",
                "must be one of Auto, DCGM, Kepler, Static, got \"dcgm\""},
        BadSpec{R"({"energy": {"source": "Static"}})", "spec.energy.profiles",
                "required when source is Static"},
        BadSpec{R"({"energy": {"profiles": {}}})", "spec.energy.profiles", "must be an array"},
        BadSpec{R"({"energy": {"exporter": "dcgm-exporter"}})", "spec.energy.exporter",
                "must be an object"},
        BadSpec{R"({"energy": {"exporter": {"port": 9400}}})", "spec.energy.exporter.selector",
                "required"},
        BadSpec{R"({"energy": {"exporter": {"selector": {"matchLabels": {"app": "dcgm"}}}}})",
                "spec.energy.exporter.port", "required"},
        BadSpec{R"({"energy": {"exporter": {"selector": {}, "port": 9400}}})",
                "spec.energy.exporter.selector", "must select something"},
        BadSpec{R"({"energy": {"exporter": {"selector": {"matchLabels": {"app": "dcgm"}},
                    "port": 0}}})",
                "spec.energy.exporter.port", "must be between 1 and 65535, got 0"},
        BadSpec{R"({"energy": {"exporter": {"selector": {"matchLabels": {"app": "dcgm"}},
                    "port": 9400, "namespace": "GPU_Operator"}}})",
                "spec.energy.exporter.namespace", "must be a namespace name"},
        BadSpec{R"({"energy": {"exporter": {"selector": {"matchLabels": {"app": "dcgm"}},
                    "port": 9400, "path": "metrics"}}})",
                "spec.energy.exporter.path", "must be a URL path"},
        BadSpec{R"({"energy": {"source": "Static", "exporter": {
                    "selector": {"matchLabels": {"app": "dcgm"}}, "port": 9400}, "profiles": [
                    {"accelerator": "A", "idleWatts": 1, "maxWatts": 2, "maxTokensPerSecond": 5}]}})",
                "spec.energy.exporter", "must not be set when source is Static"},
        BadSpec{R"({"energy": {"profiles": [{"accelerator": "A100", "idleWatts": 300,
                    "maxWatts": 200, "maxTokensPerSecond": 10}]}})",
                "spec.energy.profiles[0].maxWatts", "must be at least idleWatts (300), got 200"},
        BadSpec{R"({"energy": {"profiles": [{"accelerator": "A100", "idleWatts": 30,
                    "maxWatts": 200}]}})",
                "spec.energy.profiles[0].maxTokensPerSecond", "required"},
        BadSpec{R"({"energy": {"profiles": [{"accelerator": "A100", "idleWatts": 30,
                    "maxWatts": 200, "maxTokensPerSecond": 0}]}})",
                "spec.energy.profiles[0].maxTokensPerSecond", "must be greater than 0, got 0"},
        BadSpec{R"({"energy": {"profiles": [{"accelerator": "NVIDIA A100", "idleWatts": 30,
                    "maxWatts": 200, "maxTokensPerSecond": 5}]}})",
                "spec.energy.profiles[0].accelerator", "must be a label value"},
        BadSpec{R"({"energy": {"profiles": [
                    {"accelerator": "A", "idleWatts": 1, "maxWatts": 2, "maxTokensPerSecond": 5},
                    {"accelerator": "A", "idleWatts": 1, "maxWatts": 2, "maxTokensPerSecond": 5}]}})",
                "spec.energy.profiles[1].accelerator", "duplicate accelerator \"A\""},
        BadSpec{R"({"carbon": {"zoneLabel": "bad label!"}})", "spec.carbon.zoneLabel",
                "must be a label key"},
        BadSpec{R"({"carbon": {"maxStaleSeconds": 604801}})", "spec.carbon.maxStaleSeconds",
                "must be at most 604800, got 604801"},
        BadSpec{R"({"carbon": {"maxStaleSeconds": "1h"}})", "spec.carbon.maxStaleSeconds",
                "must be an integer"},
        BadSpec{R"({"carbon": {"static": {"eu-west-1": -5}}})", "spec.carbon.static[eu-west-1]",
                "must be at least 0, got -5"},
        BadSpec{R"({"carbon": {"static": {"eu-west-1": "low"}}})", "spec.carbon.static[eu-west-1]",
                "must be a number"},
        BadSpec{R"({"carbon": {"static": {"bad zone": 5}}})", "spec.carbon.static[bad zone]",
                "must be a zone"},
        BadSpec{R"({"carbon": {"static": [1, 2]}})", "spec.carbon.static", "must be an object"},
        BadSpec{R"({"carbon": {"configMapRef": {}}})", "spec.carbon.configMapRef.name", "required"},
        BadSpec{R"({"carbon": {"carbonAwareSdk": {"url": "ftp://carbon"}}})",
                "spec.carbon.carbonAwareSdk.url", "must be an http:// or https:// URL"},
        BadSpec{R"({"carbon": {"static": {"a": 1}, "configMapRef": {"name": "zones"}}})",
                "spec.carbon", "at most one of static, configMapRef and carbonAwareSdk"}));

TEST(ParseInferencePool, EnablingAutoscalingWithoutATargetNamesBothFieldsInOrder) {
  const InferencePool pool = ParseWith(json::parse(R"({"autoscaling": {"enabled": true}})"));
  EXPECT_THAT(pool.errors,
              ElementsAre(FieldError{"spec.scaleTargetRef", "required when autoscaling is enabled"},
                          FieldError{"spec.autoscaling.maxReplicas",
                                     "required when autoscaling is enabled"}));
}

TEST(ParseInferencePool, ErrorsComeInFieldOrder) {
  const InferencePool pool = ParseWith(json::parse(R"({
    "carbon": {"zoneLabel": 5},
    "targetPort": 0,
    "routing": {"admission": {"maxQueue": "x"}, "strategy": 1},
    "engine": "x",
    "metrics": {"timeoutSeconds": 0, "path": 1},
    "selector": {"matchLabels": {"a": 1}}})"));
  EXPECT_THAT(
      Fields(pool.errors),
      ElementsAre("spec.selector.matchLabels[a]", "spec.targetPort", "spec.engine",
                  "spec.metrics.path", "spec.metrics.timeoutSeconds", "spec.routing.strategy",
                  "spec.routing.admission.maxQueue", "spec.carbon.zoneLabel"));
}

TEST(ParseInferencePool, CrossFieldRulesWaitForReadableFields) {
  // minReplicas > maxReplicas is not reported while a field is unreadable: that field holds its
  // default, and rules on it would report what the object does not say.
  const InferencePool pool = ParseWith(
      json::parse(R"({"targetPort": "x", "autoscaling": {"minReplicas": 5, "maxReplicas": 2}})"));
  EXPECT_THAT(pool.errors, ElementsAre(FieldError{"spec.targetPort", "must be an integer"}));
}

TEST(ParseInferencePool, FieldsInErrorHoldTheirDefaults) {
  const InferencePool pool = ParseWith(json::parse(
      R"({"engine": "foo", "metrics": {"intervalSeconds": 0}, "routing": {"strategy": 3}})"));
  EXPECT_EQ(pool.errors.size(), 3U);
  EXPECT_EQ(pool.spec.engine, Engine::kVllm);
  EXPECT_EQ(pool.spec.metrics.interval_seconds, 5);
  EXPECT_EQ(pool.spec.routing.strategy, Strategy::kJouleWeighted);
}

TEST(ParseInferencePool, IntegralNumbersWithAFractionAreIntegers) {
  // The API server's schema validation takes 8000.0 as an integer; so do we.
  const InferencePool pool = ParseWith(
      json::parse(R"({"targetPort": 8000.0, "routing": {"admission": {"maxQueue": 10.0}}})"));
  EXPECT_TRUE(pool.errors.empty());
  EXPECT_EQ(pool.spec.target_port, 8000);
  EXPECT_EQ(pool.spec.routing.admission.max_queue, 10);
}

TEST(ParseInferencePool, NumbersBeyondAnyTypeAreRangeErrors) {
  EXPECT_THAT(
      ParseWith(json{{"targetPort", 1e300}}).errors,
      ElementsAre(FieldError{"spec.targetPort", "must be between 1 and 65535, got 1e+300"}));
  EXPECT_THAT(ParseWith(json{{"targetPort", std::numeric_limits<std::uint64_t>::max()}}).errors,
              ElementsAre(FieldError{"spec.targetPort",
                                     "must be between 1 and 65535, got 18446744073709551615"}));
  EXPECT_THAT(ParseWith(json{{"autoscaling", {{"maxReplicas", 4294967296}}}}).errors,
              ElementsAre(FieldError{"spec.autoscaling.maxReplicas",
                                     "must be at most 2147483647, got 4294967296"}));
  EXPECT_THAT(ParseWith(json{{"routing", {{"sessionAffinity", {{"ttlSeconds", -1e30}}}}}}).errors,
              ElementsAre(FieldError{"spec.routing.sessionAffinity.ttlSeconds",
                                     "must be at least 1, got -1e+30"}));
}

TEST(ParseInferencePool, HugeListsAreRefusedWithoutReadingThem) {
  json models = json::array();
  json profiles = json::array();
  json zones = json::object();
  for (int i = 0; i < 100000; ++i) {
    models.push_back("m" + std::to_string(i));
    profiles.push_back("not even an object");
    zones["z" + std::to_string(i)] = "not a number";
  }
  const InferencePool pool = ParseWith(json{
      {"models", models}, {"energy", {{"profiles", profiles}}}, {"carbon", {{"static", zones}}}});
  EXPECT_THAT(
      pool.errors,
      ElementsAre(FieldError{"spec.models", "must have at most 64 entries, got 100000"},
                  FieldError{"spec.energy.profiles", "must have at most 64 entries, got 100000"},
                  FieldError{"spec.carbon.static", "must have at most 1024 entries, got 100000"}));
  EXPECT_TRUE(pool.spec.models.empty());
}

TEST(ParseInferencePool, HugeStringsAreRefusedAndNotQuotedWhole) {
  std::string huge;
  huge.resize(10'000'000, 'x');
  const InferencePool pool =
      ParseWith(json{{"models", {huge}}, {"engine", huge}, {"metrics", {{"path", "/" + huge}}}});
  ASSERT_EQ(pool.errors.size(), 3U);
  EXPECT_EQ(pool.errors[0].ToString(),
            "spec.models[0]: must be at most 253 characters, got 10000000");
  EXPECT_THAT(pool.errors[1].message, HasSubstr("\"..."));
  EXPECT_LT(pool.errors[1].message.size(), 200U);
  EXPECT_EQ(pool.errors[2].ToString(),
            "spec.metrics.path: must be at most 1024 characters, got 10000001");
}

TEST(ParseInferencePool, AtMost32ErrorsTheLastSayingHowManyMore) {
  json expressions = json::array();
  for (int i = 0; i < 60; ++i) expressions.push_back({{"key", "k"}, {"operator", "Near"}});
  const InferencePool pool = ParseWith(json{{"selector", {{"matchExpressions", expressions}}}});
  ASSERT_EQ(pool.errors.size(), 32U);
  EXPECT_EQ(pool.errors[30].field, "spec.selector.matchExpressions[30].operator");
  EXPECT_EQ(pool.errors[31], (FieldError{"spec", "29 more errors not listed"}));
}

TEST(ParseInferencePool, UnknownFieldsAreIgnored) {
  const InferencePool pool = ParseWith(json::parse(
      R"({"replicas": 3, "routing": {"turbo": true, "sessionAffinity": {"sticky": 1}},
          "metrics": {"scheme": "https"}})"));
  EXPECT_TRUE(pool.errors.empty());
}

TEST(ParseInferencePool, NullIsAbsent) {
  const InferencePool pool =
      ParseWith(json::parse(R"({"engine": null, "metrics": null, "routing": {"strategy": null}})"));
  EXPECT_TRUE(pool.errors.empty());
  EXPECT_EQ(pool.spec.engine, Engine::kVllm);
}

TEST(ParseInferencePool, EveryEnumValueReadsAndPrintsAsTheCrdSpellsIt) {
  for (const char* engine : {"vllm", "sglang", "trtllm", "generic"}) {
    json patch = {{"engine", engine}};
    if (std::string_view(engine) == "generic") patch["metrics"]["names"]["running"] = "running";
    const InferencePool pool = ParseWith(patch);
    EXPECT_TRUE(pool.errors.empty());
    EXPECT_EQ(ToString(pool.spec.engine), engine);
  }
  for (const char* strategy :
       {"RoundRobin", "LeastBusy", "LatencyWeighted", "JouleWeighted", "CarbonWeighted"}) {
    const InferencePool pool = ParseWith(
        json{{"routing", {{"strategy", strategy}}}, {"carbon", {{"static", {{"eu", 100}}}}}});
    EXPECT_TRUE(pool.errors.empty()) << strategy;
    EXPECT_EQ(StrategyName(pool.spec.routing.strategy), strategy);
  }
  EXPECT_EQ(ToString(MetricsAccess::kApiServerProxy), "APIServerProxy");
  EXPECT_EQ(ToString(ScalingMode::kRecommend), "Recommend");
  EXPECT_EQ(ToString(EnergySource::kDcgm), "DCGM");
  EXPECT_EQ(ToString(EnergySource::kKepler), "Kepler");
}

TEST(ParseInferencePool, AFullSpec) {
  const InferencePool pool = ParseWith(json::parse(R"({
    "models": ["llama-3-8b", "llama-3-70b"],
    "engine": "trtllm",
    "metrics": {"port": 9090, "path": "/prom", "intervalSeconds": 10, "timeoutSeconds": 10,
                "access": "APIServerProxy"},
    "scaleTargetRef": {"apiVersion": "ray.io/v1", "kind": "RayService", "name": "llama"},
    "autoscaling": {"minReplicas": 0, "maxReplicas": 16, "initialReplicas": 2,
                    "targetOngoingRequests": 24.5, "upscaleDelaySeconds": 10,
                    "downscaleDelaySeconds": 300, "downscaleToZeroDelaySeconds": 1800,
                    "upscalingFactor": 2, "downscalingFactor": 0.5,
                    "lookBackPeriodSeconds": 60, "drainTimeoutSeconds": 30, "mode": "Recommend"},
    "routing": {"strategy": "LeastBusy",
                "sessionAffinity": {"enabled": false, "header": "X-Chat-Id", "ttlSeconds": 60,
                                    "maxSessions": 5000},
                "prefixAffinity": {"enabled": false, "blockSizeTokens": 32, "maxBlocks": 100,
                                   "loadMargin": 1.5},
                "admission": {"kvBlockBudget": false, "maxQueue": 0, "queueTimeoutSeconds": 0.5,
                              "maxRequestTokens": 32768},
                "defaultPromptTokens": 1024, "defaultExpectedTokens": 128,
                "maxConcurrencyPerWorker": 64, "publishIntervalSeconds": 30,
                "publishThreshold": 125},
    "energy": {"source": "Kepler",
               "exporter": {"namespace": "kepler", "port": 9102, "path": "/kepler",
                            "selector": {"matchLabels": {"app.kubernetes.io/name": "kepler"}}},
               "profiles": [
      {"accelerator": "NVIDIA-H100-80GB-HBM3", "idleWatts": 70, "maxWatts": 700,
       "maxTokensPerSecond": 4000}]},
    "carbon": {"zoneLabel": "topology.kubernetes.io/zone",
               "carbonAwareSdk": {"url": "http://carbon-aware-sdk.carbon:8080"},
               "maxStaleSeconds": 900}})"));
  ASSERT_TRUE(pool.errors.empty()) << pool.errors.front().ToString();
  const InferencePoolSpec& s = pool.spec;
  EXPECT_THAT(s.models, ElementsAre("llama-3-8b", "llama-3-70b"));
  EXPECT_EQ(s.engine, Engine::kTrtllm);
  EXPECT_EQ(s.metrics.port, 9090);
  EXPECT_EQ(s.metrics.path, "/prom");
  EXPECT_EQ(s.metrics.interval_seconds, 10);
  EXPECT_EQ(s.metrics.timeout_seconds, 10);
  EXPECT_EQ(s.metrics.access, MetricsAccess::kApiServerProxy);
  ASSERT_TRUE(s.scale_target_ref);
  EXPECT_EQ(s.scale_target_ref->api_version, "ray.io/v1");
  EXPECT_EQ(s.scale_target_ref->kind, "RayService");
  EXPECT_EQ(s.scale_target_ref->name, "llama");
  EXPECT_TRUE(s.autoscaling.enabled);
  EXPECT_EQ(s.autoscaling.min_replicas, 0);
  EXPECT_EQ(s.autoscaling.max_replicas, 16);
  EXPECT_EQ(s.autoscaling.initial_replicas, 2);
  EXPECT_EQ(s.autoscaling.target_ongoing_requests, 24.5);
  EXPECT_EQ(s.autoscaling.upscale_delay_seconds, 10);
  EXPECT_EQ(s.autoscaling.downscale_delay_seconds, 300);
  EXPECT_EQ(s.autoscaling.downscale_to_zero_delay_seconds, 1800);
  EXPECT_EQ(s.autoscaling.upscaling_factor, 2);
  EXPECT_EQ(s.autoscaling.downscaling_factor, 0.5);
  EXPECT_EQ(s.autoscaling.look_back_period_seconds, 60);
  EXPECT_EQ(s.autoscaling.drain_timeout_seconds, 30);
  EXPECT_EQ(s.autoscaling.mode, ScalingMode::kRecommend);
  EXPECT_EQ(s.routing.strategy, Strategy::kLeastBusy);
  EXPECT_FALSE(s.routing.session_affinity.enabled);
  EXPECT_EQ(s.routing.session_affinity.header, "X-Chat-Id");
  EXPECT_EQ(s.routing.session_affinity.ttl_seconds, 60);
  EXPECT_EQ(s.routing.session_affinity.max_sessions, 5000);
  EXPECT_FALSE(s.routing.prefix_affinity.enabled);
  EXPECT_EQ(s.routing.prefix_affinity.block_size_tokens, 32);
  EXPECT_EQ(s.routing.prefix_affinity.max_blocks, 100);
  EXPECT_EQ(s.routing.prefix_affinity.load_margin, 1.5);
  EXPECT_FALSE(s.routing.admission.kv_block_budget);
  EXPECT_EQ(s.routing.admission.max_queue, 0);
  EXPECT_EQ(s.routing.admission.queue_timeout_seconds, 0.5);
  EXPECT_EQ(s.routing.admission.max_request_tokens, 32768);
  EXPECT_EQ(s.routing.default_prompt_tokens, 1024);
  EXPECT_EQ(s.routing.default_expected_tokens, 128);
  EXPECT_EQ(s.routing.max_concurrency_per_worker, 64);
  EXPECT_EQ(s.routing.publish_interval_seconds, 30);
  EXPECT_EQ(s.routing.publish_threshold, 125);
  EXPECT_EQ(s.energy.source, EnergySource::kKepler);
  ASSERT_TRUE(s.energy.exporter);
  EXPECT_EQ(s.energy.exporter->namespace_name, "kepler");
  EXPECT_EQ(
      s.energy.exporter->selector,
      LabelSelector({{"app.kubernetes.io/name", LabelRequirement::Operator::kIn, {"kepler"}}}));
  EXPECT_EQ(s.energy.exporter->port, 9102);
  EXPECT_EQ(s.energy.exporter->path, "/kepler");
  ASSERT_EQ(s.energy.profiles.size(), 1U);
  EXPECT_EQ(s.energy.profiles[0].accelerator, "NVIDIA-H100-80GB-HBM3");
  EXPECT_EQ(s.energy.profiles[0].energy.idle_watts, 70);
  EXPECT_EQ(s.energy.profiles[0].energy.max_watts, 700);
  EXPECT_EQ(s.energy.profiles[0].energy.max_tokens_per_second, 4000);
  EXPECT_EQ(s.carbon.zone_label, "topology.kubernetes.io/zone");
  ASSERT_TRUE(s.carbon.carbon_aware_sdk);
  EXPECT_EQ(s.carbon.carbon_aware_sdk->url, "http://carbon-aware-sdk.carbon:8080");
  EXPECT_EQ(s.carbon.max_stale_seconds, 900);
  EXPECT_TRUE(s.carbon.has_source());
}

TEST(ParseInferencePool, AGenericEnginesMetricNames) {
  const InferencePool pool = ParseWith(json::parse(R"({"engine": "generic", "metrics": {"names": {
    "running": "llm:active", "waiting": "llm:queued", "kvCacheUsage": "llm_kv_used_ratio",
    "promptTokens": "llm_prompt_tokens_total", "generationTokens": "llm_output_tokens_total"}}})"));
  ASSERT_TRUE(pool.errors.empty()) << pool.errors.front().ToString();
  EXPECT_EQ(pool.spec.metrics.names, (MetricNames{.running = "llm:active",
                                                  .waiting = "llm:queued",
                                                  .kv_cache_usage = "llm_kv_used_ratio",
                                                  .prompt_tokens = "llm_prompt_tokens_total",
                                                  .generation_tokens = "llm_output_tokens_total"}));
}

TEST(ParseInferencePool, ReadsTheStatus) {
  json object = Minimal();
  object["status"] = json::parse(R"({"observedGeneration": 6, "readyWorkers": 3,
    "conditions": [{"type": "Ready", "status": "True", "reason": "Serving", "message": "3 ready",
                    "lastTransitionTime": "2026-11-30T10:00:00Z", "observedGeneration": 6}]})");
  const InferencePool pool = ParseInferencePool(object);
  EXPECT_EQ(pool.status.observed_generation, 6);
  EXPECT_EQ(pool.status.ready_workers, 3);
  const Condition* ready = FindCondition(pool.status.conditions, kConditionReady);
  ASSERT_NE(ready, nullptr);
  EXPECT_EQ(ready->reason, "Serving");

  object["status"] = "garbage";
  EXPECT_EQ(ParseInferencePool(object).status, InferencePoolStatus{});
}

}  // namespace
}  // namespace eoc::api
