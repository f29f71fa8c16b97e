// The defaults of InferencePool.spec, in one table: the constants the parser applies, the rules
// for the defaults that depend on other fields, and the same table as data, which the README shows
// and a unit test holds the CRD schema's `default`s to.
//
//   eoc::api::InferencePoolSpec spec = eoc::api::DefaultSpec();      // every constant default
//   ... read the fields the object sets ...
//   eoc::api::ApplyDependentDefaults({.metrics_port = false}, spec);  // metrics.port = targetPort
//
//   for (const eoc::api::DefaultRow& row : eoc::api::DefaultsTable()) ...
//   std::cout << eoc::api::DefaultsMarkdown();                        // the README's table
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "api/inference_pool.h"

namespace eoc::api {

// The constant defaults. Each value is written here once; the table below is made from these.
namespace defaults {
inline constexpr Engine kEngine = Engine::kVllm;
inline constexpr std::string_view kMetricsPath = "/metrics";
inline constexpr std::int32_t kMetricsIntervalSeconds = 5;
inline constexpr std::int32_t kMetricsTimeoutSeconds = 2;
inline constexpr MetricsAccess kMetricsAccess = MetricsAccess::kDirect;
inline constexpr std::string_view kScaleTargetApiVersion = "apps/v1";
inline constexpr std::string_view kScaleTargetKind = "Deployment";
inline constexpr std::int32_t kMinReplicas = 1;
inline constexpr double kTargetOngoingRequests = 8;
inline constexpr double kUpscaleDelaySeconds = 30;
inline constexpr double kDownscaleDelaySeconds = 600;
inline constexpr double kUpscalingFactor = 1.0;
inline constexpr double kDownscalingFactor = 1.0;
inline constexpr double kLookBackPeriodSeconds = 30;
inline constexpr double kDrainTimeoutSeconds = 120;
inline constexpr ScalingMode kScalingMode = ScalingMode::kApply;
inline constexpr Strategy kStrategy = Strategy::kJouleWeighted;
inline constexpr bool kSessionAffinityEnabled = true;
inline constexpr std::string_view kSessionHeader = "x-session-id";
inline constexpr std::int64_t kSessionTtlSeconds = 3600;
inline constexpr std::int64_t kMaxSessions = 1'000'000;
inline constexpr bool kPrefixAffinityEnabled = true;
inline constexpr std::int32_t kBlockSizeTokens = 16;
inline constexpr std::int64_t kMaxBlocks = 1'000'000;
inline constexpr double kPrefixLoadMargin = 0.25;
inline constexpr bool kKvBlockBudget = true;
inline constexpr std::int32_t kMaxQueue = 1000;
inline constexpr double kQueueTimeoutSeconds = 120;
inline constexpr std::int32_t kMaxRequestTokens = 0;  // as many as the largest worker holds
inline constexpr std::int32_t kDefaultPromptTokens = 512;
inline constexpr std::int32_t kDefaultExpectedTokens = 256;
inline constexpr std::int32_t kPublishIntervalSeconds = 10;
inline constexpr std::int32_t kPublishThreshold = 50;
inline constexpr EnergySource kEnergySource = EnergySource::kAuto;
inline constexpr std::string_view kCarbonZoneLabel = "topology.kubernetes.io/region";
// An hour: the SDK's data is hourly or 5-minutely and a grid's intensity moves by tens of percent
// over hours, so an hour-old value is still a fair guess (signals::kDefaultCarbonHold, which
// controller/carbon/ checks against this).
inline constexpr std::int32_t kCarbonMaxStaleSeconds = 3600;
}  // namespace defaults

// One default, as documentation and as data.
struct DefaultRow {
  std::string field;  // the path under spec, as JSON spells it: "metrics.intervalSeconds"
  // A constant as YAML writes it ("5", "1.0", "true", "/metrics"); for a default that depends on
  // other fields, how it follows from them (Markdown).
  std::string value;
  // True for a constant, which the CRD schema repeats as the field's `default`; false for one
  // that depends on other fields, which only the controller can apply.
  bool constant = true;
  std::string note;  // Markdown; may be empty
};

// Every default, in the order of the fields in DESIGN.md.
std::span<const DefaultRow> DefaultsTable();

// The table in Markdown, as the README shows it: a header row, then one row per default, each
// line ending in '\n'.
std::string DefaultsMarkdown();

// A spec holding every constant default (and nothing else: no selector, targetPort 0).
InferencePoolSpec DefaultSpec();

// Which of the fields whose defaults depend on others the object set itself.
struct GivenFields {
  bool metrics_port = false;
  bool autoscaling_enabled = false;
  bool downscale_to_zero_delay_seconds = false;
};

// Applies the defaults that depend on other fields, after the fields were read:
// metrics.port = targetPort; autoscaling.enabled = whether scaleTargetRef is set;
// downscaleToZeroDelaySeconds = downscaleDelaySeconds; scaleTargetRef apiVersion apps/v1 and kind
// Deployment when neither is given.
void ApplyDependentDefaults(const GivenFields& given, InferencePoolSpec& spec);

}  // namespace eoc::api
