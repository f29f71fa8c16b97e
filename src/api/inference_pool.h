// The InferencePool API (eoc.dev/v1alpha1): the spec with every default applied, the status the
// leader publishes, and their JSON mapping. Pure: no I/O, nothing of the Kubernetes client.
//
//   eoc::api::InferencePool pool = eoc::api::ParseInferencePool(object);  // never throws for a
//   if (!pool.errors.empty()) {                                           // bad spec: errors
//     // SpecValid=False, message pool.errors.front().ToString():
//     // "spec.autoscaling.maxReplicas: required when autoscaling is enabled"
//   }
//   nlohmann::json status = eoc::api::ToJson(pool.status);
//
// Every default, including those that depend on other fields, comes from the one table in
// defaults.h.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/label_selector.h"
#include "common/routing_terms.h"

namespace eoc::api {

// The routing words this API shares with the routing engine, defined once (routing_terms.h).
using eoc::Accelerator;
using eoc::EnergyProfile;
using eoc::Strategy;

inline constexpr std::string_view kGroup = "eoc.dev";
inline constexpr std::string_view kVersion = "v1alpha1";
inline constexpr std::string_view kApiVersion = "eoc.dev/v1alpha1";
inline constexpr std::string_view kKind = "InferencePool";
inline constexpr std::string_view kPlural = "inferencepools";

// Pod annotations that override the spec for one worker (the annotation always wins).
inline constexpr std::string_view kModelsAnnotation = "eoc.dev/models";
inline constexpr std::string_view kMaxConcurrencyAnnotation = "eoc.dev/max-concurrency";

// The most workers a published routing table lists; past it, a condition says so.
inline constexpr std::size_t kMaxRoutingTableWorkers = 2000;

enum class Engine : std::uint8_t { kVllm, kSglang, kTrtllm, kGeneric };
enum class MetricsAccess : std::uint8_t { kDirect, kApiServerProxy };
enum class ScalingMode : std::uint8_t { kApply, kRecommend };
enum class EnergySource : std::uint8_t { kAuto, kDcgm, kKepler, kStatic };

// The names as they are written in the CRD ("vllm", "APIServerProxy", ...); the strategy's is
// StrategyName (common/routing_terms.h).
std::string_view ToString(Engine value);
std::string_view ToString(MetricsAccess value);
std::string_view ToString(ScalingMode value);
std::string_view ToString(EnergySource value);

// `metrics.names`: the series a `generic` engine's page is read by, as Prometheus names them
// (empty: not read). `running` is required for `generic`; the names are refused for the other
// engines, whose names are known.
struct MetricNames {
  std::string running;            // requests in the running batch (a gauge)
  std::string waiting;            // requests queued (a gauge)
  std::string kv_cache_usage;     // the fraction of the KV cache in use, 0 to 1 (a gauge)
  std::string prompt_tokens;      // prompt tokens processed (a counter)
  std::string generation_tokens;  // tokens generated (a counter)

  bool empty() const {
    return running.empty() && waiting.empty() && kv_cache_usage.empty() && prompt_tokens.empty() &&
           generation_tokens.empty();
  }
  bool operator==(const MetricNames&) const = default;
};

struct MetricsSpec {
  std::int32_t port = 0;  // defaults to targetPort
  std::string path;
  std::int32_t interval_seconds = 0;
  std::int32_t timeout_seconds = 0;
  MetricsAccess access = MetricsAccess::kDirect;
  MetricNames names;

