// The pools this replica routes for: a pool's key ("namespace/name") -> its PoolState, which holds
// the pool's current snapshot. The controller writes it as pools come, go, or get a new
// generation or routing spec; the pick handlers only read it, on every pick, without a lock (the
// map is immutable and swapped whole on each change: published.h), so they need nothing of the
// API or of Kubernetes. Pure: no I/O.
//
//   eoc::routing::SessionBudget budget(4'000'000);            // --max-sessions-total
//   eoc::routing::PrefixBudget prefix_budget(4'000'000);      // --max-prefix-blocks-total
//   eoc::routing::PoolDirectory pools(budget, prefix_budget);
//   // the controller, when a pool comes or its spec.routing changes (reconfigured in place):
//   std::shared_ptr<PoolState> state = pools.Configure("prod/chat", options, now);
//   state->SetSnapshot(PoolSnapshot::Build(workers, generation, strategy), now);
//   pools.Remove("prod/chat");                                 // the pool is gone
//   // a pick handler, on any thread:
//   if (std::shared_ptr<PoolState> pool = pools.Find("prod/chat")) pool->Pick(...);
//   pools.Tick(now);                                           // every second: each pool's Tick
//
// A lookup is one atomic load, a scan of this thread's small cache and one hash probe; it takes
// the directory's lock only on the first lookup after a change. The state it returns shares
// ownership with this thread's pin of the map, so holding it writes no count other threads
// write. Bounded: at most kMaxPools pools (or fewer, as built), keys of at most kMaxKeyBytes.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/text.h"
#include "routing/pool_state.h"
#include "routing/prefix_index.h"
#include "routing/published.h"
#include "routing/session_table.h"

namespace eoc::routing {

class PoolDirectory {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  // Far beyond a cluster's pools; a bound so that a runaway writer cannot grow it without end.
  static constexpr std::size_t kMaxPools = 10'000;
  // A namespace (63 bytes), "/", a name (253).
  static constexpr std::size_t kMaxKeyBytes = 63 + 1 + 253;

  // `budget` (the sessions of every pool together) and `prefix_budget` (their prefix blocks) must
  // outlive the directory. At most `max_pools` pools (a change copies the map: O(pools), so N
  // pools cost O(N^2) to add, about 0.1 s at 1,000).
  PoolDirectory(SessionBudget& budget, PrefixBudget& prefix_budget,
                std::size_t max_pools = kMaxPools);
  // Retires every pool (their waiting picks answer kUnavailable).
  ~PoolDirectory();
  PoolDirectory(const PoolDirectory&) = delete;
  PoolDirectory& operator=(const PoolDirectory&) = delete;
  PoolDirectory(PoolDirectory&&) = delete;
  PoolDirectory& operator=(PoolDirectory&&) = delete;

  // The pool's state; null for a pool that is not here. Thread-safe, no lock (see above).
  std::shared_ptr<PoolState> Find(std::string_view key) const;

  // Adds the pool with `options` (no snapshot yet: its picks answer kNotPublished), or
  // reconfigures the one that is here in place (PoolState::Reconfigure says what survives).
  // Returns its state. Throws std::invalid_argument for a key that is not "namespace/name" (both
  // parts non-empty, at most kMaxKeyBytes), std::length_error for a new pool past max_pools.
  std::shared_ptr<PoolState> Configure(std::string_view key, const PoolState::Options& options,
                                       TimePoint now);
  // Takes the pool out; its waiting picks answer kUnavailable. False if it was not here.
  bool Remove(std::string_view key);

  // Each pool's Tick (deadlines of waiting picks, expired sessions).
  void Tick(TimePoint now);
  std::size_t Size() const;
  std::vector<std::string> Keys() const;  // sorted

 private:
  using Map = StringMap<std::shared_ptr<PoolState>>;

  SessionBudget& budget_;
  PrefixBudget& prefix_budget_;
  const std::size_t max_pools_;
  std::mutex write_mu_;  // serialises Configure and Remove
  Published<Map> pools_;
};

}  // namespace eoc::routing
