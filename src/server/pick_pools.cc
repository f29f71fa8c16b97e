#include "server/pick_pools.h"

#include <stdexcept>
#include <utility>

#include "routing/pool_directory.h"

namespace eoc::server {

PickPools::PickPools() { entries_.Store(std::make_shared<const Map>()); }

std::shared_ptr<const PickPools::Entry> PickPools::Find(std::string_view key) const {
  const std::shared_ptr<const Map>& entries = entries_.Load();
  const auto it = entries->find(key);
  if (it == entries->end()) return nullptr;
  return {entries, &it->second};  // counted on this thread's pin of the map
}

void PickPools::Set(std::string_view key, std::shared_ptr<routing::PoolState> state,
                    const PoolHttpSettings& http) {
  if (state == nullptr) throw std::invalid_argument("PickPools::Set: null state");
  const std::lock_guard lock(write_mu_);
  const std::shared_ptr<const Map> entries = entries_.LoadLocked();
  const auto it = entries->find(key);
  if (it != entries->end() && it->second.state == state && it->second.http == http) return;
  if (it == entries->end() && entries->size() >= routing::PoolDirectory::kMaxPools) {
    throw std::length_error("pick pools: at most " +
                            std::to_string(routing::PoolDirectory::kMaxPools) +
                            " pools, cannot add " + Quoted(key));
  }
  auto next = std::make_shared<Map>(*entries);
  next->insert_or_assign(std::string(key), Entry{.state = std::move(state), .http = http});
  entries_.Store(std::move(next));
}

bool PickPools::Remove(std::string_view key) {
  const std::lock_guard lock(write_mu_);
  const std::shared_ptr<const Map> entries = entries_.LoadLocked();
  const auto it = entries->find(key);
  if (it == entries->end()) return false;
  auto next = std::make_shared<Map>(*entries);
  next->erase(next->find(key));
  entries_.Store(std::move(next));
  return true;
}

std::size_t PickPools::Size() const { return entries_.LoadLocked()->size(); }

}  // namespace eoc::server
