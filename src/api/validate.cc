// Validate(): the rules on a whole spec, in the order of its fields. The single-field bounds are
// checked again here (a spec built in code never met the parser) with the parser's own rules and
// messages; the cross-field rules are only here.
#include <string>

#include "api/enum_names.h"
#include "api/inference_pool.h"
#include "api/json_reader.h"
#include "api/spec_rules.h"

namespace eoc::api {
namespace {

using internal::IntRange;
using internal::NumberRange;
using internal::StringRule;
using nlohmann::json;

class Checker {
 public:
  explicit Checker(std::vector<FieldError>& errors) : errors_(errors) {}

  void Int(const std::string& field, std::int64_t value, const IntRange& range) const {
    (void)internal::ReadInt(json(value), range, field, errors_);
  }
  void Number(const std::string& field, double value, const NumberRange& range) const {
    (void)internal::ReadNumber(json(value), range, field, errors_);
  }
  void String(const std::string& field, const std::string& value, const StringRule& rule) const {
    (void)internal::ReadString(json(value), rule, field, errors_);
  }
  void Error(std::string field, std::string message) const {
    errors_.push_back({std::move(field), std::move(message)});
  }

 private:
  std::vector<FieldError>& errors_;
};

std::string Num(double value) { return internal::FormatNumber(value); }

void CheckMetricNames(Engine engine, const MetricNames& n, const Checker& check) {
  namespace rules = internal::rules;
  if (engine != Engine::kGeneric) {
    if (!n.empty()) {
      check.Error("spec.metrics.names",
                  "only read when engine is generic, got engine " + std::string(ToString(engine)));
    }
    return;
  }
  if (n.running.empty())
    check.Error("spec.metrics.names.running", "required when engine is generic");
  const auto name = [&](const char* field, const std::string& value) {
    if (!value.empty())
      check.String(std::string("spec.metrics.names.") + field, value, rules::kMetricName);
  };
  name("running", n.running);
  name("waiting", n.waiting);
  name("kvCacheUsage", n.kv_cache_usage);
  name("promptTokens", n.prompt_tokens);
  name("generationTokens", n.generation_tokens);
}

void CheckMetrics(const MetricsSpec& m, const Checker& check) {
  check.Int("spec.metrics.port", m.port, internal::rules::kPort);
  check.String("spec.metrics.path", m.path, internal::rules::kMetricsPath);
  check.Int("spec.metrics.intervalSeconds", m.interval_seconds, internal::rules::kMetricsSeconds);
  check.Int("spec.metrics.timeoutSeconds", m.timeout_seconds, internal::rules::kMetricsSeconds);
  if (m.timeout_seconds > m.interval_seconds) {
    check.Error("spec.metrics.timeoutSeconds", "must be at most intervalSeconds (" +
                                                   std::to_string(m.interval_seconds) + "), got " +
                                                   std::to_string(m.timeout_seconds));
  }
}

void CheckScaleTargetRef(const InferencePoolSpec& spec, const Checker& check) {
  if (!spec.scale_target_ref) {
    if (spec.autoscaling.enabled) {
      check.Error("spec.scaleTargetRef", "required when autoscaling is enabled");
    }
    return;
  }
  const ScaleTargetRef& ref = *spec.scale_target_ref;
  if (ref.api_version.empty() && !ref.kind.empty()) {
    check.Error("spec.scaleTargetRef.apiVersion", "required when kind is given");
  } else if (!ref.api_version.empty()) {
    check.String("spec.scaleTargetRef.apiVersion", ref.api_version, internal::rules::kApiVersion);
  }
  if (ref.kind.empty() && !ref.api_version.empty()) {
    check.Error("spec.scaleTargetRef.kind", "required when apiVersion is given");
  } else if (!ref.kind.empty()) {
    check.String("spec.scaleTargetRef.kind", ref.kind, internal::rules::kKind);
  }
  if (ref.name.empty()) {
    check.Error("spec.scaleTargetRef.name", "required");
  } else {
    check.String("spec.scaleTargetRef.name", ref.name, internal::rules::kObjectName);
  }
}

void CheckAutoscaling(const AutoscalingSpec& a, const Checker& check) {
  namespace rules = internal::rules;
  check.Int("spec.autoscaling.minReplicas", a.min_replicas, rules::kMinReplicas);
  if (a.max_replicas && a.min_replicas > *a.max_replicas) {
    check.Error("spec.autoscaling.minReplicas", "must be at most maxReplicas (" +
                                                    std::to_string(*a.max_replicas) + "), got " +
                                                    std::to_string(a.min_replicas));
  }
  if (a.max_replicas) {
    check.Int("spec.autoscaling.maxReplicas", *a.max_replicas, rules::kMaxReplicas);
  } else if (a.enabled) {
    check.Error("spec.autoscaling.maxReplicas", "required when autoscaling is enabled");
  }
  if (a.initial_replicas) {
    const std::int32_t initial = *a.initial_replicas;
    if (a.max_replicas && (initial < a.min_replicas || initial > *a.max_replicas)) {
      check.Error("spec.autoscaling.initialReplicas",
                  "must be between minReplicas (" + std::to_string(a.min_replicas) +
                      ") and maxReplicas (" + std::to_string(*a.max_replicas) + "), got " +
                      std::to_string(initial));
    } else if (initial < a.min_replicas) {
      check.Error("spec.autoscaling.initialReplicas", "must be at least minReplicas (" +
                                                          std::to_string(a.min_replicas) +
                                                          "), got " + std::to_string(initial));
    }
  }
  check.Number("spec.autoscaling.targetOngoingRequests", a.target_ongoing_requests,
               rules::kTargetOngoingRequests);
  check.Number("spec.autoscaling.upscaleDelaySeconds", a.upscale_delay_seconds,
               rules::kDelaySeconds);
  check.Number("spec.autoscaling.downscaleDelaySeconds", a.downscale_delay_seconds,
               rules::kDelaySeconds);
  check.Number("spec.autoscaling.downscaleToZeroDelaySeconds", a.downscale_to_zero_delay_seconds,
               rules::kDelaySeconds);
  check.Number("spec.autoscaling.upscalingFactor", a.upscaling_factor, rules::kFactor);
  check.Number("spec.autoscaling.downscalingFactor", a.downscaling_factor, rules::kFactor);
  check.Number("spec.autoscaling.lookBackPeriodSeconds", a.look_back_period_seconds,
               rules::kLookBackPeriodSeconds);
  check.Number("spec.autoscaling.drainTimeoutSeconds", a.drain_timeout_seconds,
               rules::kDrainTimeoutSeconds);
}

void CheckRouting(const RoutingSpec& r, const Checker& check) {
  namespace rules = internal::rules;
  check.String("spec.routing.sessionAffinity.header", r.session_affinity.header, rules::kHeader);
  check.Int("spec.routing.sessionAffinity.ttlSeconds", r.session_affinity.ttl_seconds,
            rules::kTtlSeconds);
  check.Int("spec.routing.sessionAffinity.maxSessions", r.session_affinity.max_sessions,
            rules::kMaxSessions);
  check.Int("spec.routing.prefixAffinity.blockSizeTokens", r.prefix_affinity.block_size_tokens,
            rules::kBlockSizeTokens);
  check.Int("spec.routing.prefixAffinity.maxBlocks", r.prefix_affinity.max_blocks,
            rules::kMaxBlocks);
  check.Number("spec.routing.prefixAffinity.loadMargin", r.prefix_affinity.load_margin,
               rules::kLoadMargin);
  check.Int("spec.routing.admission.maxQueue", r.admission.max_queue, rules::kMaxQueue);
  check.Number("spec.routing.admission.queueTimeoutSeconds", r.admission.queue_timeout_seconds,
               rules::kQueueTimeoutSeconds);
  check.Int("spec.routing.admission.maxRequestTokens", r.admission.max_request_tokens,
            rules::kMaxRequestTokens);
  check.Int("spec.routing.defaultPromptTokens", r.default_prompt_tokens, rules::kTokens);
  check.Int("spec.routing.defaultExpectedTokens", r.default_expected_tokens, rules::kTokens);
  if (r.max_concurrency_per_worker) {
    check.Int("spec.routing.maxConcurrencyPerWorker", *r.max_concurrency_per_worker,
              rules::kMaxConcurrency);
  }
  check.Int("spec.routing.publishIntervalSeconds", r.publish_interval_seconds,
            rules::kPublishIntervalSeconds);
  check.Int("spec.routing.publishThreshold", r.publish_threshold, rules::kPublishThreshold);
}

void CheckSelects(const std::string& field, const LabelSelector& selector, const Checker& check) {
  if (selector.empty()) {
    check.Error(field, "must select something: an empty selector matches every pod");
  }
}

void CheckExporter(EnergySource source, const EnergyExporterSpec& x, const Checker& check) {
  namespace rules = internal::rules;
  if (source == EnergySource::kStatic) {
    check.Error("spec.energy.exporter",
                "must not be set when source is Static, which reads no exporter");
  }
  if (!x.namespace_name.empty()) {
    check.String("spec.energy.exporter.namespace", x.namespace_name, rules::kNamespace);
  }
  CheckSelects("spec.energy.exporter.selector", x.selector, check);
  check.Int("spec.energy.exporter.port", x.port, rules::kPort);
  check.String("spec.energy.exporter.path", x.path, rules::kMetricsPath);
}

void CheckEnergy(const EnergySpec& e, const Checker& check) {
  namespace rules = internal::rules;
  if (e.profiles.size() > rules::kMaxProfiles) {
    check.Error("spec.energy.profiles", "must have at most " + std::to_string(rules::kMaxProfiles) +
                                            " entries, got " + std::to_string(e.profiles.size()));
    return;
  }
  if (e.source == EnergySource::kStatic && e.profiles.empty()) {
    check.Error("spec.energy.profiles", "required when source is Static");
  }
  if (e.exporter) CheckExporter(e.source, *e.exporter, check);
  for (std::size_t i = 0; i < e.profiles.size(); ++i) {
    const EnergyProfile& p = e.profiles[i].energy;
    const std::string path = "spec.energy.profiles[" + std::to_string(i) + "]";
    check.String(path + ".accelerator", e.profiles[i].accelerator, rules::kAccelerator);
    check.Number(path + ".idleWatts", p.idle_watts, rules::kWatts);
    check.Number(path + ".maxWatts", p.max_watts, rules::kWatts);
    if (p.max_watts < p.idle_watts) {
      check.Error(path + ".maxWatts", "must be at least idleWatts (" + Num(p.idle_watts) +
                                          "), got " + Num(p.max_watts));
    }
    check.Number(path + ".maxTokensPerSecond", p.max_tokens_per_second, rules::kTokensPerSecond);
  }
}

void CheckCarbon(const InferencePoolSpec& spec, const Checker& check) {
  namespace rules = internal::rules;
  const CarbonSpec& c = spec.carbon;
  check.String("spec.carbon.zoneLabel", c.zone_label, rules::kZoneLabel);
  const int sources = static_cast<int>(!c.static_intensity.empty()) +
                      static_cast<int>(c.config_map_ref.has_value()) +
                      static_cast<int>(c.carbon_aware_sdk.has_value());
  if (sources > 1) {
    check.Error("spec.carbon", "at most one of static, configMapRef and carbonAwareSdk may be set");
  }
  if (sources == 0 && spec.routing.strategy == Strategy::kCarbonWeighted) {
    check.Error("spec.carbon",
                "a source (static, configMapRef or carbonAwareSdk) is required when "
                "routing.strategy is CarbonWeighted");
  }
  if (c.static_intensity.size() > rules::kMaxStaticZones) {
    check.Error("spec.carbon.static",
                "must have at most " + std::to_string(rules::kMaxStaticZones) + " entries, got " +
                    std::to_string(c.static_intensity.size()));
  } else {
    for (const auto& [zone, intensity] : c.static_intensity) {
      const std::string path = internal::KeyPath("spec.carbon.static", zone);
      check.String(path, zone, rules::kZone);
      check.Number(path, intensity, rules::kCarbonIntensity);
    }
  }
  if (c.config_map_ref) {
    check.String("spec.carbon.configMapRef.name", c.config_map_ref->name, rules::kObjectName);
  }
  if (c.carbon_aware_sdk) {
    check.String("spec.carbon.carbonAwareSdk.url", c.carbon_aware_sdk->url, rules::kUrl);
  }
  check.Int("spec.carbon.maxStaleSeconds", c.max_stale_seconds, rules::kMaxStaleSeconds);
}

}  // namespace

std::vector<FieldError> Validate(const InferencePoolSpec& spec) {
  std::vector<FieldError> errors;
  const Checker check(errors);
  CheckSelects("spec.selector", spec.selector, check);
  check.Int("spec.targetPort", spec.target_port, internal::rules::kPort);
  if (spec.models.size() > internal::rules::kMaxModels) {
    check.Error("spec.models", "must have at most " + std::to_string(internal::rules::kMaxModels) +
                                   " entries, got " + std::to_string(spec.models.size()));
  } else {
    for (std::size_t i = 0; i < spec.models.size(); ++i) {
      check.String("spec.models[" + std::to_string(i) + "]", spec.models[i],
                   internal::rules::kModelName);
    }
  }
  CheckMetrics(spec.metrics, check);
  CheckMetricNames(spec.engine, spec.metrics.names, check);
  CheckScaleTargetRef(spec, check);
  CheckAutoscaling(spec.autoscaling, check);
  CheckRouting(spec.routing, check);
  CheckEnergy(spec.energy, check);
  CheckCarbon(spec, check);
  return errors;
}

}  // namespace eoc::api
