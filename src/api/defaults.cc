#include "api/defaults.h"

#include <cmath>
#include <vector>

#include "api/enum_names.h"

namespace eoc::api {
namespace {

using internal::EnumToString;
using internal::NamesInProse;

std::string Text(bool value) { return value ? "true" : "false"; }
std::string Text(std::int64_t value) { return std::to_string(value); }
std::string Text(std::int32_t value) { return std::to_string(value); }
std::string Text(std::string_view value) { return std::string(value); }
// A number of seconds or requests: "30", "0.5".
std::string Number(double value) {
  if (std::trunc(value) == value) return std::to_string(static_cast<std::int64_t>(value));
  return nlohmann::json(value).dump();
}
// A factor, always with a fraction: "1.0".
std::string Decimal(double value) { return nlohmann::json(value).dump(); }

std::string Code(std::string_view text) { return "`" + std::string(text) + "`"; }

std::vector<DefaultRow> MakeTable() {
  using namespace defaults;  // NOLINT(google-build-using-namespace): the table reads better
  const std::string neither =
      " when neither " + Code("apiVersion") + " nor " + Code("kind") + " is given";
  return {
      {"engine", Text(EnumToString(kEngine, internal::kEngineNames)), true,
       NamesInProse(internal::kEngineNames) + ": picks the metric names"},
      {"metrics.port", "= " + Code("targetPort"), false, ""},
      {"metrics.path", Text(kMetricsPath), true, ""},
      {"metrics.intervalSeconds", Text(kMetricsIntervalSeconds), true, ""},
      {"metrics.timeoutSeconds", Text(kMetricsTimeoutSeconds), true,
       "at most " + Code("intervalSeconds")},
      {"metrics.access", Text(EnumToString(kMetricsAccess, internal::kMetricsAccessNames)), true,
       Code("Direct") + " to the pod IP, or " + Code("APIServerProxy") + " through " +
           Code("pods/proxy")},
      {"scaleTargetRef.apiVersion", Code(kScaleTargetApiVersion) + neither, false, ""},
      {"scaleTargetRef.kind", Code(kScaleTargetKind) + neither, false, ""},
      {"autoscaling.enabled",
       Code("true") + " when " + Code("scaleTargetRef") + " is set, else " + Code("false"), false,
       Code("maxReplicas") + " is required when enabled"},
      {"autoscaling.minReplicas", Text(kMinReplicas), true, ""},
      {"autoscaling.targetOngoingRequests", Number(kTargetOngoingRequests), true,
       "concurrent requests per worker"},
      {"autoscaling.upscaleDelaySeconds", Number(kUpscaleDelaySeconds), true, ""},
      {"autoscaling.downscaleDelaySeconds", Number(kDownscaleDelaySeconds), true, ""},
      {"autoscaling.downscaleToZeroDelaySeconds", "= " + Code("downscaleDelaySeconds"), false, ""},
      {"autoscaling.upscalingFactor", Decimal(kUpscalingFactor), true, ""},
      {"autoscaling.downscalingFactor", Decimal(kDownscalingFactor), true, ""},
      {"autoscaling.lookBackPeriodSeconds", Number(kLookBackPeriodSeconds), true, ""},
      {"autoscaling.drainTimeoutSeconds", Number(kDrainTimeoutSeconds), true,
       "how long a scale-in waits for the drained workers' requests"},
      {"autoscaling.mode", Text(EnumToString(kScalingMode, internal::kScalingModeNames)), true,
       Code("Recommend") + " decides and reports without writing " + Code("/scale")},
      {"routing.strategy", Text(EnumToString(kStrategy, internal::kStrategyNames)), true,
       NamesInProse(internal::kStrategyNames)},
      {"routing.sessionAffinity.enabled", Text(kSessionAffinityEnabled), true, ""},
      {"routing.sessionAffinity.header", Text(kSessionHeader), true, ""},
      {"routing.sessionAffinity.ttlSeconds", Text(kSessionTtlSeconds), true, ""},
      {"routing.sessionAffinity.maxSessions", Text(kMaxSessions), true, ""},
      {"routing.prefixAffinity.enabled", Text(kPrefixAffinityEnabled), true, ""},
      {"routing.prefixAffinity.blockSizeTokens", Text(kBlockSizeTokens), true, ""},
      {"routing.prefixAffinity.maxBlocks", Text(kMaxBlocks), true,
       "within the pool's share of `--max-prefix-blocks-total`"},
      {"routing.prefixAffinity.loadMargin", Decimal(kPrefixLoadMargin), true,
       "how much busier than the strategy's choice a prefix match may be"},
      {"routing.admission.kvBlockBudget", Text(kKvBlockBudget), true, ""},
      {"routing.admission.maxQueue", Text(kMaxQueue), true, ""},
      {"routing.admission.queueTimeoutSeconds", Number(kQueueTimeoutSeconds), true, ""},
      {"routing.admission.maxRequestTokens", Text(kMaxRequestTokens), true,
       "the most prompt plus expected tokens a pick may ask for (more: 400); 0: as many as the "
       "largest worker's KV cache holds"},
      {"routing.defaultPromptTokens", Text(kDefaultPromptTokens), true, "when a pick does not say"},
      {"routing.defaultExpectedTokens", Text(kDefaultExpectedTokens), true,
       "when a pick does not say"},
      {"routing.publishIntervalSeconds", Text(kPublishIntervalSeconds), true,
       "longest wait before a moved weight is published"},
      {"routing.publishThreshold", Text(kPublishThreshold), true,
       "how far (of 1000) a weight must move to be published again"},
      {"energy.source", Text(EnumToString(kEnergySource, internal::kEnergySourceNames)), true,
       NamesInProse(internal::kEnergySourceNames)},
      {"energy.exporter.namespace", "the pool's namespace", false, ""},
      {"energy.exporter.path", Code(kMetricsPath) + " when " + Code("exporter") + " is given",
       false, ""},
      {"carbon.zoneLabel", Text(kCarbonZoneLabel), true, "the worker's node label naming its zone"},
      {"carbon.maxStaleSeconds", Text(kCarbonMaxStaleSeconds), true,
       "how long a failing source's last value is used"},
  };
}

}  // namespace

std::span<const DefaultRow> DefaultsTable() {
  static const std::vector<DefaultRow> table = MakeTable();
  return table;
}

std::string DefaultsMarkdown() {
  std::string out = "| field of `spec` | default | notes |\n| --- | --- | --- |\n";
  for (const DefaultRow& row : DefaultsTable()) {
    out += "| " + Code(row.field) + " | " + (row.constant ? Code(row.value) : row.value) + " |" +
           (row.note.empty() ? "" : " " + row.note) + " |\n";
  }
  return out;
}

InferencePoolSpec DefaultSpec() {
  using namespace defaults;  // NOLINT(google-build-using-namespace)
  InferencePoolSpec spec;
  spec.engine = kEngine;
  spec.metrics = {.port = 0,
                  .path = std::string(kMetricsPath),
                  .interval_seconds = kMetricsIntervalSeconds,
                  .timeout_seconds = kMetricsTimeoutSeconds,
                  .access = kMetricsAccess};
  spec.autoscaling = {.enabled = false,
                      .min_replicas = kMinReplicas,
                      .target_ongoing_requests = kTargetOngoingRequests,
                      .upscale_delay_seconds = kUpscaleDelaySeconds,
                      .downscale_delay_seconds = kDownscaleDelaySeconds,
                      .downscale_to_zero_delay_seconds = kDownscaleDelaySeconds,
                      .upscaling_factor = kUpscalingFactor,
                      .downscaling_factor = kDownscalingFactor,
                      .look_back_period_seconds = kLookBackPeriodSeconds,
                      .drain_timeout_seconds = kDrainTimeoutSeconds,
                      .mode = kScalingMode};
  spec.routing = {
      .strategy = kStrategy,
      .session_affinity = {.enabled = kSessionAffinityEnabled,
                           .header = std::string(kSessionHeader),
                           .ttl_seconds = kSessionTtlSeconds,
                           .max_sessions = kMaxSessions},
      .prefix_affinity = {.enabled = kPrefixAffinityEnabled,
                          .block_size_tokens = kBlockSizeTokens,
                          .max_blocks = kMaxBlocks,
                          .load_margin = kPrefixLoadMargin},
      .admission = {.kv_block_budget = kKvBlockBudget,
                    .max_queue = kMaxQueue,
                    .queue_timeout_seconds = kQueueTimeoutSeconds,
                    .max_request_tokens = kMaxRequestTokens},
      .default_prompt_tokens = kDefaultPromptTokens,
      .default_expected_tokens = kDefaultExpectedTokens,
      .publish_interval_seconds = kPublishIntervalSeconds,
      .publish_threshold = kPublishThreshold,
  };
  spec.energy.source = kEnergySource;
  spec.carbon.zone_label = std::string(kCarbonZoneLabel);
  spec.carbon.max_stale_seconds = kCarbonMaxStaleSeconds;
  return spec;
}

void ApplyDependentDefaults(const GivenFields& given, InferencePoolSpec& spec) {
  if (!given.metrics_port) spec.metrics.port = spec.target_port;
  if (!given.autoscaling_enabled) spec.autoscaling.enabled = spec.scale_target_ref.has_value();
  if (!given.downscale_to_zero_delay_seconds) {
    spec.autoscaling.downscale_to_zero_delay_seconds = spec.autoscaling.downscale_delay_seconds;
  }
  if (spec.scale_target_ref && spec.scale_target_ref->api_version.empty() &&
      spec.scale_target_ref->kind.empty()) {
    spec.scale_target_ref->api_version = std::string(defaults::kScaleTargetApiVersion);
    spec.scale_target_ref->kind = std::string(defaults::kScaleTargetKind);
  }
}

}  // namespace eoc::api