  // How often each worker is scraped: intervalSeconds, at least a second (an unset one, 0, reads
  // as 1).
  std::chrono::seconds Interval() const {
    return std::chrono::seconds(std::max(1, interval_seconds));
  }
};

struct ScaleTargetRef {
  std::string api_version;  // "apps/v1"
  std::string kind;         // "Deployment"
  std::string name;
};

struct AutoscalingSpec {
  bool enabled = false;
  std::int32_t min_replicas = 0;
  std::optional<std::int32_t> max_replicas;  // required when enabled
  std::optional<std::int32_t> initial_replicas;
  double target_ongoing_requests = 0;
  double upscale_delay_seconds = 0;
  double downscale_delay_seconds = 0;
  double downscale_to_zero_delay_seconds = 0;
  double upscaling_factor = 0;
  double downscaling_factor = 0;
  double look_back_period_seconds = 0;
  // How long a scale-in waits for the workers it drains to finish their requests.
  double drain_timeout_seconds = 0;
  ScalingMode mode = ScalingMode::kApply;
};

struct SessionAffinitySpec {
  bool enabled = false;
  std::string header;
  std::int64_t ttl_seconds = 0;
  std::int64_t max_sessions = 0;
};

struct PrefixAffinitySpec {
  bool enabled = false;
  std::int32_t block_size_tokens = 0;
  std::int64_t max_blocks = 0;
  // How much busier (in busyness: 1.0 is one worker's full concurrency) than the strategy's
  // choice the worker holding the longest matching prefix may be and still take the request.
  double load_margin = 0;
};

struct AdmissionSpec {
  bool kv_block_budget = false;
  std::int32_t max_queue = 0;
  double queue_timeout_seconds = 0;
  // The most tokens (prompt plus expected) a pick may ask for; 0: as many as the largest worker's
  // KV cache holds.
  std::int32_t max_request_tokens = 0;
};

struct RoutingSpec {
  Strategy strategy = Strategy::kJouleWeighted;
  SessionAffinitySpec session_affinity;
  PrefixAffinitySpec prefix_affinity;
  AdmissionSpec admission;
  std::int32_t default_prompt_tokens = 0;
  std::int32_t default_expected_tokens = 0;
  std::optional<std::int32_t> max_concurrency_per_worker;
  std::int32_t publish_interval_seconds = 0;
  // How far (of 1000) some worker's weight must move from the published table before the table
  // is published again; membership and draining changes are published regardless.
  std::int32_t publish_threshold = 0;
};

// One entry of `energy.profiles`: the power figures of one accelerator, named by a node's
// `nvidia.com/gpu.product` or by a class (AcceleratorName: "GPU", "CPU", ...).
struct AcceleratorProfile {
  std::string accelerator;
  EnergyProfile energy;

  bool operator==(const AcceleratorProfile&) const = default;
};

// `energy.exporter`: the node exporters (dcgm-exporter, Kepler) that run as a DaemonSet, one pod
// a node; a worker whose own page has no power series is read from the one on its node.
struct EnergyExporterSpec {
  std::string namespace_name;  // empty: the pool's namespace
  LabelSelector selector;      // the exporter pods; never empty
  std::int32_t port = 0;
  std::string path;  // /metrics when not given, as dcgm-exporter and Kepler serve it

  bool operator==(const EnergyExporterSpec&) const = default;
};

struct EnergySpec {
  EnergySource source = EnergySource::kAuto;
  std::optional<EnergyExporterSpec> exporter;
  std::vector<AcceleratorProfile> profiles;
};

struct ConfigMapKeyRef {
  std::string name;  // in the pool's namespace; each key a zone, each value gCO2e/kWh
};

struct CarbonAwareSdkSpec {
  std::string url;  // base URL of a Carbon Aware SDK WebAPI
};

struct CarbonSpec {
  std::string zone_label;
  std::map<std::string, double> static_intensity;  // `static`: zone -> gCO2e/kWh
  std::optional<ConfigMapKeyRef> config_map_ref;
  std::optional<CarbonAwareSdkSpec> carbon_aware_sdk;
  // How long a zone's last good intensity from configMapRef or carbonAwareSdk is still used once
  // the source stops giving one (deleted, unreachable, an invalid value); then the zone is
  // unknown, as if it had no value, and the CarbonIntensityAvailable condition says why.
  std::int32_t max_stale_seconds = 0;

  bool has_source() const {
    return !static_intensity.empty() || config_map_ref.has_value() || carbon_aware_sdk.has_value();
  }
};

struct InferencePoolSpec {
  LabelSelector selector;
  std::int32_t target_port = 0;
  std::vector<std::string> models;  // empty: any model
  Engine engine = Engine::kVllm;
  MetricsSpec metrics;
  std::optional<ScaleTargetRef> scale_target_ref;
  AutoscalingSpec autoscaling;
  RoutingSpec routing;
  EnergySpec energy;
  CarbonSpec carbon;
};

// One condition of status.conditions.
struct Condition {
  std::string type;    // "Ready", "MetricsAvailable", "ScalingActive", "SpecValid", ...
  std::string status;  // "True", "False", "Unknown"
  std::string reason;
  std::string message;
  std::string last_transition_time;  // RFC 3339
  std::int64_t observed_generation = 0;

