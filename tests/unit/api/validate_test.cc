// Validate() on specs built in code: the parser's single-field rules again, and the cross-field
// rules, in field order.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "api/defaults.h"
#include "api/inference_pool.h"
#include "printers.h"

namespace eoc::api {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

InferencePoolSpec Good() {
  InferencePoolSpec s = DefaultSpec();
  s.selector = LabelSelector({{"app", LabelRequirement::Operator::kIn, {"chat"}}});
  s.target_port = 8000;
  ApplyDependentDefaults({}, s);
  return s;
}

std::vector<std::string> Fields(const std::vector<FieldError>& errors) {
  std::vector<std::string> fields;
  fields.reserve(errors.size());
  for (const FieldError& e : errors) fields.push_back(e.field);
  return fields;
}

TEST(Validate, TheDefaultsWithASelectorAndAPortAreValid) {
  EXPECT_THAT(Validate(Good()), IsEmpty());
}

TEST(Validate, AnEmptySpecNamesSelectorAndPorts) {
  EXPECT_THAT(Fields(Validate(DefaultSpec())),
              ElementsAre("spec.selector", "spec.targetPort", "spec.metrics.port"));
}

TEST(Validate, Autoscaling) {
  InferencePoolSpec s = Good();
  s.autoscaling.enabled = true;
  EXPECT_THAT(Validate(s),
              ElementsAre(FieldError{"spec.scaleTargetRef", "required when autoscaling is enabled"},
                          FieldError{"spec.autoscaling.maxReplicas",
                                     "required when autoscaling is enabled"}));
  s.scale_target_ref = ScaleTargetRef{"apps/v1", "Deployment", "chat"};
  s.autoscaling.max_replicas = 4;
  EXPECT_THAT(Validate(s), IsEmpty());
  s.autoscaling.min_replicas = 5;
  s.autoscaling.initial_replicas = 6;
  EXPECT_THAT(
      Validate(s),
      ElementsAre(
          FieldError{"spec.autoscaling.minReplicas", "must be at most maxReplicas (4), got 5"},
          FieldError{"spec.autoscaling.initialReplicas",
                     "must be between minReplicas (5) and maxReplicas (4), got 6"}));
  s.autoscaling.min_replicas = 0;
  s.autoscaling.initial_replicas = 0;
  EXPECT_THAT(Validate(s), IsEmpty());  // scale to zero is allowed
  s.autoscaling.max_replicas = 0;
  s.autoscaling.upscaling_factor = 0;
  s.autoscaling.downscale_to_zero_delay_seconds = -1;
  EXPECT_THAT(Fields(Validate(s)), ElementsAre("spec.autoscaling.maxReplicas",
                                               "spec.autoscaling.downscaleToZeroDelaySeconds",
                                               "spec.autoscaling.upscalingFactor"));
}

TEST(Validate, ScaleTargetRef) {
  InferencePoolSpec s = Good();
  s.scale_target_ref = ScaleTargetRef{"", "", ""};
  EXPECT_THAT(Validate(s), ElementsAre(FieldError{"spec.scaleTargetRef.name", "required"}));
  s.scale_target_ref = ScaleTargetRef{"apps/v1", "", "Not A Name"};
  EXPECT_THAT(Fields(Validate(s)),
              ElementsAre("spec.scaleTargetRef.kind", "spec.scaleTargetRef.name"));
}

TEST(Validate, MetricsTimeoutWithinTheInterval) {
  InferencePoolSpec s = Good();
  s.metrics.interval_seconds = 3;
  s.metrics.timeout_seconds = 3;
  EXPECT_THAT(Validate(s), IsEmpty());
  s.metrics.timeout_seconds = 4;
  EXPECT_THAT(Validate(s), ElementsAre(FieldError{"spec.metrics.timeoutSeconds",
                                                  "must be at most intervalSeconds (3), got 4"}));
}

TEST(Validate, RoutingBounds) {
  InferencePoolSpec s = Good();
  s.routing.session_affinity.ttl_seconds = 0;
  s.routing.session_affinity.header = "";
  s.routing.prefix_affinity.block_size_tokens = 0;
  s.routing.prefix_affinity.load_margin = -0.5;
  s.routing.admission.max_queue = -1;
  s.routing.admission.max_request_tokens = -1;
  s.routing.default_prompt_tokens = 0;
  s.routing.default_expected_tokens = 0;
  s.routing.max_concurrency_per_worker = 0;
  s.routing.publish_interval_seconds = 0;
  s.routing.publish_threshold = 1001;
  EXPECT_THAT(
      Validate(s),
      ElementsAre(
          FieldError{"spec.routing.sessionAffinity.header", "must not be empty"},
          FieldError{"spec.routing.sessionAffinity.ttlSeconds", "must be at least 1, got 0"},
          FieldError{"spec.routing.prefixAffinity.blockSizeTokens", "must be at least 1, got 0"},
          FieldError{"spec.routing.prefixAffinity.loadMargin", "must be at least 0, got -0.5"},
          FieldError{"spec.routing.admission.maxQueue", "must be at least 0, got -1"},
          FieldError{"spec.routing.admission.maxRequestTokens", "must be at least 0, got -1"},
          FieldError{"spec.routing.defaultPromptTokens", "must be at least 1, got 0"},
          FieldError{"spec.routing.defaultExpectedTokens", "must be at least 1, got 0"},
          FieldError{"spec.routing.maxConcurrencyPerWorker", "must be at least 1, got 0"},
          FieldError{"spec.routing.publishIntervalSeconds", "must be at least 1, got 0"},
          FieldError{"spec.routing.publishThreshold", "must be at most 1000, got 1001"}));
}

// metrics.names: for engine generic only, where `running` is required; each a metric name.
TEST(Validate, MetricNamesAreForTheGenericEngine) {
  InferencePoolSpec s = Good();
  s.metrics.names.running = "my_running";
  EXPECT_THAT(Validate(s), ElementsAre(FieldError{"spec.metrics.names",
                                                  "only read when engine is generic, got engine "
                                                  "vllm"}));
  s.engine = Engine::kGeneric;
  EXPECT_THAT(Validate(s), IsEmpty());
  s.metrics.names = {.waiting = "queue depth", .kv_cache_usage = "kv:usage"};
  EXPECT_THAT(
      Validate(s),
      ElementsAre(FieldError{"spec.metrics.names.running", "required when engine is generic"},
                  FieldError{"spec.metrics.names.waiting",
                             "must be a Prometheus metric name: [a-zA-Z_:][a-zA-Z0-9_:]*, got "
                             "\"queue depth\""}));
}

TEST(Validate, EnergyProfiles) {
  InferencePoolSpec s = Good();
  s.energy.source = EnergySource::kStatic;
  EXPECT_THAT(Validate(s),
              ElementsAre(FieldError{"spec.energy.profiles", "required when source is Static"}));
  s.energy.profiles = {{"A100", {50, 400, 2000}}, {"L4", {20, 10, 0}}};
  EXPECT_THAT(Validate(s), ElementsAre(FieldError{"spec.energy.profiles[1].maxWatts",
                                                  "must be at least idleWatts (20), got 10"},
                                       FieldError{"spec.energy.profiles[1].maxTokensPerSecond",
                                                  "must be greater than 0, got 0.0"}));
}

TEST(Validate, EnergyExporter) {
  InferencePoolSpec s = Good();
  s.energy.exporter = EnergyExporterSpec{.port = 70000, .path = "metrics"};
  EXPECT_THAT(Fields(Validate(s)),
              ElementsAre("spec.energy.exporter.selector", "spec.energy.exporter.port",
                          "spec.energy.exporter.path"));
  s.energy.exporter = EnergyExporterSpec{
      .namespace_name = "Bad_Namespace",
      .selector = LabelSelector({{"app", LabelRequirement::Operator::kExists, {}}}),
      .port = 9400,
      .path = "/metrics"};
  EXPECT_THAT(Fields(Validate(s)), ElementsAre("spec.energy.exporter.namespace"));
  s.energy.exporter->namespace_name = "";  // the pool's
  EXPECT_THAT(Validate(s), IsEmpty());
  s.energy.source = EnergySource::kStatic;
  s.energy.profiles = {{"A100", {50, 400, 2000}}};
  EXPECT_THAT(Validate(s),
              ElementsAre(FieldError{"spec.energy.exporter",
                                     "must not be set when source is Static, which reads no "
                                     "exporter"}));
}

TEST(Validate, CarbonSources) {
  InferencePoolSpec s = Good();
  s.routing.strategy = Strategy::kCarbonWeighted;
  EXPECT_THAT(Fields(Validate(s)), ElementsAre("spec.carbon"));
  s.carbon.static_intensity = {{"eu-north-1", 30}};
  EXPECT_THAT(Validate(s), IsEmpty());
  s.carbon.carbon_aware_sdk = CarbonAwareSdkSpec{"carbon.example"};
  EXPECT_THAT(
      Validate(s),
      ElementsAre(FieldError{"spec.carbon",
                             "at most one of static, configMapRef and "
                             "carbonAwareSdk may be set"},
                  FieldError{"spec.carbon.carbonAwareSdk.url",
                             "must be an http:// or https:// URL, got \"carbon.example\""}));
  s.carbon.static_intensity.clear();
  s.carbon.carbon_aware_sdk->url = "https://carbon.example";
  EXPECT_THAT(Validate(s), IsEmpty());
  s.carbon.carbon_aware_sdk.reset();
  s.carbon.config_map_ref = ConfigMapKeyRef{""};
  EXPECT_THAT(Validate(s),
              ElementsAre(FieldError{"spec.carbon.configMapRef.name", "must not be empty"}));
  s.carbon.config_map_ref.reset();
  s.carbon.static_intensity = {{"eu", -1}, {"", 1}};
  EXPECT_THAT(Fields(Validate(s)), ElementsAre("spec.carbon.static[]", "spec.carbon.static[eu]"));
  s.carbon.static_intensity = {{"eu", 1}};
  s.carbon.max_stale_seconds = -1;
  EXPECT_THAT(Validate(s),
              ElementsAre(FieldError{"spec.carbon.maxStaleSeconds", "must be at least 0, got -1"}));
}

TEST(Validate, Models) {
  InferencePoolSpec s = Good();
  s.models = {"llama", "bad model"};
  EXPECT_THAT(Fields(Validate(s)), ElementsAre("spec.models[1]"));
  s.models.assign(65, "m");
  EXPECT_THAT(Validate(s),
              ElementsAre(FieldError{"spec.models", "must have at most 64 entries, got 65"}));
}

}  // namespace
}  // namespace eoc::api
