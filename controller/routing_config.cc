#include "controller/routing_config.h"

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "api/names.h"
#include "controller/pool_status.h"
#include "controller/workers.h"
#include "routing/ids.h"
#include "routing/weights.h"

namespace eoc::controller {

// A model name the API accepts is one the routing engine takes (and no longer).
static_assert(routing::kMaxModelNameBytes == api::kMaxDnsSubdomainLength);
namespace {

std::size_t Count(std::int64_t n) { return static_cast<std::size_t>(std::max<std::int64_t>(n, 0)); }

}  // namespace

routing::PoolState::Options RoutingOptions(const api::InferencePoolSpec& spec) {
  const api::RoutingSpec& r = spec.routing;
  return {
      .session_affinity = r.session_affinity.enabled,
      .sessions = {.max_sessions = Count(r.session_affinity.max_sessions),
                   .ttl = std::chrono::seconds(r.session_affinity.ttl_seconds)},
      .prefix_affinity = r.prefix_affinity.enabled,
      .prefix = {.max_blocks = Count(r.prefix_affinity.max_blocks)},
      .block_size_tokens = r.prefix_affinity.block_size_tokens,
      .prefix_load_margin = r.prefix_affinity.load_margin,
      .kv_block_budget = r.admission.kv_block_budget,
      .max_queue = Count(r.admission.max_queue),
      .default_prompt_tokens = r.default_prompt_tokens,
      .default_expected_tokens = r.default_expected_tokens,
      .max_request_tokens = r.admission.max_request_tokens,
      // A pick that cannot fit holds its model's later picks for one scrape: the time room takes
      // to show.
      .hold = spec.metrics.Interval(),
      .wait_without_workers = spec.autoscaling.enabled &&
                              spec.autoscaling.mode == api::ScalingMode::kApply &&
                              spec.autoscaling.max_replicas.value_or(0) >= 1,
      .models = spec.models,
  };
}

server::PoolHttpSettings PickSettings(const api::RoutingSpec& routing) {
  return {
      .session_header = routing.session_affinity.header,
      .queue_timeout = std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::duration<double>(std::max(0.0, routing.admission.queue_timeout_seconds)))};
}

routing::PublishRules PublishRulesOf(const api::RoutingSpec& routing) {
  return {.threshold = routing.publish_threshold,
          .interval = std::chrono::seconds(std::max(0, routing.publish_interval_seconds))};
}

std::vector<routing::Worker> TableWorkers(const api::InferencePool& pool) {
  std::vector<routing::Worker> out;
  if (!pool.status.routing) return out;
  out.reserve(pool.status.routing->workers.size());
  for (const api::RoutingWorker& w : pool.status.routing->workers) {
    routing::Worker worker;
    worker.pod = pool.ns + "/" + w.pod;
    worker.key = routing::WorkerKeyOf(worker.pod);
    worker.address = w.address;
    worker.weight = w.weight;
    worker.draining = w.draining;
    worker.capability.models = w.models;
    out.push_back(std::move(worker));
  }
  return out;
}

routing::PublishDecision DecideTablePublish(const api::InferencePool& pool,
                                            std::span<const routing::Worker> candidate,
                                            std::chrono::steady_clock::time_point published_at,
                                            std::chrono::steady_clock::time_point now) {
  const Strategy strategy = pool.spec.routing.strategy;
  const routing::PublishRules rules = PublishRulesOf(pool.spec.routing);
  const auto published =
      pool.status.routing ? StrategyNamed(pool.status.routing->strategy) : std::nullopt;
  if (!published) return routing::DecidePublish(std::nullopt, strategy, candidate, now, rules);
  const std::vector<routing::Worker> table = TableWorkers(pool);
  const routing::LastPublication last{.strategy = *published, .workers = table, .at = published_at};
  return routing::DecidePublish(last, strategy, candidate, now, rules);
}

void UpdatePoolDirectory(routing::PoolDirectory& directory, server::PickPools* picks,
                         const api::InferencePool& pool,
                         const std::vector<routing::Worker>& workers,
                         std::chrono::steady_clock::time_point now) {
  const std::string key = pool.ns + "/" + pool.name;
  const auto state = directory.Configure(key, RoutingOptions(pool.spec), now);
  if (picks != nullptr) picks->Set(key, state, PickSettings(pool.spec.routing));
  const auto& table = pool.status.routing;
  // Nothing published yet: no snapshot, so picks answer kNotPublished (503) until the leader's
  // first table, which every replica then routes from alike.
  if (!table && state->snapshot() == nullptr) return;
  const auto published = PublishedWorkers(workers);
  std::vector<routing::Worker> listed(published.begin(), published.end());
  if (table) {
    std::unordered_map<std::string_view, const api::RoutingWorker*> published_as;
    published_as.reserve(table->workers.size());
    for (const api::RoutingWorker& w : table->workers) published_as.emplace(w.pod, &w);
    for (routing::Worker& w : listed) {
      const auto it = published_as.find(PodName(w));
      w.weight = it == published_as.end() ? 0 : it->second->weight;
      w.draining = it != published_as.end() && it->second->draining;
    }
  } else {
    for (routing::Worker& w : listed) w.weight = routing::kMaxWeight;
  }
  const Strategy strategy = pool.spec.routing.strategy;
  const std::int64_t generation = BuildRoutingTable(pool.spec, listed, table).generation;
  const auto current = state->snapshot();
  if (current != nullptr && current->generation() == generation &&
      current->strategy() == strategy &&
      std::equal(listed.begin(), listed.end(), current->workers().begin(),
                 current->workers().end())) {
    return;
  }
  state->SetSnapshot(routing::PoolSnapshot::Build(std::move(listed), generation, strategy), now);
}

}  // namespace eoc::controller
