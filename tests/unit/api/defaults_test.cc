// The defaults table: what the parser applies, the defaults that depend on other fields, and the
// table the README shows.
#include "api/defaults.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "api/inference_pool.h"
#include "common/yaml_json.h"
#include "files.h"

namespace eoc::api {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

json Minimal() {
  return json::parse(R"({"metadata": {"name": "chat"},
    "spec": {"selector": {"matchLabels": {"app": "chat"}}, "targetPort": 8000}})");
}

// Every field of a spec as JSON, so that two specs compare as a whole.
json Dump(const InferencePoolSpec& s) {
  json profiles = json::array();
  for (const AcceleratorProfile& p : s.energy.profiles) {
    profiles.push_back(
        {p.accelerator, p.energy.idle_watts, p.energy.max_watts, p.energy.max_tokens_per_second});
  }
  const auto& a = s.autoscaling;
  const auto& r = s.routing;
  json out = {
      {"selector", s.selector.ToString()},
      {"targetPort", s.target_port},
      {"models", s.models},
      {"engine", ToString(s.engine)},
      {"metrics",
       {s.metrics.port, s.metrics.path, s.metrics.interval_seconds, s.metrics.timeout_seconds,
        ToString(s.metrics.access)}},
      {"autoscaling",
       {a.enabled, a.min_replicas, a.max_replicas.value_or(-1), a.initial_replicas.value_or(-1),
        a.target_ongoing_requests, a.upscale_delay_seconds, a.downscale_delay_seconds,
        a.downscale_to_zero_delay_seconds, a.upscaling_factor, a.downscaling_factor,
        a.look_back_period_seconds, a.drain_timeout_seconds, ToString(a.mode)}},
      {"routing",
       {StrategyName(r.strategy), r.session_affinity.enabled, r.session_affinity.header,
        r.session_affinity.ttl_seconds, r.session_affinity.max_sessions, r.prefix_affinity.enabled,
        r.prefix_affinity.block_size_tokens, r.prefix_affinity.max_blocks,
        r.prefix_affinity.load_margin, r.admission.kv_block_budget, r.admission.max_queue,
        r.admission.queue_timeout_seconds, r.admission.max_request_tokens, r.default_prompt_tokens,
        r.default_expected_tokens, r.max_concurrency_per_worker.value_or(-1),
        r.publish_interval_seconds, r.publish_threshold}},
      {"energy", {ToString(s.energy.source), profiles}},
      {"carbon",
       {s.carbon.zone_label, s.carbon.static_intensity,
        s.carbon.config_map_ref ? s.carbon.config_map_ref->name : "-",
        s.carbon.carbon_aware_sdk ? s.carbon.carbon_aware_sdk->url : "-",
        s.carbon.max_stale_seconds}},
  };
  if (s.scale_target_ref) {
    out["scaleTargetRef"] = {s.scale_target_ref->api_version, s.scale_target_ref->kind,
                             s.scale_target_ref->name};
  }
  return out;
}

InferencePoolSpec ParseSpecOk(const json& object) {
  const InferencePool pool = ParseInferencePool(object);
  EXPECT_TRUE(pool.errors.empty()) << pool.errors.front().ToString();
  return pool.spec;
}

