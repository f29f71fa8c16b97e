#include "routing/pool_snapshot.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <utility>

#include "routing/weights.h"

namespace eoc::routing {
namespace {

__extension__ using Uint128 = unsigned __int128;

// SplitMix64: the more uniform 64-bit numbers one pick needs, from the one its caller passed.
class Stream {
 public:
  explicit Stream(std::uint64_t seed) : state_(seed) {}
  std::uint64_t Next() {
    state_ += 0x9E3779B97F4A7C15ULL;
    return Mix64(state_);
  }

 private:
  std::uint64_t state_;
};

// A uniform position in [0, n) from uniform 64 bits (n > 0).
std::size_t Uniform(std::uint64_t random, std::size_t n) {
  return static_cast<std::size_t>((static_cast<Uint128>(random) * n) >> 64);
}

}  // namespace

std::shared_ptr<const PoolSnapshot> PoolSnapshot::Build(std::vector<Worker> workers,
                                                        std::int64_t generation,
                                                        Strategy strategy) {
  return std::make_shared<const PoolSnapshot>(Private(), std::move(workers), generation, strategy);
}

PoolSnapshot::PoolSnapshot(Private /*unused*/, std::vector<Worker> workers, std::int64_t generation,
                           Strategy strategy)
    : workers_(std::move(workers)), generation_(generation), strategy_(strategy) {
  if (workers_.size() > MaglevTable::kMaxEntries) {
    throw std::length_error("PoolSnapshot: too many workers");
  }
  index_.reserve(workers_.size());
  std::vector<std::uint32_t> all;
  std::vector<std::uint32_t> any_model;
  std::vector<std::string_view> names;
  for (std::uint32_t i = 0; i < workers_.size(); ++i) {
    Worker& w = workers_[i];
    w.weight = std::clamp(w.weight, 0, kMaxWeight);
    if (!index_.emplace(w.key, i).second) {
      throw std::invalid_argument("PoolSnapshot: two workers share the key of " + w.pod);
    }
    if (!TakesNewWork(i)) continue;
    all.push_back(i);
    if (w.capability.models.empty()) any_model.push_back(i);
    for (const std::string& m : w.capability.models) names.emplace_back(m);
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  pick_scale_.assign(workers_.size(), 1.0);
  if (!UsesEqualWeights(strategy_) && !all.empty()) {
    double total = 0;
    for (const std::uint32_t i : all) total += workers_[i].weight;
    const double mean = total / static_cast<double>(all.size());
    for (const std::uint32_t i : all) pick_scale_[i] = mean / workers_[i].weight;
  }

  // Groups are built once per distinct candidate set; past the slot budget a model filters the
  // all-workers group instead (models in name order, so every replica decides alike).
  std::size_t slots_left = kMaxModelSlots;
  std::map<std::vector<std::uint32_t>, std::uint32_t> built;
  built.emplace(all, AddGroup(all, slots_left));
  const auto route_of = [&](std::vector<std::uint32_t> candidates) {
    Route route{.any = !candidates.empty()};
    if (const auto it = built.find(candidates); it != built.end()) {
      route.group = it->second;
    } else if (candidates.empty() || MaglevTable::TableSizeFor(candidates.size()) <= slots_left) {
      route.group = AddGroup(candidates, slots_left);
      built.emplace(std::move(candidates), route.group);
    } else {
      route.filter = true;
    }
    return route;
  };
  unnamed_model_ = route_of(std::move(any_model));
  for (const std::string_view name : names) {
    std::vector<std::uint32_t> candidates;
    for (const std::uint32_t i : all) {
      if (routing::Serves(workers_[i].capability, name)) candidates.push_back(i);
    }
    models_.emplace(std::string(name), route_of(std::move(candidates)));
  }
}

std::uint32_t PoolSnapshot::AddGroup(std::vector<std::uint32_t> candidates,
                                     std::size_t& slots_left) {
  std::vector<std::int32_t> weights;
  std::vector<MaglevTable::Entry> entries;
  weights.reserve(candidates.size());
  entries.reserve(candidates.size());
  for (const std::uint32_t i : candidates) {
    weights.push_back(workers_[i].weight);
    entries.push_back(
        {.key = workers_[i].key, .weight = UsesEqualWeights(strategy_) ? 1 : workers_[i].weight});
  }
  Group group{.candidates = std::move(candidates),
              .alias = AliasTable(weights),
              .maglev = MaglevTable(entries)};
  slots_left -= std::min<std::size_t>(slots_left, group.maglev.table_size());
  groups_.push_back(std::move(group));
  return static_cast<std::uint32_t>(groups_.size() - 1);
}

std::optional<std::size_t> PoolSnapshot::IndexOf(WorkerKey key) const {
  const auto it = index_.find(key);
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

bool PoolSnapshot::Serves(std::size_t index, std::string_view model) const {
  return routing::Serves(workers_[index].capability, model);
}

bool PoolSnapshot::TakesNewWork(std::size_t index) const {
  return !workers_[index].draining && workers_[index].weight > 0;
}

ModelRoute PoolSnapshot::RouteOf(std::string_view model) const {
  if (model.empty()) return {.any = !groups_[0].candidates.empty()};
  const auto it = models_.find(model);
  const Route& route = it != models_.end() ? it->second : unnamed_model_;
  return {.model = model, .group = route.group, .filter = route.filter, .any = route.any};
}

bool PoolSnapshot::Routes(std::uint32_t index, const ModelRoute& route) const {
  return !route.filter || Serves(index, route.model);
}

std::optional<std::size_t> PoolSnapshot::Pick(const ModelRoute& route, std::uint64_t random,
                                              std::uint64_t ticket, BusynessFn busyness,
                                              EligibleFn eligible) const {
  switch (strategy_) {
    case Strategy::kRoundRobin:
      return PickRoundRobin(route, ticket, eligible);
    case Strategy::kLeastBusy:
      return PickLeastBusy(route, random, busyness, eligible);
    case Strategy::kLatencyWeighted:
    case Strategy::kJouleWeighted:
    case Strategy::kCarbonWeighted:
      break;
  }
  return PickWeighted(route, random, busyness, eligible);
}

std::optional<std::size_t> PoolSnapshot::PickRoundRobin(const ModelRoute& route,
                                                        std::uint64_t ticket,
                                                        EligibleFn eligible) const {
  const std::vector<std::uint32_t>& candidates = groups_[route.group].candidates;
  const std::size_t n = candidates.size();
  if (n == 0) return std::nullopt;
  std::size_t position = ticket % n;
  for (std::size_t tried = 0; tried < n; ++tried) {
    const std::uint32_t i = candidates[position];
    if (Routes(i, route) && eligible(i)) return i;
    position = position + 1 == n ? 0 : position + 1;
  }
  return std::nullopt;
}

std::optional<std::size_t> PoolSnapshot::PickLeastBusy(const ModelRoute& route,
                                                       std::uint64_t random, BusynessFn busyness,
                                                       EligibleFn eligible) const {
  const Group& group = groups_[route.group];
  const std::size_t n = group.candidates.size();
  if (n == 0) return std::nullopt;
  const auto ok = [&](std::uint32_t i) { return Routes(i, route) && eligible(i); };
  Stream stream(random);
  if (n > kLeastBusySamples) {
    std::optional<std::size_t> best;
    double best_busyness = 0;
    for (std::size_t k = 0; k < kLeastBusySamples; ++k) {
      const std::uint32_t i = group.candidates[Uniform(stream.Next(), n)];
      if (!ok(i)) continue;
      const double b = busyness(i);
      if (!best || b < best_busyness) {
        best = i;
        best_busyness = b;
      }
    }
    if (best) return best;
  }
  return ScanLeastBusy(group, stream.Next(), /*weighted=*/false, ok, busyness);
}

std::optional<std::size_t> PoolSnapshot::PickWeighted(const ModelRoute& route, std::uint64_t random,
                                                      BusynessFn busyness,
                                                      EligibleFn eligible) const {
  const Group& group = groups_[route.group];
  if (group.alias.empty()) return std::nullopt;
  const auto ok = [&](std::uint32_t i) { return Routes(i, route) && eligible(i); };
  Stream stream(random);
  const auto draw = [&]() -> std::optional<std::uint32_t> {
    for (std::size_t k = 0; k < kMaxRedraws; ++k) {
      const std::uint32_t i = group.candidates[group.alias.Draw(stream.Next())];
      if (ok(i)) return i;
    }
    return std::nullopt;
  };
  const std::optional<std::uint32_t> first = draw();
  if (!first) {
    return ScanLeastBusy(group, stream.Next(), /*weighted=*/true, ok, busyness);
  }
  const std::optional<std::uint32_t> second = draw();
  if (!second || *second == *first) return *first;
  return busyness(*second) < busyness(*first) ? *second : *first;
}

std::optional<std::size_t> PoolSnapshot::ScanLeastBusy(const Group& group, std::uint64_t random,
                                                       bool weighted,
                                                       FunctionRef<bool(std::uint32_t)> ok,
                                                       BusynessFn busyness) const {
  Stream stream(random);
  std::optional<std::size_t> best;
  double best_busyness = 0;
  std::uint64_t tied_weight = 0;  // of the candidates as busy as `best`, best included
  for (const std::uint32_t i : group.candidates) {
    if (!ok(i)) continue;
    const double b = busyness(i);
    if (best && b > best_busyness) continue;
    const std::uint64_t weight = weighted ? static_cast<std::uint64_t>(workers_[i].weight) : 1;
    if (!best || b < best_busyness) {
      best = i;
      best_busyness = b;
      tied_weight = weight;
    } else {  // a tie: keep each of the tied with probability in proportion to its weight
      tied_weight += weight;
      if (Uniform(stream.Next(), tied_weight) < weight) best = i;
    }
  }
  return best;
}

std::optional<std::size_t> PoolSnapshot::PlaceSession(SessionHash session, const ModelRoute& route,
                                                      EligibleFn eligible) const {
  const Group& group = groups_[route.group];
  if (group.candidates.empty()) return std::nullopt;
  const auto ok = [&](std::uint32_t i) { return Routes(i, route) && eligible(i); };
  MaglevTable::Preference preference = group.maglev.Prefer(session);
  for (std::uint32_t p = preference.Next(); p != MaglevTable::kNone; p = preference.Next()) {
    if (ok(group.candidates[p])) return group.candidates[p];
  }
  // Weighted rendezvous hashing: the eligible candidate with the highest w / -ln(u), u uniform in
  // (0, 1) from (session, worker key).
  std::optional<std::size_t> best;
  double best_score = 0;
  for (const std::uint32_t i : group.candidates) {
    if (!ok(i)) continue;
    const double u =
        (static_cast<double>(Mix64(session ^ Mix64(workers_[i].key)) >> 11U) + 0.5) * 0x1p-53;
    const double weight = UsesEqualWeights(strategy_) ? 1.0 : workers_[i].weight;
    const double score = weight / -std::log(u);
    if (!best || score > best_score) {
      best = i;
      best_score = score;
    }
  }
  return best;
}

std::optional<std::size_t> PoolSnapshot::PickUnweighted(const ModelRoute& route,
                                                        std::uint64_t random, BusynessFn busyness,
                                                        EligibleFn eligible) const {
  if (workers_.empty() || route.any) return std::nullopt;
  std::optional<std::size_t> best;
  double best_busyness = std::numeric_limits<double>::infinity();
  const std::size_t start = random % workers_.size();
  for (std::size_t k = 0; k < workers_.size(); ++k) {
    const std::size_t i = (start + k) % workers_.size();
    if (workers_[i].draining || !Serves(i, route.model) || !eligible(i)) continue;
    const double b = busyness(i);
    if (b < best_busyness) best = i, best_busyness = b;
  }
  return best;
}

}  // namespace eoc::routing
