// The weight history for workers whose metrics are unavailable (DESIGN.md, "The model"): "a
// worker whose metrics are unavailable keeps its last weight for three scrape intervals, then drops
// to the pool's lowest non-zero weight". ComputeWeights has no history, so it gives such a worker
// the lowest non-zero weight at once; the keeper remembers each worker's last weight from a
// round in which its metrics were available, and puts it back while it is young enough. Pure: no
// I/O, time passed in. One keeper per pool, on the thread that computes the pool's weights.
//
//   WeightKeeper keeper(std::chrono::seconds(spec.metrics.interval_seconds));
//   // after each scrape round of the pool (at least once per scrape interval):
//   std::vector<std::int32_t> computed = ComputeWeights(strategy, loads);
//   std::vector<std::int32_t> weights = keeper.Keep(keys, loads, computed, now);
//   for (std::size_t i = 0; i < workers.size(); ++i) workers[i].weight = weights[i];
//
// The rule, per worker i of the call (keys[i], loads[i], computed[i] describe one worker):
//   - metrics available (loads[i].load.available): computed[i], and the keeper records it with
//     `now` as the worker's last weight;
//   - unavailable, with a last weight recorded at t where now - t < kKeptIntervals x interval
//     (strictly younger): that last weight (0 too, if the worker was saturated when last seen);
//   - unavailable otherwise (older, or never seen available): computed[i], which is what
//     ComputeWeights gives an unavailable worker: the lowest non-zero weight of the available
//     workers, or kMaxWeight when none has one.
// A worker's record counts from the last call that saw it available, so call Keep after every
// scrape round. Workers absent from a call are forgotten: the keeper holds at most as many
// records as the last call had workers.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "routing/ids.h"
#include "routing/weights.h"

namespace eoc::routing {

class WeightKeeper {
 public:
  // How many scrape intervals an unavailable worker keeps its last weight.
  static constexpr int kKeptIntervals = 3;

  using Clock = std::chrono::steady_clock;

  // `scrape_interval`: the pool's metrics interval (spec.metrics.intervalSeconds).
  explicit WeightKeeper(Clock::duration scrape_interval) : scrape_interval_(scrape_interval) {}

  // A new interval (the spec changed) applies from the next Keep; records are kept.
  void set_scrape_interval(Clock::duration scrape_interval) { scrape_interval_ = scrape_interval; }
  Clock::duration scrape_interval() const { return scrape_interval_; }

  // The weights to publish, one per worker in the order of `keys` (see the rule above).
  // `keys`, `loads` and `computed` (ComputeWeights(strategy, loads)) have one entry per worker in
  // the same order, and the keys are distinct; otherwise it throws std::invalid_argument.
  std::vector<std::int32_t> Keep(std::span<const WorkerKey> keys, std::span<const WorkerLoad> loads,
                                 std::span<const std::int32_t> computed, Clock::time_point now);

  // The workers remembered: those of the last call (for tests and memory checks).
  std::size_t size() const { return last_.size(); }

 private:
  struct Last {
    std::int32_t weight = 0;
    Clock::time_point at;  // the last call that saw the worker available
  };

  Clock::duration scrape_interval_;
  // Every worker of the last call; none for one never seen available.
  std::unordered_map<WorkerKey, std::optional<Last>> last_;
};

}  // namespace eoc::routing
