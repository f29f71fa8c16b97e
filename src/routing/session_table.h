// The bounded session -> worker binding table of one pool (DESIGN.md, "Session affinity"): a
// session's next turn returns to the worker that holds its prefix KV cache. Bounded three ways:
// `max_sessions` per table, a `ttl` since the session was last used, and a SessionBudget shared
// by every pool's table (the controller's `--max-sessions-total`). Thread-safe, sharded: each
// operation locks one shard, never the table.
//
//   eoc::routing::SessionBudget budget(/*limit=*/4'000'000);  // outlives every table
//   eoc::routing::SessionTable sessions({.max_sessions = 1'000'000, .ttl = std::chrono::hours(1)},
//                                       budget);
//   const auto now = clock.Now();
//   if (auto worker = sessions.Lookup(session, now); worker && snapshot.Has(*worker)) {
//     ...  // a known session: back to its worker (or elsewhere for this turn only, if it is full)
//   } else {
//     sessions.Bind(session, PlaceNewSession(session), now);  // new, expired, or worker gone
//   }
//   // now and then (e.g. each scrape): sessions.Sweep(clock.Now());
//
// Eviction policy. A session unused for `ttl` is gone: a lookup misses, and its memory and budget
// are reclaimed lazily (a few per Bind from the least recently used end) or by Sweep(). A new
// session that finds its shard at its bound (max_sessions / shards) evicts the shard's least
// recently used session. A new session that finds the global budget spent evicts the least
// recently used session of its own shard, or, if that shard is empty, of another shard of the
// same table: a table never evicts another table's sessions, so one busy pool cannot flush a
// quiet pool's bindings. If the whole table is empty and the budget is spent by other tables,
// Bind declines (returns false) and the session goes unpinned: the caller places it through the
// consistent-hash table each turn, which is deterministic anyway.
// Recency is exact within a shard; across shards it is approximate (statistically close at large
// sizes, where every shard holds thousands of sessions). `shards = 1` makes it exact.
//
// Memory: 32 bytes of node and 6 to 12 bytes of index per session, plus per-shard overheads:
// about 40 bytes per session at 1,000,000 sessions (measured by session_table_test).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "routing/ids.h"
#include "routing/sharded_lru.h"
#include "routing/unit_budget.h"

namespace eoc::routing {

// How many sessions all tables together may hold; must outlive every table that uses it.
using SessionBudget = UnitBudget;

class SessionTable {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  struct Options {
    // At most this many sessions in this table (a pool's `sessionAffinity.maxSessions`). 0: the
    // table binds nothing.
    std::size_t max_sessions = 1'000'000;
    // A session unused this long is forgotten (`sessionAffinity.ttlSeconds`). Zero or negative:
    // sessions never expire (only the bounds evict them).
    std::chrono::nanoseconds ttl = std::chrono::hours(1);
    // Shards (rounded up to a power of two, at most 1024 and at most max_sessions). 0: chosen from
    // max_sessions, 64 for large tables, fewer for small ones so each keeps at least 64 sessions.
    std::size_t shards = 0;

    bool operator==(const Options&) const = default;
  };

  // What the table holds for a session.
  struct Entry {
    WorkerKey worker = 0;
    TimePoint expires;  // TimePoint::max() when the table has no ttl
  };

  // `budget` must outlive the table.
  SessionTable(const Options& options, SessionBudget& budget);
  // Gives the table's sessions back to the budget (unless Detach() did).
  ~SessionTable();
  SessionTable(const SessionTable&) = delete;
  SessionTable& operator=(const SessionTable&) = delete;
  SessionTable(SessionTable&&) = delete;
  SessionTable& operator=(SessionTable&&) = delete;

  // The worker bound to `session`, if a live binding exists. A hit makes the session the most
  // recently used and restarts its ttl; an expired binding is a miss and is removed.
  std::optional<WorkerKey> Lookup(SessionHash session, TimePoint now);
  // As Lookup, but changes nothing: for the sessions endpoint's GET.
  std::optional<Entry> Peek(SessionHash session, TimePoint now) const;
  // Binds `session` to `worker` (a new binding, or a rebinding), most recently used, its ttl
  // starting at `now`. May evict (see the policy above). False only when the binding could not
  // be stored: max_sessions is 0, or this table is empty and the global budget is spent (or,
  // rarely, another table took the unit that this table freed for it).
  bool Bind(SessionHash session, WorkerKey worker, TimePoint now);
  // Removes the binding; false if there was none.
  bool Forget(SessionHash session);
  // For a table being dropped while views of it may live on a while (in threads' caches:
  // published.h), perhaps past the budget: removes every binding, gives their budget back and
  // frees their memory; from then on the table binds nothing and never touches the budget again
  // (its destructor included). Returns how many bindings went.
  std::size_t Detach();
  // A changed bound and ttl (a pool's `sessionAffinity`), in place: bindings stay. A smaller
  // `max_sessions` evicts the least recently used of each shard down to its share (the shard
  // count stays as built), giving their budget back; a new `ttl` applies to every binding from
  // its last use. Returns how many bindings went.
  std::size_t Resize(std::size_t max_sessions, std::chrono::nanoseconds ttl);
  // Removes every expired binding, giving their budget back. Returns how many. Cost: the number
  // removed plus one per shard.
  std::size_t Sweep(TimePoint now);

  // Bindings held, expired ones not yet reclaimed included. Locks each shard in turn.
  std::size_t Size() const;
  // Bindings the bounds pushed out (max_sessions, a smaller Resize, the global budget), since the
  // table was built; expiry and Forget are not evictions.
  std::uint64_t Evictions() const { return evictions_.load(std::memory_order_relaxed); }
  // Bytes held by the table and its shards.
  std::size_t MemoryBytes() const;
  std::size_t ShardCount() const { return shards_.Count(); }
  // As built, with the bound and ttl of the last Resize.
  Options options() const;

 private:
  struct Binding {
    WorkerKey worker = 0;
    TimePoint::rep last_used = 0;  // steady_clock ticks
  };
  using Shards = ShardedLru<Binding>;
  using Shard = Shards::Shard;

  bool Expired(const Binding& binding, TimePoint now) const;
  // Removes up to `limit` expired bindings from the shard's least recently used end.
  std::size_t ReclaimExpiredLocked(Shard& shard, TimePoint now, std::size_t limit);
  // Evicts the least recently used binding of some non-empty shard other than `except`, giving
  // its unit back to the budget. False if every other shard is empty.
  bool EvictFromOtherShard(std::size_t except);

  std::chrono::nanoseconds Ttl() const {
    return std::chrono::nanoseconds(ttl_.load(std::memory_order_relaxed));
  }

  const std::size_t shard_option_;  // Options::shards, as given
  std::atomic<std::size_t> max_sessions_;
  std::atomic<std::chrono::nanoseconds::rep> ttl_;
  std::atomic<bool> detached_{false};
  std::atomic<std::uint64_t> evictions_{0};
  SessionBudget& budget_;
  Shards shards_;
};

}  // namespace eoc::routing
