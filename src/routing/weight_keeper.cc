#include "routing/weight_keeper.h"

#include <optional>
#include <stdexcept>
#include <utility>

namespace eoc::routing {

std::vector<std::int32_t> WeightKeeper::Keep(std::span<const WorkerKey> keys,
                                             std::span<const WorkerLoad> loads,
                                             std::span<const std::int32_t> computed,
                                             Clock::time_point now) {
  if (loads.size() != keys.size() || computed.size() != keys.size()) {
    throw std::invalid_argument("WeightKeeper::Keep: keys, loads and weights differ in length");
  }
  const Clock::duration kept_for = kKeptIntervals * scrape_interval_;
  std::vector<std::int32_t> weights(computed.begin(), computed.end());
  // Only the workers of this call: the others are forgotten.
  std::unordered_map<WorkerKey, std::optional<Last>> next;
  next.reserve(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    std::optional<Last> record;  // none: never seen available
    if (loads[i].load.available) {
      record = Last{.weight = computed[i], .at = now};
    } else if (const auto it = last_.find(keys[i]); it != last_.end() && it->second) {
      record = it->second;
      if (now - record->at < kept_for) weights[i] = record->weight;
    }
    if (!next.try_emplace(keys[i], record).second) {
      throw std::invalid_argument("WeightKeeper::Keep: a worker key appears twice");
    }
  }
  last_ = std::move(next);
  return weights;
}

}  // namespace eoc::routing
