// The routing engine's vocabulary (DESIGN.md, "The model"): a Worker (one ready pod of a pool)
// with its Capability and EnergyProfile, the Load its engine last reported, and what the
// strategies derive from them: busyness, the marginal energy of a token, and a request's projected
// energy and carbon. Pure: no I/O, no Kubernetes, no JSON.
//
//   Load load{.running = 12, .waiting = 2, .tokens_per_second = 900, .grid_g_per_kwh = 350,
//             .available = true};
//   double b = Busyness(load, /*picks_since_scrape=*/3, worker.capability.max_concurrency);
//   bool full = b >= 1;                                      // saturated: weight 0
//   double uj = ProjectedMicroJoules(load, worker.profile, prompt_tokens + expected_tokens);
//   double g = ProjectedGCo2e(load, worker.profile, prompt_tokens + expected_tokens);
//   if (Serves(worker.capability, "llama-3-8b")) { ... }    // empty models: any model
//
// DESIGN.md's `busyness()`, `projected_micro_joules(tokens)` and `projected_g_co2e(tokens)` are
// Busyness, ProjectedMicroJoules and ProjectedGCo2e here (Google style names the same concepts).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/routing_terms.h"
#include "routing/ids.h"

namespace eoc::routing {

// The routing words the engine shares with the InferencePool API, defined once
// (common/routing_terms.h: the strategies and their names, the accelerator classes, the energy
// profile).
using eoc::Accelerator;
using eoc::AcceleratorName;
using eoc::EnergyProfile;
using eoc::Strategy;
using eoc::StrategyName;
using eoc::StrategyNamed;

// RoundRobin and LeastBusy: every worker weighs the same, whatever the published weights (the
// other three follow the weights).
bool UsesEqualWeights(Strategy strategy);

// What a worker can do; fixed while its pod lives.
struct Capability {
  std::vector<std::string> models;  // empty: any model
  Accelerator accelerator = Accelerator::kGpu;
  std::string accelerator_product;   // nvidia.com/gpu.product, else the accelerator class
  std::int32_t max_concurrency = 0;  // 0: unknown (Busyness then uses kDefaultMaxConcurrency)
  bool continuous_batching = true;
  bool paged_kv = true;
  std::string zone;  // the node's carbon zone, "" when unknown

  bool operator==(const Capability&) const = default;
};

// What a worker's engine (and the energy and carbon sources) last reported.
struct Load {
  double running = 0;         // sequences being generated
  double waiting = 0;         // sequences queued in the engine
  double kv_cache_usage = 0;  // 0..1
  std::int64_t kv_blocks_total = 0;
  std::int64_t kv_blocks_free = 0;
  std::int32_t block_size = 0;   // tokens per KV block
  double tokens_per_second = 0;  // prompt plus generated
  double watts = 0;
  // Estimated online as the slope of watts over token rate (the signals issue); 0: unknown, so the
  // profile's value is used.
  double marginal_joules_per_token = 0;
  double grid_g_per_kwh = 0;  // the zone's grid intensity; 0: unknown
  bool available = false;     // metrics fresh
};

// One ready pod of a pool, as one routing generation publishes it.
struct Worker {
  WorkerKey key = 0;    // WorkerKeyOf(pod)
  std::string pod;      // "namespace/name"
  std::string address;  // "podIP:targetPort"
  Capability capability;
  EnergyProfile profile;
  std::int32_t weight = 0;  // published, 0-1000; 0: takes no new work
  bool draining = false;    // takes no new work; its sessions are placed elsewhere

  bool operator==(const Worker&) const = default;
};

// The concurrency Busyness assumes when a worker's is unknown: vLLM's default `max_num_seqs`.
inline constexpr std::int32_t kDefaultMaxConcurrency = 256;
// g/kWh to g/J.
inline constexpr double kJoulesPerKwh = 3.6e6;

// Whether a worker with `capability` serves `model`: its models list it, or its list is empty
// (any model). An empty `model` (the pick did not say) is served by every worker.
bool Serves(const Capability& capability, std::string_view model);

// (running + waiting + picks this replica sent since the last scrape) / max concurrency, or the
// KV-cache use when it is higher (an engine whose cache is full is saturated whatever its count:
// long prompts fill it long before the engine's sequence limit): 0 idle, 1 and more saturated.
// With max_concurrency <= 0 (unknown) the count is divided by kDefaultMaxConcurrency.
double Busyness(const Load& load, double picks_since_scrape, std::int32_t max_concurrency);

// The energy of one more token (prompt or generated): the load's online estimate when it has one,
// else the profile's; 0 when neither is known.
double MarginalJoulesPerToken(const Load& load, const EnergyProfile& profile);
// MarginalJoulesPerToken x grid intensity, in grams CO2e; 0 when either is unknown.
double MarginalGramsPerToken(const Load& load, const EnergyProfile& profile);

// The energy `tokens` (prompt plus expected) would cost on the worker, in microjoules; 0 unknown.
double ProjectedMicroJoules(const Load& load, const EnergyProfile& profile, std::int64_t tokens);
// The carbon of the same: joules x grid g/kWh / 3.6e6, in grams CO2e; 0 unknown.
double ProjectedGCo2e(const Load& load, const EnergyProfile& profile, std::int64_t tokens);

}  // namespace eoc::routing
