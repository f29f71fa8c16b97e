#include "api/spec_parser.h"

#include <optional>
#include <set>
#include <string>

#include "api/defaults.h"
#include "api/enum_names.h"
#include "api/json_reader.h"
#include "api/spec_rules.h"
#include "common/text.h"

namespace eoc::api::internal {
namespace {

using nlohmann::json;

std::string Index(const std::string& path, std::size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

void ParseModels(const ObjectReader& spec, std::vector<std::string>& models,
                 std::vector<FieldError>& errors) {
  const json* list = spec.Array("models", rules::kMaxModels);
  if (list == nullptr) return;
  std::set<std::string> seen;
  for (std::size_t i = 0; i < list->size(); ++i) {
    const std::string path = Index(spec.Path("models"), i);
    std::optional<std::string> model = ReadString((*list)[i], rules::kModelName, path, errors);
    if (!model) continue;
    if (!seen.insert(*model).second) {
      errors.push_back({path, "duplicate model " + Quoted(*model)});
      continue;
    }
    models.push_back(std::move(*model));
  }
}

// Returns whether `port` was given.
bool ParseMetrics(const ObjectReader& metrics, MetricsSpec& out) {
  const bool port_given = metrics.Get("port") != nullptr;
  metrics.Int("port", out.port, rules::kPort);
  metrics.String("path", out.path, rules::kMetricsPath);
  metrics.Int("intervalSeconds", out.interval_seconds, rules::kMetricsSeconds);
  metrics.Int("timeoutSeconds", out.timeout_seconds, rules::kMetricsSeconds);
  metrics.Enum("access", out.access, kMetricsAccessNames);
  const ObjectReader names = metrics.Object("names");
  names.String("running", out.names.running, rules::kMetricName);
  names.String("waiting", out.names.waiting, rules::kMetricName);
  names.String("kvCacheUsage", out.names.kv_cache_usage, rules::kMetricName);
  names.String("promptTokens", out.names.prompt_tokens, rules::kMetricName);
  names.String("generationTokens", out.names.generation_tokens, rules::kMetricName);
  return port_given;
}

void ParseScaleTargetRef(const ObjectReader& spec, std::optional<ScaleTargetRef>& out,
                         std::vector<FieldError>& errors) {
  if (spec.Get("scaleTargetRef") == nullptr) return;
  const std::size_t before = errors.size();
  const ObjectReader ref = spec.Object("scaleTargetRef");
  if (errors.size() != before) return;  // not an object
  ScaleTargetRef target;
  ref.String("apiVersion", target.api_version, rules::kApiVersion);
  ref.String("kind", target.kind, rules::kKind);
  if (ref.Require("name")) ref.String("name", target.name, rules::kObjectName);
  out = std::move(target);
}

void ParseAutoscaling(const ObjectReader& a, AutoscalingSpec& out, GivenFields& given) {
  given.autoscaling_enabled = a.Get("enabled") != nullptr;
  a.Bool("enabled", out.enabled);
  a.Int("minReplicas", out.min_replicas, rules::kMinReplicas);
  a.Int("maxReplicas", out.max_replicas, rules::kMaxReplicas);
  a.Int("initialReplicas", out.initial_replicas, rules::kInitialReplicas);
  a.Number("targetOngoingRequests", out.target_ongoing_requests, rules::kTargetOngoingRequests);
  a.Number("upscaleDelaySeconds", out.upscale_delay_seconds, rules::kDelaySeconds);
  a.Number("downscaleDelaySeconds", out.downscale_delay_seconds, rules::kDelaySeconds);
  given.downscale_to_zero_delay_seconds = a.Get("downscaleToZeroDelaySeconds") != nullptr;
  a.Number("downscaleToZeroDelaySeconds", out.downscale_to_zero_delay_seconds,
           rules::kDelaySeconds);
  a.Number("upscalingFactor", out.upscaling_factor, rules::kFactor);
  a.Number("downscalingFactor", out.downscaling_factor, rules::kFactor);
  a.Number("lookBackPeriodSeconds", out.look_back_period_seconds, rules::kLookBackPeriodSeconds);
  a.Number("drainTimeoutSeconds", out.drain_timeout_seconds, rules::kDrainTimeoutSeconds);
  a.Enum("mode", out.mode, kScalingModeNames);
}

void ParseRouting(const ObjectReader& r, RoutingSpec& out) {
  r.Enum("strategy", out.strategy, kStrategyNames);
  const ObjectReader session = r.Object("sessionAffinity");
  session.Bool("enabled", out.session_affinity.enabled);
  session.String("header", out.session_affinity.header, rules::kHeader);
  session.Int("ttlSeconds", out.session_affinity.ttl_seconds, rules::kTtlSeconds);
  session.Int("maxSessions", out.session_affinity.max_sessions, rules::kMaxSessions);
  const ObjectReader prefix = r.Object("prefixAffinity");
  prefix.Bool("enabled", out.prefix_affinity.enabled);
  prefix.Int("blockSizeTokens", out.prefix_affinity.block_size_tokens, rules::kBlockSizeTokens);
  prefix.Int("maxBlocks", out.prefix_affinity.max_blocks, rules::kMaxBlocks);
  prefix.Number("loadMargin", out.prefix_affinity.load_margin, rules::kLoadMargin);
  const ObjectReader admission = r.Object("admission");
  admission.Bool("kvBlockBudget", out.admission.kv_block_budget);
  admission.Int("maxQueue", out.admission.max_queue, rules::kMaxQueue);
  admission.Number("queueTimeoutSeconds", out.admission.queue_timeout_seconds,
                   rules::kQueueTimeoutSeconds);
  admission.Int("maxRequestTokens", out.admission.max_request_tokens, rules::kMaxRequestTokens);
  r.Int("defaultPromptTokens", out.default_prompt_tokens, rules::kTokens);
  r.Int("defaultExpectedTokens", out.default_expected_tokens, rules::kTokens);
  r.Int("maxConcurrencyPerWorker", out.max_concurrency_per_worker, rules::kMaxConcurrency);
  r.Int("publishIntervalSeconds", out.publish_interval_seconds, rules::kPublishIntervalSeconds);
  r.Int("publishThreshold", out.publish_threshold, rules::kPublishThreshold);
}

// An optional object at `key` of `parent`: `read(reader, value)` fills `value` (from `initial`)
// from its fields, and `out` is set to it when the object is given and reads without errors. One
// that is not an object is reported once, and its fields read as absent.
template <class T, class Read>
void ParseOptionalObject(const ObjectReader& parent, std::string_view key, T initial,
                         const Read& read, std::optional<T>& out, std::vector<FieldError>& errors) {
  if (parent.Get(key) == nullptr) return;
  const std::size_t before = errors.size();
  read(parent.Object(key), initial);
  if (errors.size() == before) out = std::move(initial);
}

// `energy.exporter`.
void ParseExporter(const ObjectReader& e, std::optional<EnergyExporterSpec>& out,
                   std::vector<FieldError>& errors) {
  const auto read = [&errors](const ObjectReader& x, EnergyExporterSpec& exporter) {
    x.String("namespace", exporter.namespace_name, rules::kNamespace);
    if (x.Require("selector")) {
      exporter.selector = ParseLabelSelector(*x.Get("selector"), x.Path("selector"), errors);
    }
    if (x.Require("port")) x.Int("port", exporter.port, rules::kPort);
    x.String("path", exporter.path, rules::kMetricsPath);
  };
  ParseOptionalObject(e, "exporter",
                      EnergyExporterSpec{.path = std::string(defaults::kMetricsPath)}, read, out,
                      errors);
}

void ParseEnergy(const ObjectReader& e, EnergySpec& out, std::vector<FieldError>& errors) {
  e.Enum("source", out.source, kEnergySourceNames);
  ParseExporter(e, out.exporter, errors);
  const json* profiles = e.Array("profiles", rules::kMaxProfiles);
  if (profiles == nullptr) return;
  std::set<std::string> seen;
  for (std::size_t i = 0; i < profiles->size(); ++i) {
    const std::size_t before = errors.size();
    const ObjectReader p(&(*profiles)[i], Index(e.Path("profiles"), i), errors);
    AcceleratorProfile profile;
    EnergyProfile& energy = profile.energy;
    if (p.Require("accelerator")) p.String("accelerator", profile.accelerator, rules::kAccelerator);
    if (p.Require("idleWatts")) p.Number("idleWatts", energy.idle_watts, rules::kWatts);
    if (p.Require("maxWatts")) p.Number("maxWatts", energy.max_watts, rules::kWatts);
    if (p.Require("maxTokensPerSecond")) {
      p.Number("maxTokensPerSecond", energy.max_tokens_per_second, rules::kTokensPerSecond);
    }
    if (errors.size() != before) continue;
    if (!seen.insert(profile.accelerator).second) {
      p.Error("accelerator", "duplicate accelerator " + Quoted(profile.accelerator));
      continue;
    }
    out.profiles.push_back(std::move(profile));
  }
}

// A carbon source given as an object with one required string field ({name} or {url}): set when
// it reads without errors.
template <class Source>
void ParseCarbonSource(const ObjectReader& c, std::string_view key, std::string_view field,
                       const StringRule& rule, std::string Source::*member,
                       std::optional<Source>& out, std::vector<FieldError>& errors) {
  const auto read = [&](const ObjectReader& source, Source& value) {
    if (source.Require(field)) source.String(field, value.*member, rule);
  };
  ParseOptionalObject(c, key, Source{}, read, out, errors);
}

void ParseCarbon(const ObjectReader& c, CarbonSpec& out, std::vector<FieldError>& errors) {
  c.String("zoneLabel", out.zone_label, rules::kZoneLabel);
  if (const json* zones = c.Get("static")) {
    const std::string path = c.Path("static");
    if (!zones->is_object()) {
      errors.push_back({path, "must be an object"});
    } else if (zones->size() > rules::kMaxStaticZones) {
      errors.push_back({path, "must have at most " + std::to_string(rules::kMaxStaticZones) +
                                  " entries, got " + std::to_string(zones->size())});
    } else {
      for (const auto& [zone, value] : zones->items()) {
        const std::string zone_path = KeyPath(path, zone);
        const std::size_t before = errors.size();
        (void)ReadString(json(zone), rules::kZone, zone_path, errors);
        const std::optional<double> intensity =
            ReadNumber(value, rules::kCarbonIntensity, zone_path, errors);
        if (errors.size() == before) out.static_intensity[zone] = *intensity;
      }
    }
  }
  ParseCarbonSource(c, "configMapRef", "name", rules::kObjectName, &ConfigMapKeyRef::name,
                    out.config_map_ref, errors);
  ParseCarbonSource(c, "carbonAwareSdk", "url", rules::kUrl, &CarbonAwareSdkSpec::url,
                    out.carbon_aware_sdk, errors);
  c.Int("maxStaleSeconds", out.max_stale_seconds, rules::kMaxStaleSeconds);
}

}  // namespace

InferencePoolSpec ParseSpec(const json* spec_json, std::vector<FieldError>& errors) {
  InferencePoolSpec spec = DefaultSpec();
  GivenFields given;
  const ObjectReader spec_reader(spec_json, "spec", errors);
  if (spec_reader.Require("selector")) {
    spec.selector = ParseLabelSelector(*spec_reader.Get("selector"), "spec.selector", errors);
  }
  if (spec_reader.Require("targetPort")) {
    spec_reader.Int("targetPort", spec.target_port, rules::kPort);
  }
  ParseModels(spec_reader, spec.models, errors);
  spec_reader.Enum("engine", spec.engine, kEngineNames);
  given.metrics_port = ParseMetrics(spec_reader.Object("metrics"), spec.metrics);
  ParseScaleTargetRef(spec_reader, spec.scale_target_ref, errors);
  ParseAutoscaling(spec_reader.Object("autoscaling"), spec.autoscaling, given);
  ParseRouting(spec_reader.Object("routing"), spec.routing);
  ParseEnergy(spec_reader.Object("energy"), spec.energy, errors);
  ParseCarbon(spec_reader.Object("carbon"), spec.carbon, errors);
  ApplyDependentDefaults(given, spec);
  return spec;
}

}  // namespace eoc::api::internal
