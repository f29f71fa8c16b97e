#include "routing/pool_directory.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace eoc::routing {
namespace {

void CheckKey(std::string_view key) {
  const auto slash = key.find('/');
  if (key.size() > PoolDirectory::kMaxKeyBytes || slash == 0 || slash == std::string_view::npos ||
      slash + 1 == key.size() || key.find('/', slash + 1) != std::string_view::npos) {
    throw std::invalid_argument("pool key: must be \"namespace/name\" (at most " +
                                std::to_string(PoolDirectory::kMaxKeyBytes) + " bytes), got " +
                                Quoted(key));
  }
}

}  // namespace

PoolDirectory::PoolDirectory(SessionBudget& budget, PrefixBudget& prefix_budget,
                             std::size_t max_pools)
    : budget_(budget), prefix_budget_(prefix_budget), max_pools_(max_pools) {
  pools_.Store(std::make_shared<const Map>());
}

PoolDirectory::~PoolDirectory() {
  // Threads' caches may keep the map, and so the states, past the directory and the budgets:
  // retire them now, so that none touches a budget later.
  for (const auto& [key, state] : *pools_.LoadLocked()) state->Retire();
}

std::shared_ptr<PoolState> PoolDirectory::Find(std::string_view key) const {
  const std::shared_ptr<const Map>& pools = pools_.Load();
  const auto it = pools->find(key);
  if (it == pools->end()) return nullptr;
  return {pools, it->second.get()};  // counted on this thread's pin of the map
}

std::shared_ptr<PoolState> PoolDirectory::Configure(std::string_view key,
                                                    const PoolState::Options& options,
                                                    TimePoint now) {
  CheckKey(key);
  std::shared_ptr<PoolState> state;
  {
    const std::lock_guard lock(write_mu_);
    const std::shared_ptr<const Map> pools = pools_.LoadLocked();
    if (const auto it = pools->find(key); it != pools->end()) {
      state = it->second;
    } else {
      if (pools->size() >= max_pools_) {
        throw std::length_error("pool directory: at most " + std::to_string(max_pools_) +
                                " pools, cannot add " + Quoted(key));
      }
      auto next = std::make_shared<Map>(*pools);
      state = std::make_shared<PoolState>(options, budget_, prefix_budget_);
      next->emplace(std::string(key), state);
      pools_.Store(std::move(next));
      return state;
    }
  }
  state->Reconfigure(options, now);  // outside the directory's lock: it may answer waiting picks
  return state;
}

bool PoolDirectory::Remove(std::string_view key) {
  std::shared_ptr<PoolState> gone;
  {
    const std::lock_guard lock(write_mu_);
    const std::shared_ptr<const Map> pools = pools_.LoadLocked();
    const auto it = pools->find(key);
    if (it == pools->end()) return false;
    gone = it->second;
    auto next = std::make_shared<Map>(*pools);
    next->erase(next->find(key));
    pools_.Store(std::move(next));
  }
  gone->Retire();
  return true;
}

void PoolDirectory::Tick(TimePoint now) {
  const std::shared_ptr<const Map> pools = pools_.LoadLocked();
  for (const auto& [key, state] : *pools) state->Tick(now);
}

std::size_t PoolDirectory::Size() const { return pools_.LoadLocked()->size(); }

std::vector<std::string> PoolDirectory::Keys() const {
  const std::shared_ptr<const Map> pools = pools_.LoadLocked();
  std::vector<std::string> keys;
  keys.reserve(pools->size());
  for (const auto& [key, state] : *pools) keys.push_back(key);
  std::sort(keys.begin(), keys.end());
  return keys;
}

}  // namespace eoc::routing