TEST(Defaults, AMinimalSpecGetsEveryDefault) {
  const InferencePoolSpec s = ParseSpecOk(Minimal());
  EXPECT_TRUE(s.models.empty());
  EXPECT_EQ(s.engine, Engine::kVllm);
  EXPECT_EQ(s.metrics.port, 8000);  // targetPort
  EXPECT_EQ(s.metrics.path, "/metrics");
  EXPECT_EQ(s.metrics.interval_seconds, 5);
  EXPECT_EQ(s.metrics.timeout_seconds, 2);
  EXPECT_EQ(s.metrics.access, MetricsAccess::kDirect);
  EXPECT_FALSE(s.scale_target_ref);
  EXPECT_FALSE(s.autoscaling.enabled);  // no scaleTargetRef
  EXPECT_EQ(s.autoscaling.min_replicas, 1);
  EXPECT_FALSE(s.autoscaling.max_replicas);
  EXPECT_FALSE(s.autoscaling.initial_replicas);
  EXPECT_EQ(s.autoscaling.target_ongoing_requests, 8);
  EXPECT_EQ(s.autoscaling.upscale_delay_seconds, 30);
  EXPECT_EQ(s.autoscaling.downscale_delay_seconds, 600);
  EXPECT_EQ(s.autoscaling.downscale_to_zero_delay_seconds, 600);
  EXPECT_EQ(s.autoscaling.upscaling_factor, 1.0);
  EXPECT_EQ(s.autoscaling.downscaling_factor, 1.0);
  EXPECT_EQ(s.autoscaling.look_back_period_seconds, 30);
  EXPECT_EQ(s.autoscaling.drain_timeout_seconds, 120);
  EXPECT_EQ(s.autoscaling.mode, ScalingMode::kApply);
  EXPECT_EQ(s.routing.strategy, Strategy::kJouleWeighted);
  EXPECT_TRUE(s.routing.session_affinity.enabled);
  EXPECT_EQ(s.routing.session_affinity.header, "x-session-id");
  EXPECT_EQ(s.routing.session_affinity.ttl_seconds, 3600);
  EXPECT_EQ(s.routing.session_affinity.max_sessions, 1'000'000);
  EXPECT_TRUE(s.routing.prefix_affinity.enabled);
  EXPECT_EQ(s.routing.prefix_affinity.block_size_tokens, 16);
  EXPECT_EQ(s.routing.prefix_affinity.max_blocks, 1'000'000);
  EXPECT_EQ(s.routing.prefix_affinity.load_margin, 0.25);
  EXPECT_TRUE(s.routing.admission.kv_block_budget);
  EXPECT_EQ(s.routing.admission.max_queue, 1000);
  EXPECT_EQ(s.routing.admission.queue_timeout_seconds, 120);
  EXPECT_EQ(s.routing.admission.max_request_tokens, 0);
  EXPECT_EQ(s.routing.default_prompt_tokens, 512);
  EXPECT_EQ(s.routing.default_expected_tokens, 256);
  EXPECT_FALSE(s.routing.max_concurrency_per_worker);
  EXPECT_EQ(s.routing.publish_interval_seconds, 10);
  EXPECT_EQ(s.routing.publish_threshold, 50);
  EXPECT_TRUE(s.metrics.names.empty());
  EXPECT_EQ(s.energy.source, EnergySource::kAuto);
  EXPECT_TRUE(s.energy.profiles.empty());
  EXPECT_EQ(s.carbon.zone_label, "topology.kubernetes.io/region");
  EXPECT_EQ(s.carbon.max_stale_seconds, 3600);
  EXPECT_FALSE(s.carbon.has_source());
  EXPECT_EQ(Dump(s), [] {
    InferencePoolSpec d = DefaultSpec();
    d.selector = LabelSelector({{"app", LabelRequirement::Operator::kIn, {"chat"}}});
    d.target_port = 8000;
    ApplyDependentDefaults({}, d);
    return Dump(d);
  }());
}

TEST(Defaults, SettingAConstantToItsDefaultChangesNothing) {
  // Each constant row, written into the object, gives the spec that leaving it out gives: the
  // table's text is the value the parser applies.
  const json defaulted = Dump(ParseSpecOk(Minimal()));
  int constants = 0;
  for (const DefaultRow& row : DefaultsTable()) {
    if (!row.constant) continue;
    ++constants;
    std::string pointer = "/spec/" + row.field;
    std::replace(pointer.begin(), pointer.end(), '.', '/');
    json object = Minimal();
    object[json::json_pointer(pointer)] = YamlToJson(YAML::Load(row.value));
    EXPECT_EQ(Dump(ParseSpecOk(object)), defaulted) << row.field << " = " << row.value;
  }
  EXPECT_EQ(constants, 34);
}

TEST(Defaults, MetricsPortFollowsTargetPortUnlessGiven) {
  json object = Minimal();
  object["spec"]["targetPort"] = 30000;
  EXPECT_EQ(ParseSpecOk(object).metrics.port, 30000);
  object["spec"]["metrics"] = {{"port", 9090}};
  EXPECT_EQ(ParseSpecOk(object).metrics.port, 9090);
}

TEST(Defaults, AutoscalingIsOnWhenThereIsATarget) {
  json object = Minimal();
  object["spec"]["scaleTargetRef"] = {{"name", "chat"}};
  object["spec"]["autoscaling"] = {{"maxReplicas", 4}};
  const InferencePoolSpec on = ParseSpecOk(object);
  EXPECT_TRUE(on.autoscaling.enabled);
  ASSERT_TRUE(on.scale_target_ref);
  // Only a name: apps/v1 Deployment.
  EXPECT_EQ(on.scale_target_ref->api_version, "apps/v1");
  EXPECT_EQ(on.scale_target_ref->kind, "Deployment");
  EXPECT_EQ(on.scale_target_ref->name, "chat");

  object["spec"]["autoscaling"]["enabled"] = false;
  EXPECT_FALSE(ParseSpecOk(object).autoscaling.enabled);

  object["spec"]["scaleTargetRef"] = {
      {"apiVersion", "apps/v1"}, {"kind", "StatefulSet"}, {"name", "chat"}};
  EXPECT_EQ(ParseSpecOk(object).scale_target_ref->kind, "StatefulSet");
}

