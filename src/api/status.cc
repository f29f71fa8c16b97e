// The status of an InferencePool: its JSON mapping and its conditions.
#include <limits>
#include <utility>

#include "api/inference_pool.h"
#include "api/json_reader.h"

namespace eoc::api {
namespace {

using nlohmann::json;

// Past these, a status read back is cut short: the leader never writes more.
constexpr std::size_t kMaxConditions = 64;
constexpr std::size_t kMaxWorkerModels = 256;

std::optional<std::int64_t> IntMember(const json& object, std::string_view key) {
  const json* value = MemberOrNull(&object, key);
  if (value == nullptr) return std::nullopt;
  if (value->is_number_unsigned()) {
    const auto u = value->get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return std::nullopt;
    }
    return static_cast<std::int64_t>(u);
  }
  if (value->is_number_integer()) return value->get<std::int64_t>();
  return std::nullopt;
}

std::optional<std::int32_t> Int32Member(const json& object, std::string_view key) {
  const std::optional<std::int64_t> v = IntMember(object, key);
  if (!v || *v < std::numeric_limits<std::int32_t>::min() ||
      *v > std::numeric_limits<std::int32_t>::max()) {
    return std::nullopt;
  }
  return static_cast<std::int32_t>(*v);
}

void ReadString(const json& object, std::string_view key, std::string& out) {
  const json* value = MemberOrNull(&object, key);
  if (value != nullptr && value->is_string()) out = value->get<std::string>();
}

void ReadBool(const json& object, std::string_view key, bool& out) {
  const json* value = MemberOrNull(&object, key);
  if (value != nullptr && value->is_boolean()) out = value->get<bool>();
}

template <class T>
void ReadInt(const json& object, std::string_view key, T& out) {
  if constexpr (std::is_same_v<T, std::int32_t>) {
    if (const auto v = Int32Member(object, key)) out = *v;
  } else {
    if (const auto v = IntMember(object, key)) out = *v;
  }
}

std::vector<std::string> ReadStrings(const json& object, std::string_view key, std::size_t max) {
  std::vector<std::string> out;
  const json* list = MemberOrNull(&object, key);
  if (list == nullptr || !list->is_array()) return out;
  for (const json& item : *list) {
    if (out.size() == max) break;
    if (item.is_string()) out.push_back(item.get<std::string>());
  }
  return out;
}

// Sets out[key] unless `value` is empty. An empty string reads back as an absent one, and leaving
// it out spares the API server values that it may refuse: "" is no date-time, and the local
// 1.20 test plane refuses every "" in a custom resource as null.
void SetIfNotEmpty(json& out, const char* key, const std::string& value) {
  if (!value.empty()) out[key] = value;
}

json ToJson(const Condition& c) {
  json out{{"type", c.type}, {"status", c.status}, {"observedGeneration", c.observed_generation}};
  SetIfNotEmpty(out, "reason", c.reason);
  SetIfNotEmpty(out, "message", c.message);
  SetIfNotEmpty(out, "lastTransitionTime", c.last_transition_time);
  return out;
}

Condition ParseCondition(const json& object) {
  Condition c;
  ReadString(object, "type", c.type);
  ReadString(object, "status", c.status);
  ReadString(object, "reason", c.reason);
  ReadString(object, "message", c.message);
  ReadString(object, "lastTransitionTime", c.last_transition_time);
  ReadInt(object, "observedGeneration", c.observed_generation);
  return c;
}

json ToJson(const RoutingWorker& w) {
  json out{{"weight", w.weight},
           {"draining", w.draining},
           {"kvBlocks", w.kv_blocks},
           {"blockSize", w.block_size}};
  SetIfNotEmpty(out, "pod", w.pod);
  SetIfNotEmpty(out, "address", w.address);
  if (!w.models.empty()) out["models"] = w.models;
  return out;
}

RoutingWorker ParseWorker(const json& object) {
  RoutingWorker w;
  ReadString(object, "pod", w.pod);
  ReadString(object, "address", w.address);
  ReadInt(object, "weight", w.weight);
  ReadBool(object, "draining", w.draining);
  ReadInt(object, "kvBlocks", w.kv_blocks);
  ReadInt(object, "blockSize", w.block_size);
  w.models = ReadStrings(object, "models", kMaxWorkerModels);
  return w;
}

json ToJson(const RoutingTable& table) {
  json workers = json::array();
  for (const RoutingWorker& w : table.workers) workers.push_back(ToJson(w));
  json out{{"generation", table.generation}, {"workers", std::move(workers)}};
  SetIfNotEmpty(out, "strategy", table.strategy);
  return out;
}

RoutingTable ParseRoutingTable(const json& object) {
  RoutingTable table;
  ReadString(object, "strategy", table.strategy);
  ReadInt(object, "generation", table.generation);
  const json* workers = MemberOrNull(&object, "workers");
  if (workers != nullptr && workers->is_array()) {
    for (const json& w : *workers) {
      if (table.workers.size() == kMaxRoutingTableWorkers) break;
      if (w.is_object()) table.workers.push_back(ParseWorker(w));
    }
  }
  return table;
}

}  // namespace

json ToJson(const InferencePoolStatus& status) {
  json out{{"observedGeneration", status.observed_generation},
           {"readyWorkers", status.ready_workers}};
  if (status.desired_replicas) out["desiredReplicas"] = *status.desired_replicas;
  if (!status.last_scale_time.empty()) out["lastScaleTime"] = status.last_scale_time;
  if (!status.conditions.empty()) {
    json conditions = json::array();
    for (const Condition& c : status.conditions) conditions.push_back(ToJson(c));
    out["conditions"] = std::move(conditions);
  }
  if (status.routing) out["routing"] = ToJson(*status.routing);
  return out;
}

InferencePoolStatus ParseStatus(const json& status) {
  InferencePoolStatus out;
  if (!status.is_object()) return out;
  ReadInt(status, "observedGeneration", out.observed_generation);
  ReadInt(status, "readyWorkers", out.ready_workers);
  out.desired_replicas = Int32Member(status, "desiredReplicas");
  ReadString(status, "lastScaleTime", out.last_scale_time);
  const json* conditions = MemberOrNull(&status, "conditions");
  if (conditions != nullptr && conditions->is_array()) {
    for (const json& c : *conditions) {
      if (out.conditions.size() == kMaxConditions) break;
      if (c.is_object()) out.conditions.push_back(ParseCondition(c));
    }
  }
  const json* routing = MemberOrNull(&status, "routing");
  if (routing != nullptr && routing->is_object()) out.routing = ParseRoutingTable(*routing);
  return out;
}

void SetCondition(std::vector<Condition>& conditions, Condition condition, const std::string& now) {
  for (Condition& existing : conditions) {
    if (existing.type != condition.type) continue;
    condition.last_transition_time =
        existing.status == condition.status ? existing.last_transition_time : now;
    existing = std::move(condition);
    return;
  }
  condition.last_transition_time = now;
  conditions.push_back(std::move(condition));
}

const Condition* FindCondition(const std::vector<Condition>& conditions, std::string_view type) {
  for (const Condition& c : conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

}  // namespace eoc::api
