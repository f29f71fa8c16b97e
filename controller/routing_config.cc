#include "controller/routing_config.h"

#include <algorithm>
#include <cstddef>
#include <string>

#include "api/names.h"
#include "controller/pool_status.h"
#include "controller/workers.h"
#include "routing/ids.h"

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
      .wait_without_workers =
          spec.autoscaling.enabled && spec.autoscaling.mode == api::ScalingMode::kApply,
  };
}

void UpdatePoolDirectory(routing::PoolDirectory& directory, const api::InferencePool& pool,
                         const std::vector<routing::Worker>& workers,
                         std::chrono::steady_clock::time_point now) {
  const auto state = directory.Configure(pool.ns + "/" + pool.name, RoutingOptions(pool.spec), now);
  const auto published = PublishedWorkers(workers);
  const Strategy strategy = pool.spec.routing.strategy;
  const std::int64_t generation =
      BuildRoutingTable(pool.spec, workers, pool.status.routing).generation;
  const auto current = state->snapshot();
  if (current != nullptr && current->generation() == generation &&
      current->strategy() == strategy &&
      std::equal(published.begin(), published.end(), current->workers().begin(),
                 current->workers().end())) {
    return;
  }
  state->SetSnapshot(
      routing::PoolSnapshot::Build({published.begin(), published.end()}, generation, strategy),
      now);
}

}  // namespace eoc::controller