  bool operator==(const Condition&) const = default;
};

inline constexpr std::string_view kConditionReady = "Ready";
inline constexpr std::string_view kConditionMetricsAvailable = "MetricsAvailable";
inline constexpr std::string_view kConditionScalingActive = "ScalingActive";
// Only for a pool with a carbon source (spec.carbon): whether every worker's zone has an intensity.
inline constexpr std::string_view kConditionCarbonIntensityAvailable = "CarbonIntensityAvailable";
inline constexpr std::string_view kConditionSpecValid = "SpecValid";

// One worker of the published routing table.
struct RoutingWorker {
  std::string pod;          // pod name (the pool's namespace)
  std::string address;      // "podIP:targetPort"
  std::int32_t weight = 0;  // 0-1000
  bool draining = false;
  std::int64_t kv_blocks = 0;
  std::int32_t block_size = 0;
  std::vector<std::string> models;

  bool operator==(const RoutingWorker&) const = default;
};

struct RoutingTable {
  std::string strategy;  // as StrategyName
  std::int64_t generation = 0;
  std::vector<RoutingWorker> workers;  // sorted by pod name, at most kMaxRoutingTableWorkers

  bool operator==(const RoutingTable&) const = default;
};

struct InferencePoolStatus {
  std::int64_t observed_generation = 0;
  std::int32_t ready_workers = 0;
  std::optional<std::int32_t> desired_replicas;
  std::string last_scale_time;  // RFC 3339, "" when never scaled
  std::vector<Condition> conditions;
  std::optional<RoutingTable> routing;

  bool operator==(const InferencePoolStatus&) const = default;
};

// A field that is wrong, and why: "spec.targetPort: must be between 1 and 65535, got 0".
struct FieldError {
  std::string field;  // "spec.autoscaling.maxReplicas"
  std::string message;

  std::string ToString() const { return field + ": " + message; }
  bool operator==(const FieldError&) const = default;
};

// An InferencePool as the controller keeps it in its cache.
struct InferencePool {
  std::string ns;
  std::string name;
  std::string uid;
  std::int64_t generation = 0;
  // The spec with every default applied. When `errors` is not empty, the fields in error hold
  // their defaults and the pool must not be acted on.
  InferencePoolSpec spec;
  // Schema errors, or when there are none the cross-field errors of Validate(), in field order
  // and without repeats; at most 32, the last of a longer list saying how many more there were.
  std::vector<FieldError> errors;
  InferencePoolStatus status;  // as last read from the API server
};

// Reads an InferencePool object. Throws std::invalid_argument only when the document has no
// metadata.name (it cannot be keyed); any spec problem, a wrong type included, lands in `errors`.
// An unreadable status reads as empty.
InferencePool ParseInferencePool(const nlohmann::json& object);

// The cross-field rules the CRD schema cannot express, on a spec whose fields each passed the
// schema: minReplicas <= maxReplicas, maxReplicas when autoscaling is on, a carbon source for
// CarbonWeighted, ports in range, a non-empty selector, ... (and each field's bounds again, for a
// spec built in code). ParseInferencePool calls it when every field passed the schema: a field in
// error holds its default, about which cross-field rules would report what the object does not
// say.
std::vector<FieldError> Validate(const InferencePoolSpec& spec);

// The `status` object as the CRD's schema describes it (the whole of it; fields that are unset
// are left out).
nlohmann::json ToJson(const InferencePoolStatus& status);
// The reverse; fields of the wrong type are ignored.
InferencePoolStatus ParseStatus(const nlohmann::json& status);

// Sets `condition` in `conditions` (by type), keeping the existing lastTransitionTime when the
// status ("True"/"False") did not change, and using `now` (RFC 3339) when it did or is new.
void SetCondition(std::vector<Condition>& conditions, Condition condition, const std::string& now);
const Condition* FindCondition(const std::vector<Condition>& conditions, std::string_view type);

}  // namespace eoc::api
