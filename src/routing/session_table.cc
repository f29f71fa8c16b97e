#include "routing/session_table.h"

#include <algorithm>
#include <bit>

namespace eoc::routing {

namespace {

// Small tables get fewer shards, so that each shard keeps at least this many sessions and the
// per-shard bound stays close to an exact LRU.
constexpr std::size_t kMinSessionsPerShard = 64;
// Expired bindings reclaimed by one Bind, so a Bind after a long idle spell stays cheap; Sweep
// reclaims the rest.
constexpr std::size_t kReclaimPerBind = 8;

}  // namespace

SessionTable::SessionTable(const Options& options, SessionBudget& budget)
    : shard_option_(options.shards),
      max_sessions_(options.max_sessions),
      ttl_(options.ttl.count()),
      budget_(budget),
      shards_(options.max_sessions, options.shards, kMinSessionsPerShard) {}

SessionTable::~SessionTable() {
  if (!detached_.load()) budget_.Release(Size());
}

bool SessionTable::Expired(const Binding& binding, TimePoint now) const {
  const std::chrono::nanoseconds ttl = Ttl();
  if (ttl <= std::chrono::nanoseconds::zero()) return false;
  const TimePoint last_used{TimePoint::duration(binding.last_used)};
  return now - last_used >= ttl;
}

std::optional<WorkerKey> SessionTable::Lookup(SessionHash session, TimePoint now) {
  const auto slot = shards_.SlotOf(session);
  Shard& shard = shards_.At(slot.shard);
  const std::lock_guard lock(shard.mu);
  Binding* binding = shard.map.Touch(slot.key);
  if (binding == nullptr) return std::nullopt;
  if (Expired(*binding, now)) {
    shard.map.Erase(slot.key);
    budget_.Release(1);
    return std::nullopt;
  }
  binding->last_used = std::max(binding->last_used, now.time_since_epoch().count());
  return binding->worker;
}

std::optional<SessionTable::Entry> SessionTable::Peek(SessionHash session, TimePoint now) const {
  const auto slot = shards_.SlotOf(session);
  const Shard& shard = shards_.At(slot.shard);
  const std::lock_guard lock(shard.mu);
  const Binding* binding = shard.map.Find(slot.key);
  if (binding == nullptr || Expired(*binding, now)) return std::nullopt;
  Entry entry{.worker = binding->worker, .expires = TimePoint::max()};
  if (const std::chrono::nanoseconds ttl = Ttl(); ttl > std::chrono::nanoseconds::zero()) {
    entry.expires = TimePoint{TimePoint::duration(binding->last_used)} +
                    std::chrono::duration_cast<TimePoint::duration>(ttl);
  }
  return entry;
}

bool SessionTable::Bind(SessionHash session, WorkerKey worker, TimePoint now) {
  const auto slot = shards_.SlotOf(session);
  Shard& shard = shards_.At(slot.shard);
  const Binding fresh{.worker = worker, .last_used = now.time_since_epoch().count()};
  // Twice at most: the second time after freeing a budget unit in another shard.
  for (int attempt = 0; attempt < 2; ++attempt) {
    {
      const std::lock_guard lock(shard.mu);
      // Under the lock: Resize may change the capacity, Detach empties the shard after the flag.
      if (shard.map.Capacity() == 0 || detached_.load(std::memory_order_relaxed)) return false;
      if (Binding* binding = shard.map.Touch(slot.key)) {
        *binding =
            Binding{.worker = worker, .last_used = std::max(binding->last_used, fresh.last_used)};
        return true;
      }
      ReclaimExpiredLocked(shard, now, kReclaimPerBind);
      if (shard.map.Full()) {
        // The shard's bound: its least recently used session gives its place (and its budget
        // unit) to the new one.
        shard.map.PopOldest();
        evictions_.fetch_add(1, std::memory_order_relaxed);
        shard.map.Insert(slot.key, fresh);
        return true;
      }
      if (budget_.TryAcquire()) {
        shard.map.Insert(slot.key, fresh);
        return true;
      }
      if (!shard.map.Empty()) {
        // The global budget is spent: this table pays, from this shard.
        shard.map.PopOldest();
        evictions_.fetch_add(1, std::memory_order_relaxed);
        shard.map.Insert(slot.key, fresh);
        return true;
      }
    }
    // This shard is empty and the budget spent: free a unit elsewhere in this table (with this
    // shard's lock released, so that no thread ever holds two shard locks).
    if (!EvictFromOtherShard(slot.shard)) return false;
  }
  return false;
}

bool SessionTable::Forget(SessionHash session) {
  const auto slot = shards_.SlotOf(session);
  Shard& shard = shards_.At(slot.shard);
  const std::lock_guard lock(shard.mu);
  if (!shard.map.Erase(slot.key)) return false;
  budget_.Release(1);
  return true;
}

std::size_t SessionTable::Detach() {
  if (detached_.exchange(true)) return 0;
  // Binds check the flag under their shard's lock: none lands in a shard after it is cleared.
  const std::size_t removed = shards_.Clear();
  budget_.Release(removed);
  return removed;
}

std::size_t SessionTable::Resize(std::size_t max_sessions, std::chrono::nanoseconds ttl) {
  ttl_.store(ttl.count(), std::memory_order_relaxed);
  max_sessions_.store(max_sessions, std::memory_order_relaxed);
  const std::size_t evicted = shards_.SetCapacity(max_sessions);
  budget_.Release(evicted);
  evictions_.fetch_add(evicted, std::memory_order_relaxed);
  return evicted;
}

SessionTable::Options SessionTable::options() const {
  return {.max_sessions = max_sessions_.load(std::memory_order_relaxed),
          .ttl = Ttl(),
          .shards = shard_option_};
}

std::size_t SessionTable::Sweep(TimePoint now) {
  std::size_t removed = 0;
  for (std::size_t i = 0; i < shards_.Count(); ++i) {
    Shard& shard = shards_.At(i);
    const std::lock_guard lock(shard.mu);
    removed += ReclaimExpiredLocked(shard, now, std::numeric_limits<std::size_t>::max());
  }
  return removed;
}

std::size_t SessionTable::ReclaimExpiredLocked(Shard& shard, TimePoint now, std::size_t limit) {
  // The least recently used end holds the oldest last use: with one ttl for the whole table, it
  // expires first. (Threads' clocks can interleave by a little; a binding that expired out of
  // order is still a miss on lookup and is reclaimed when it reaches the end.)
  std::size_t removed = 0;
  while (removed < limit && !shard.map.Empty() && Expired(shard.map.Oldest(), now)) {
    shard.map.PopOldest();
    ++removed;
  }
  if (removed > 0) budget_.Release(removed);
  return removed;
}

bool SessionTable::EvictFromOtherShard(std::size_t except) {
  // Starting after `except`, so that different empty shards take from different neighbours.
  for (std::size_t i = 1; i < shards_.Count(); ++i) {
    Shard& shard = shards_.At((except + i) % shards_.Count());
    const std::lock_guard lock(shard.mu);
    if (shard.map.Empty()) continue;
    shard.map.PopOldest();
    evictions_.fetch_add(1, std::memory_order_relaxed);
    budget_.Release(1);
    return true;
  }
  return false;
}

std::size_t SessionTable::Size() const { return shards_.Size(); }

std::size_t SessionTable::MemoryBytes() const {
  return sizeof(*this) - sizeof(shards_) + shards_.MemoryBytes();
}

}  // namespace eoc::routing
