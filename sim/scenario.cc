#include "sim/scenario.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <initializer_list>
#include <set>
#include <string_view>
#include <utility>

#include "api/json_reader.h"
#include "api/names.h"
#include "common/text.h"
#include "common/yaml_json.h"

namespace eoc::sim {
namespace {

using api::FieldError;
using api::internal::ObjectReader;
using api::internal::StringRule;
using nlohmann::json;

constexpr std::size_t kMaxScenarioBytes = std::size_t{1} << 20U;
constexpr std::size_t kMaxItems = 256;  // accelerators, zones, groups, policies
constexpr StringRule kName{.max_length = 63,
                           .valid = api::IsDnsLabel,
                           .expected = "must be a DNS label: lower-case letters, digits and '-'"};
constexpr StringRule kText{.max_length = 4096};
constexpr StringRule kPath{.max_length = 4096};

// Reports the members of `object` at `path` that are not in `known`.
void OnlyKnown(const json* object, const std::string& path,
               std::initializer_list<std::string_view> known, std::vector<FieldError>& errors) {
  if (object == nullptr || !object->is_object()) return;
  for (const auto& [key, value] : object->items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      const std::string_view name(key);
      errors.push_back(
          {path + "." + std::string(name.substr(0, 100)) + (name.size() > 100 ? "..." : ""),
           "is not a field of this object"});
    }
  }
}

// `path` as given when absolute, else under `base_dir`.
std::string Resolve(const std::string& path, const std::string& base_dir) {
  if (path.empty() || std::filesystem::path(path).is_absolute()) return path;
  return (std::filesystem::path(base_dir) / path).lexically_normal().string();
}

// The list at `reader[key]`: `read` is given a reader of each of its objects (named "<key>[i]")
// and the object itself.
template <class Read>
void EachObject(const ObjectReader& reader, std::string_view key, std::vector<FieldError>& errors,
                Read read) {
  const json* list = reader.Array(key, kMaxItems);
  if (list == nullptr) return;
  for (std::size_t i = 0; i < list->size(); ++i) {
    const std::string path = reader.Path(key) + "[" + std::to_string(i) + "]";
    read(ObjectReader(&(*list)[i], path, errors), &(*list)[i]);
  }
}

void ReadTraceOptions(const ObjectReader& t, const json* object, Scenario& s,
                      const std::string& base_dir, std::vector<FieldError>& errors) {
  OnlyKnown(object, t.path(),
            {"path", "timeScale", "rateScale", "startSeconds", "durationSeconds", "maxRequests",
             "blockSizeTokens", "sessions", "prefixes"},
            errors);
  TraceOptions& o = s.trace;
  if (t.Require("path") && t.String("path", s.trace_path, kPath)) {
    s.trace_path = Resolve(s.trace_path, base_dir);
  }
  t.Number("timeScale", o.time_scale, {.min = 0, .exclusive_min = true, .max = 1e6});
  t.Number("rateScale", o.rate_scale, {.min = 0, .max = 1e4});
  t.Number("startSeconds", o.start_seconds, {.min = 0, .max = 1e9});
  double duration = 0;
  if (t.Number("durationSeconds", duration, {.min = 0, .exclusive_min = true, .max = 1e9})) {
    o.duration_seconds = duration;
  }
  std::int64_t max_requests = 0;
  if (t.Int("maxRequests", max_requests, {.min = 1, .max = 10'000'000})) {
    o.max_requests = static_cast<std::size_t>(max_requests);
  }
  t.Int("blockSizeTokens", o.block_size_tokens, {.min = 1, .max = 1 << 20});
  const ObjectReader sessions = t.Object("sessions");
  OnlyKnown(t.Get("sessions"), sessions.path(), {"share", "meanTurns", "maxOpen"}, errors);
  sessions.Number("share", o.sessions.share, {.min = 0, .max = 1});
  sessions.Number("meanTurns", o.sessions.mean_turns, {.min = 2, .max = 1e6});
  std::int64_t max_open = 0;
  if (sessions.Int("maxOpen", max_open, {.min = 1, .max = 10'000'000})) {
    o.sessions.max_open = static_cast<std::size_t>(max_open);
  }
  const ObjectReader prefixes = t.Object("prefixes");
  OnlyKnown(t.Get("prefixes"), prefixes.path(),
            {"sharedShare", "sharedPrefixes", "zipfS", "minTokens", "maxTokens"}, errors);
  prefixes.Number("sharedShare", o.prefixes.shared_share, {.min = 0, .max = 1});
  std::int64_t shared = 0;
  if (prefixes.Int("sharedPrefixes", shared, {.min = 1, .max = 1 << 20})) {
    o.prefixes.shared_prefixes = static_cast<std::size_t>(shared);
  }
  prefixes.Number("zipfS", o.prefixes.zipf_s, {.min = 0, .max = 100});
  prefixes.Int("minTokens", o.prefixes.min_tokens, {.min = 1, .max = 1 << 20});
  prefixes.Int("maxTokens", o.prefixes.max_tokens, {.min = 1, .max = 1 << 20});
  if (o.prefixes.min_tokens > o.prefixes.max_tokens) {
    prefixes.Error("minTokens",
                   "must be at most maxTokens (" + std::to_string(o.prefixes.max_tokens) + ")");
  }
}

AcceleratorClass ReadAccelerator(const ObjectReader& a, const json* object,
                                 std::vector<FieldError>& errors) {
  OnlyKnown(object, a.path(),
            {"name", "gpu", "gpus", "idleWatts", "kvCacheTokens", "prefillTokensPerSecond",
             "maxNumSeqs", "maxBatchedTokens", "kvBlockTokens"},
            errors);
  AcceleratorClass c;
  if (a.Require("name")) a.String("name", c.name, kText);
  if (a.Require("gpu")) a.String("gpu", c.profile.gpu, kText);
  a.Int("gpus", c.profile.num_gpus, {.min = 1, .max = 64});
  double idle = 0;
  if (a.Number("idleWatts", idle, {.min = 0, .max = 10'000})) c.idle_watts = idle;
  if (a.Require("kvCacheTokens")) {
    a.Int("kvCacheTokens", c.engine.kv_capacity_tokens, {.min = 1, .max = std::int64_t{1} << 40});
  }
  if (a.Require("prefillTokensPerSecond")) {
    a.Number("prefillTokensPerSecond", c.engine.prefill_tokens_per_second,
             {.min = 0, .exclusive_min = true, .max = 1e9});
  }
  a.Int("maxNumSeqs", c.engine.max_num_seqs, {.min = 1, .max = 1 << 20});
  a.Int("maxBatchedTokens", c.engine.max_batched_tokens, {.min = 1, .max = 1 << 24});
  a.Int("kvBlockTokens", c.engine.kv_block_tokens, {.min = 1, .max = 1 << 16});
  if (c.engine.kv_capacity_tokens > 0 && c.engine.kv_capacity_tokens < c.engine.kv_block_tokens) {
    a.Error("kvCacheTokens", "must hold at least one block of kvBlockTokens");
  }
  return c;
}

Zone ReadZone(const ObjectReader& z, const json* object, std::vector<FieldError>& errors) {
  OnlyKnown(object, z.path(), {"name", "gramsPerKwh", "hourlyGramsPerKwh"}, errors);
  Zone zone;
  if (z.Require("name")) z.String("name", zone.name, kText);
  double constant = 0;
  const bool has_constant = z.Number("gramsPerKwh", constant, {.min = 0, .max = 10'000});
  const json* hourly = z.Array("hourlyGramsPerKwh", 24);
  if (has_constant == (hourly != nullptr)) {
    z.Error("gramsPerKwh", "give exactly one of gramsPerKwh and hourlyGramsPerKwh");
    return zone;
  }
  if (has_constant) {
    zone.grams_per_kwh = {constant};
    return zone;
  }
  if (hourly->size() != 24) {
    z.Error("hourlyGramsPerKwh", "must have 24 values, got " + std::to_string(hourly->size()));
    return zone;
  }
  for (std::size_t h = 0; h < hourly->size(); ++h) {
    const std::optional<double> v = api::internal::ReadNumber(
        (*hourly)[h], {.min = 0, .max = 10'000},
        z.Path("hourlyGramsPerKwh") + "[" + std::to_string(h) + "]", errors);
    zone.grams_per_kwh.push_back(v.value_or(0));
  }
  return zone;
}

WorkerGroup ReadGroup(const ObjectReader& g, const json* object, std::vector<FieldError>& errors) {
  OnlyKnown(object, g.path(), {"name", "accelerator", "zone", "replicas", "scaleTarget"}, errors);
  WorkerGroup group;
  if (g.Require("name")) g.String("name", group.name, kName);
  if (g.Require("accelerator")) g.String("accelerator", group.accelerator, kText);
  if (g.Require("zone")) g.String("zone", group.zone, kText);
  g.Int("replicas", group.replicas, {.min = 0, .max = 100'000});
  g.Bool("scaleTarget", group.scale_target);
  return group;
}

// Names must be unique within their list.
template <class T>
void UniqueNames(const std::vector<T>& items, const std::string& list,
                 std::vector<FieldError>& errors) {
  std::set<std::string> seen;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (!items[i].name.empty() && !seen.insert(items[i].name).second) {
      errors.push_back({list + "[" + std::to_string(i) + "].name",
                        "repeats " + Quoted(items[i].name) + ": names must be unique"});
    }
  }
}

// The InferencePool object for a policy's spec: what the simulated cluster fixes filled in where
// the spec does not say, then parsed by src/api as the controller parses it.
api::InferencePool ParsePool(json spec, const std::string& name, const Scenario& s) {
  if (!spec.is_object()) spec = json::object();
  if (!spec.contains("selector")) spec["selector"] = {{"matchLabels", {{"app", "sim"}}}};
  if (!spec.contains("targetPort")) spec["targetPort"] = 8000;
  if (!spec.contains("engine")) spec["engine"] = "vllm";
  const auto target = std::find_if(s.fleet.begin(), s.fleet.end(),
                                   [](const WorkerGroup& g) { return g.scale_target; });
  if (!spec.contains("scaleTargetRef") && target != s.fleet.end()) {
    spec["scaleTargetRef"] = {
        {"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", target->name}};
  }
  return api::ParseInferencePool({{"apiVersion", "eoc.dev/v1alpha1"},
                                  {"kind", "InferencePool"},
                                  {"metadata", {{"name", name}, {"namespace", "sim"}}},
                                  {"spec", std::move(spec)}});
}

// A policy's `baseline`: a peer's router in place of the pool's routing (baseline.h); nullopt,
// with the errors said, when it cannot be read.
std::optional<BaselineSpec> ReadBaseline(const json* object, const ObjectReader& b,
                                         std::vector<FieldError>& errors) {
  OnlyKnown(object, b.path(),
            {"kind", "cacheThreshold", "balanceAbsThreshold", "balanceRelThreshold",
             "evictionIntervalSeconds", "maxTreeSize", "queueWeight", "kvCacheUtilizationWeight",
             "prefixCacheWeight", "maxPrefixTokens", "lruCapacityTokens", "metricsRefreshSeconds"},
            errors);
  BaselineSpec spec;
  if (!b.Require("kind") || !b.Enum("kind", spec.kind, kBaselineKindNames)) return std::nullopt;
  CacheAwareParams& c = spec.cache_aware;  // the SGLang router's flags, by their scenario names
  b.Number("cacheThreshold", c.cache_threshold, {.min = 0, .max = 1});
  b.Int("balanceAbsThreshold", c.balance_abs_threshold, {.min = 0, .max = 1 << 30});
  b.Number("balanceRelThreshold", c.balance_rel_threshold, {.min = 0, .max = 1e6});
  b.Number("evictionIntervalSeconds", c.eviction_interval_seconds,
           {.min = 0, .exclusive_min = true, .max = 1e9});
  b.Int("maxTreeSize", c.max_tree_size, {.min = 0, .max = std::int64_t{1} << 40});
  ScorerParams& d = spec.scorer;  // llm-d's scheduling profile, by the same names
  b.Number("queueWeight", d.queue_weight, {.min = 0, .max = 1e6});
  b.Number("kvCacheUtilizationWeight", d.kv_cache_utilization_weight, {.min = 0, .max = 1e6});
  b.Number("prefixCacheWeight", d.prefix_cache_weight, {.min = 0, .max = 1e6});
  b.Int("maxPrefixTokens", d.max_prefix_tokens, {.min = 0, .max = std::int64_t{1} << 30});
  b.Int("lruCapacityTokens", d.lru_capacity_tokens, {.min = 0, .max = std::int64_t{1} << 40});
  b.Number("metricsRefreshSeconds", d.metrics_refresh_seconds, {.min = 0, .max = 3600});
  return spec;
}

void ReadPolicies(const ObjectReader& root, Scenario& s, std::vector<FieldError>& errors) {
  const json* base = root.Get("pool");
  if (base != nullptr && !base->is_object()) {
    root.Error("pool", "must be an object (an InferencePool spec)");
    return;
  }
  const auto add = [&](const std::string& name, const json& spec, const std::string& path,
                       std::optional<BaselineSpec> baseline = std::nullopt) {
    Policy p{.name = name, .pool = ParsePool(spec, name, s), .baseline = baseline};
    for (const FieldError& e : p.pool.errors) {
      // "spec.routing.strategy" of the pool is "<path>.routing.strategy" of the scenario.
      const std::string_view field(e.field);
      errors.push_back(
          {path + std::string(field.starts_with("spec") ? field.substr(4) : "." + e.field),
           e.message});
    }
    s.policies.push_back(std::move(p));
  };
  const json* list = root.Array("policies", kMaxItems);
  if (list == nullptr || list->empty()) {
    add("base", base != nullptr ? *base : json::object(), "pool");
    return;
  }
  for (std::size_t i = 0; i < list->size(); ++i) {
    const std::string path = "policies[" + std::to_string(i) + "]";
    const ObjectReader p(&(*list)[i], path, errors);
    OnlyKnown(&(*list)[i], path, {"name", "pool", "baseline"}, errors);
    std::string name;
    if (!p.Require("name") || !p.String("name", name, kName)) continue;
    std::optional<BaselineSpec> baseline;
    if (const json* object = p.Get("baseline")) {
      baseline = ReadBaseline(object, p.Object("baseline"), errors);
      if (!baseline) continue;
    }
    json spec = base != nullptr ? *base : json::object();
    if (const json* patch = p.Get("pool")) {
      if (!patch->is_object()) {
        p.Error("pool", "must be an object (merged into the scenario's pool)");
        continue;
      }
      spec.merge_patch(*patch);
    }
    add(name, spec, path + ".pool", baseline);
  }
  UniqueNames(s.policies, "policies", errors);
}

}  // namespace

double Zone::GramsPerKwhAt(double seconds) const {
  if (grams_per_kwh.empty()) return 0;
  if (grams_per_kwh.size() == 1) return grams_per_kwh.front();
  const double day = std::fmod(std::max(0.0, seconds), 86'400.0);
  const auto hour = static_cast<std::size_t>(day / 3600.0);
  return grams_per_kwh[std::min<std::size_t>(hour, grams_per_kwh.size() - 1)];
}

Scenario ReadScenario(const json& doc, const std::string& base_dir) {
  std::vector<FieldError> errors;
  Scenario s;
  const ObjectReader root(&doc, "", errors);
  if (!doc.is_object()) throw ScenarioError("the scenario must be a YAML mapping");
  OnlyKnown(&doc, "",
            {"seed", "trace", "profiles", "accelerators", "zones", "fleet", "coldStartSeconds",
             "slo", "pool", "policies"},
            errors);
  std::int64_t seed = 1;
  if (root.Int("seed", seed, {.min = 0, .max = std::int64_t{1} << 62})) {
    s.seed = static_cast<std::uint64_t>(seed);
  }
  s.trace.seed = s.seed;
  if (root.Require("trace"))
    ReadTraceOptions(root.Object("trace"), root.Get("trace"), s, base_dir, errors);

  const ObjectReader profiles = root.Object("profiles");
  OnlyKnown(root.Get("profiles"), profiles.path(), {"mlenergy", "gpus", "version", "task", "model"},
            errors);
  ProfileKey key;
  if (root.Require("profiles")) {
    if (profiles.Require("mlenergy") && profiles.String("mlenergy", s.mlenergy_csv, kPath)) {
      s.mlenergy_csv = Resolve(s.mlenergy_csv, base_dir);
    }
    if (profiles.Require("gpus") && profiles.String("gpus", s.gpus_csv, kPath)) {
      s.gpus_csv = Resolve(s.gpus_csv, base_dir);
    }
    if (profiles.Require("version")) profiles.String("version", key.version, kText);
    if (profiles.Require("task")) profiles.String("task", key.task, kText);
    if (profiles.Require("model")) profiles.String("model", key.model, kText);
  }

  if (root.Require("accelerators")) {
    EachObject(root, "accelerators", errors, [&](const ObjectReader& a, const json* o) {
      AcceleratorClass c = ReadAccelerator(a, o, errors);
      c.profile.version = key.version;
      c.profile.task = key.task;
      c.profile.model = key.model;
      s.accelerators.push_back(std::move(c));
    });
  }
  UniqueNames(s.accelerators, "accelerators", errors);
  if (root.Require("zones")) {
    EachObject(root, "zones", errors, [&](const ObjectReader& z, const json* o) {
      s.zones.push_back(ReadZone(z, o, errors));
    });
  }
  UniqueNames(s.zones, "zones", errors);
  if (root.Require("fleet")) {
    EachObject(root, "fleet", errors, [&](const ObjectReader& g, const json* o) {
      s.fleet.push_back(ReadGroup(g, o, errors));
    });
  }
  UniqueNames(s.fleet, "fleet", errors);
  std::size_t targets = 0;
  for (std::size_t i = 0; i < s.fleet.size(); ++i) {
    const WorkerGroup& g = s.fleet[i];
    const std::string path = "fleet[" + std::to_string(i) + "]";
    const auto named = [](const auto& list, const std::string& name) {
      return std::any_of(list.begin(), list.end(), [&](const auto& x) { return x.name == name; });
    };
    if (!g.accelerator.empty() && !named(s.accelerators, g.accelerator)) {
      errors.push_back({path + ".accelerator", "names no accelerator: " + Quoted(g.accelerator)});
    }
    if (!g.zone.empty() && !named(s.zones, g.zone)) {
      errors.push_back({path + ".zone", "names no zone: " + Quoted(g.zone)});
    }
    if (g.scale_target && ++targets > 1) {
      errors.push_back({path + ".scaleTarget", "at most one group is the pool's scale target"});
    }
  }
  if (root.Get("fleet") != nullptr && s.fleet.empty()) {
    root.Error("fleet", "must have at least one group");
  }

  root.Number("coldStartSeconds", s.cold_start_seconds, {.min = 0, .max = 86'400});
  const ObjectReader slo = root.Object("slo");
  OnlyKnown(root.Get("slo"), slo.path(), {"ttftSeconds", "tpotSeconds"}, errors);
  slo.Number("ttftSeconds", s.slo.ttft_seconds, {.min = 0, .exclusive_min = true, .max = 86'400});
  slo.Number("tpotSeconds", s.slo.tpot_seconds, {.min = 0, .exclusive_min = true, .max = 3600});

  if (errors.empty()) ReadPolicies(root, s, errors);
  if (!errors.empty()) {
    std::string message;
    for (const FieldError& e : errors) {
      const std::string_view field(e.field);
      message +=
          std::string(field.starts_with('.') ? field.substr(1) : field) + ": " + e.message + "\n";
    }
    message.pop_back();
    throw ScenarioError(message);
  }
  return s;
}

Scenario LoadScenario(const std::string& path) {
  std::string error;
  const std::optional<json> doc = LoadYamlFile(path, kMaxScenarioBytes, error);
  if (!doc) throw ScenarioError(error);
  try {
    return ReadScenario(*doc, std::filesystem::path(path).parent_path().string());
  } catch (const ScenarioError& e) {
    throw ScenarioError(path + ":\n" + e.what());
  }
}

}  // namespace eoc::sim