TEST(Defaults, DownscaleToZeroDelayFollowsDownscaleDelayUnlessGiven) {
  json object = Minimal();
  object["spec"]["autoscaling"] = {{"downscaleDelaySeconds", 120}};
  EXPECT_EQ(ParseSpecOk(object).autoscaling.downscale_to_zero_delay_seconds, 120);
  object["spec"]["autoscaling"]["downscaleToZeroDelaySeconds"] = 0;
  EXPECT_EQ(ParseSpecOk(object).autoscaling.downscale_to_zero_delay_seconds, 0);
}

TEST(Defaults, AnExporterServesMetricsUnlessItsPathIsGiven) {
  json object = Minimal();
  EXPECT_FALSE(ParseSpecOk(object).energy.exporter);
  object["spec"]["energy"]["exporter"] = {
      {"selector", {{"matchLabels", {{"app.kubernetes.io/name", "dcgm-exporter"}}}}},
      {"port", 9400}};
  const std::optional<EnergyExporterSpec> exporter = ParseSpecOk(object).energy.exporter;
  ASSERT_TRUE(exporter);
  EXPECT_EQ(exporter->path, "/metrics");
  EXPECT_EQ(exporter->namespace_name, "");  // the pool's
  EXPECT_EQ(exporter->port, 9400);
  object["spec"]["energy"]["exporter"]["path"] = "/power";
  object["spec"]["energy"]["exporter"]["namespace"] = "gpu-operator";
  EXPECT_EQ(ParseSpecOk(object).energy.exporter->path, "/power");
  EXPECT_EQ(ParseSpecOk(object).energy.exporter->namespace_name, "gpu-operator");
}

TEST(DefaultsTable, OneRowPerFieldDependentOnesMarked) {
  std::set<std::string> fields;
  std::set<std::string> dependent;
  for (const DefaultRow& row : DefaultsTable()) {
    EXPECT_TRUE(fields.insert(row.field).second) << row.field;
    EXPECT_FALSE(row.value.empty()) << row.field;
    if (!row.constant) dependent.insert(row.field);
  }
  EXPECT_EQ(dependent, (std::set<std::string>{
                           "metrics.port", "scaleTargetRef.apiVersion", "scaleTargetRef.kind",
                           "autoscaling.enabled", "autoscaling.downscaleToZeroDelaySeconds",
                           "energy.exporter.namespace", "energy.exporter.path"}));
}

TEST(DefaultsMarkdown, OneLinePerRow) {
  const std::string md = DefaultsMarkdown();
  EXPECT_EQ(std::count(md.begin(), md.end(), '\n'),
            static_cast<std::ptrdiff_t>(DefaultsTable().size() + 2));
  EXPECT_TRUE(md.starts_with("| field of `spec` | default | notes |\n| --- | --- | --- |\n"));
  EXPECT_THAT(md, HasSubstr("| `engine` | `vllm` | `vllm`, `sglang`, `trtllm` or `generic`: "
                            "picks the metric names |\n"));
  EXPECT_THAT(md, HasSubstr("| `metrics.port` | = `targetPort` | |\n"));
  EXPECT_THAT(md, HasSubstr("| `autoscaling.upscalingFactor` | `1.0` | |\n"));
  EXPECT_THAT(md, HasSubstr("| `routing.sessionAffinity.maxSessions` | `1000000` | |\n"));
  EXPECT_THAT(md, HasSubstr("| `routing.prefixAffinity.loadMargin` | `0.25` | "));
  EXPECT_THAT(md, HasSubstr("| `carbon.zoneLabel` | `topology.kubernetes.io/region` |"));
}

TEST(DefaultsMarkdown, TheReadmeShowsTheTable) {
  const std::string readme = eoc::testing::ReadFile(EOC_README);
  EXPECT_NE(readme.find(DefaultsMarkdown()), std::string::npos)
      << EOC_README " must hold the defaults table exactly as DefaultsMarkdown() renders it:\n"
      << DefaultsMarkdown();
}

}  // namespace
}  // namespace eoc::api
