// Each strategy's weight function: from the pool's measured Load to an integer weight 0-1000 per
// worker, the figure the routing table publishes and the alias and consistent-hash tables are
// built over. A weight belongs to a worker, not to a request; it is computed for the whole pool at
// once, relative to its best worker (1000), so weights compare within a pool.
//
//   std::vector<WorkerLoad> pool = ...;                  // one per worker, in table order
//   std::vector<std::int32_t> w = ComputeWeights(Strategy::kJouleWeighted, pool);
//   table.workers[i].weight = w[i];
//
// The formulas. For each worker, b = Busyness(load, picks_since_scrape, max_concurrency) and its
// headroom h = 1 - b. A worker with b >= 1 (saturated) weighs 0. Otherwise its score is
//   RoundRobin, LeastBusy:  1                                  (equal weights)
//   JouleWeighted:          h / J     J = MarginalJoulesPerToken(load, profile)
//   CarbonWeighted:         h / G     G = MarginalGramsPerToken(load, profile) = J x g/kWh / 3.6e6
//   LatencyWeighted:        R / (running + waiting + picks_since_scrape + 1)
//                           R = max(tokens_per_second, profile.max_tokens_per_second)
// LatencyWeighted's score is the inverse of the expected latency of one more request: the queue
// ahead of it (including itself) over the worker's token rate; R takes the profile's capacity
// when the worker is idle (its measured rate is then 0). J, G or R that is unknown (0) for a worker
// is the median of the known values in the pool (so that worker neither wins nor loses on it), and
// 1 when no worker's is known. The weight is round(1000 x score / best score), at least 1: a
// worker that is not saturated always keeps some share.
// A worker whose metrics are not available (load.available false) gets the lowest non-zero weight
// of the available workers, or 1000 when none has one (no data yet: equal weights). Keeping a
// worker's last weight for three scrape intervals first (DESIGN.md) needs history: WeightKeeper
// (routing/weight_keeper.h) does it on this function's output.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "routing/worker.h"

namespace eoc::routing {

// The largest published weight: the best worker of a pool.
inline constexpr std::int32_t kMaxWeight = 1000;

// One worker as the weight functions read it.
struct WorkerLoad {
  Load load;
  EnergyProfile profile;
  std::int32_t max_concurrency = 0;  // 0: unknown (see Busyness)
  double picks_since_scrape = 0;     // this replica's picks since `load` was scraped
};

// The weights of `pool` under `strategy`, one per worker in the same order, each 0-1000.
std::vector<std::int32_t> ComputeWeights(Strategy strategy, std::span<const WorkerLoad> pool);

}  // namespace eoc::routing
