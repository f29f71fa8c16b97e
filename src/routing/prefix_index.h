// The prefix index of one pool (DESIGN.md, "Prefix affinity"): from a prompt block's hash to the
// workers it was last sent to, so that a request sharing a prefix goes where that prefix's KV
// cache probably still is. Bounded by `max_blocks` and by a PrefixBudget shared by every pool's
// index (the controller's `--max-prefix-blocks-total`); keeps the last kWorkersPerBlock workers
// per block, sharded: each step locks one shard, never the index. Thread-safe.
//
//   eoc::routing::PrefixBudget budget(/*limit=*/4'000'000);  // outlives every index
//   eoc::routing::PrefixIndex index({.max_blocks = 1'000'000}, budget);
//   auto blocks = eoc::routing::PrefixHashes(model, prompt, 16);
//   if (auto match = index.LongestMatch(blocks, [&](WorkerKey w) { return WithinMargin(w); })) {
//     ...  // match->worker holds the longest prefix (match->blocks blocks) among eligible workers
//   }
//   index.Record(blocks, chosen_worker);  // after the pick, whatever decided it
//
// Matching relies on how block hashes chain (each seeded by the one before): block i's holders
// were sent the whole prefix 1..i, so they hold it as far as the engine's cache (itself a chain)
// still does, whether or not the index still holds the blocks before i. It may not: each shard
// evicts by its own recency, so a prompt can lose a shallow block and keep deeper ones, and a
// shallow block shared by many prompts has its holders replaced by later ones; neither is news of
// the engine's cache. So the longest match is the deepest block held with an eligible holder,
// whether or not the blocks before it are held: LongestMatch walks from the deepest block back,
// skipping blocks the index does not hold, to the first with an eligible worker. At most
// kMaxPrefixBlocks (256) shard lookups per call, one lock and one hash probe each, and at most 16
// eligibility calls; never O(workers). Record inserts a prompt's blocks deepest first, so that
// its first blocks are the most recently used and eviction tends to take deep blocks first.
//
// The budget. Every index (with room for any block) registers with its PrefixBudget, of limit T,
// from construction to Detach or destruction; n is how many are registered. An index's bound is
// min(max_blocks, T), and its guaranteed share G = min(max_blocks, floor(T / n)) (Share()). Each
// block held is one unit of the budget. A block that is new to the index:
//   - at the index's bound (its shard's part of it): replaces the shard's least recently used;
//   - else, with a unit left in the budget: takes it;
//   - else, with the index below G: takes a unit back from the index furthest over its own G,
//     which evicts its least recently used block, then takes that unit;
//   - else (at or over G, the budget spent): replaces this index's own least recently used.
// So an index within its share is never evicted by another: one pool's traffic cannot flush a
// quiet pool's share, and only blocks held past a share are taken across pools. "Least recently
// used across pools" is approximated so: the index furthest over its share gives back its
// oldest block (the oldest of one of its shards, taken in turn). A unit is freed with the
// recording shard's lock released (no thread holds two shard locks, nor one while it locks the
// budget), so another thread may take it first: the block then tries once more, and past that
// replaces its shard's own oldest, or, in an empty shard, is not recorded (the index is a hint).
// Costs: a block the index holds already, nothing more than before the budget; a new one while
// units are left, a compare-and-swap on the budget and an increment of the index's count; the
// search for the index furthest over, O(indexes) under the budget's lock, only when the budget is
// spent and the index is below its share.
//
// Memory: 48 bytes of node and 6 to 12 bytes of index per block, plus per-shard overheads:
// about 56 bytes per block at 1,000,000 blocks (measured by prefix_index_test).
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "routing/ids.h"
#include "routing/prefix_hash.h"
#include "routing/sharded_lru.h"
#include "routing/unit_budget.h"

namespace eoc::routing {

class PrefixIndex;

// How many blocks all prefix indexes together may hold, and which indexes share them (see the
// budget above). Thread-safe; must outlive every index that uses it.
class PrefixBudget {
 public:
  static constexpr std::size_t kUnlimited = UnitBudget::kUnlimited;

  explicit PrefixBudget(std::size_t limit = kUnlimited) : units_(limit) {}
  PrefixBudget(const PrefixBudget&) = delete;
  PrefixBudget& operator=(const PrefixBudget&) = delete;
  PrefixBudget(PrefixBudget&&) = delete;
  PrefixBudget& operator=(PrefixBudget&&) = delete;
  ~PrefixBudget() = default;

  // The guaranteed share of an index bounded by `max_blocks`: min(max_blocks, Limit() / n), n
  // the indexes registered (at least 1).
  std::size_t ShareOf(std::size_t max_blocks) const;

  std::size_t Used() const { return units_.Used(); }
  std::size_t Limit() const { return units_.Limit(); }
  std::size_t Registered() const { return registered_.load(std::memory_order_relaxed); }

 private:
  friend class PrefixIndex;

  void Register(PrefixIndex* index);
  void Unregister(PrefixIndex* index);
  // Has the registered index furthest over its share evict its least recently used block, giving
  // its unit back; false if none is over its share. Locks this budget, then one of that index's
  // shards: a caller must hold no shard lock.
  bool ReclaimFromFurthestOver();

  UnitBudget units_;
  std::atomic<std::size_t> registered_{0};  // indexes_.size()
  std::mutex mu_;
  std::vector<PrefixIndex*> indexes_;  // guarded by mu_
};

class PrefixIndex {
 public:
  // Workers remembered per block, the most recent first.
  static constexpr std::size_t kWorkersPerBlock = 4;

  struct Options {
    // At most this many blocks in the index (a pool's `prefixAffinity.maxBlocks`), and at most
    // the budget's limit. 0: the index records nothing.
    std::size_t max_blocks = 1'000'000;
    // Shards (rounded up to a power of two, at most 1024 and at most max_blocks). 0: chosen from
    // max_blocks, 64 for large indexes, fewer for small ones so each keeps at least 64 blocks.
    std::size_t shards = 0;

    bool operator==(const Options&) const = default;
  };

  struct Match {
    WorkerKey worker = 0;
    std::size_t blocks = 0;  // the length of the matched prefix, in blocks (at least 1)
  };

  // Registers with `budget`, which must outlive the index (unless Detach is called first).
  PrefixIndex(const Options& options, PrefixBudget& budget);
  // Detaches (unless Detach did).
  ~PrefixIndex();
  PrefixIndex(const PrefixIndex&) = delete;
  PrefixIndex& operator=(const PrefixIndex&) = delete;
  PrefixIndex(PrefixIndex&&) = delete;
  PrefixIndex& operator=(PrefixIndex&&) = delete;

  // `blocks` (a prompt's hashes, in order) were sent to `worker`: each becomes the most recently
  // used, with `worker` first among its workers; a new block takes a unit of the budget or
  // evicts one (see the budget above). Only the first kMaxPrefixBlocks count, here and in
  // LongestMatch. Worker key 0 is not recorded (it marks an empty place).
  void Record(std::span<const BlockHash> blocks, WorkerKey worker);

  // The eligible worker holding the longest prefix of `blocks` (the deepest block held with an
  // eligible holder, see above), the most recently recorded first among workers of the same
  // block; nullopt if no block with an eligible worker is known.
  // `eligible(WorkerKey) -> bool` is called without any lock held, at most once per worker
  // (for up to 16 distinct workers). Recency is not changed (Record does that).
  template <typename Eligible>
  std::optional<Match> LongestMatch(std::span<const BlockHash> blocks, Eligible&& eligible) const;

  // For an index being dropped while views of it may live on a while (in threads' caches:
  // published.h), perhaps past the budget: unregisters from the budget, forgets every block,
  // giving their units back, and frees their memory; from then on the index records nothing and
  // never touches the budget again (its destructor included). Returns how many blocks went.
  std::size_t Detach();
  // Blocks held. Locks each shard in turn.
  std::size_t Size() const;
  // The guaranteed share: min(max_blocks, floor(T / n)) (see the budget above), as of now.
  std::size_t Share() const { return budget_.ShareOf(max_blocks_); }
  // Bytes held by the index and its shards.
  std::size_t MemoryBytes() const;
  std::size_t ShardCount() const { return shards_.Count(); }

 private:
  friend class PrefixBudget;  // reads held_ and calls EvictOldest to reclaim a unit

  using Holders = std::array<WorkerKey, kWorkersPerBlock>;  // most recent first; 0: empty
  using Shards = ShardedLru<Holders>;
  using Shard = Shards::Shard;

  // The workers recorded for `block`; false if it is not in the index.
  bool HoldersOf(BlockHash block, Holders& out) const;
  // Under `shard`'s lock: makes the block the most recently used, with `worker` first among its
  // holders; false if the index does not hold it (true too when the index records nothing).
  bool TouchLocked(Shard& shard, std::uint64_t key, WorkerKey worker);
  // Where a new block's unit is to come from, when the budget had none left for it.
  enum class Unit { kNone, kFromFurthestOver, kFromOwnShards };
  // Under `shard`'s lock: inserts a block the index does not hold if it can without freeing a
  // unit elsewhere (see the budget above), and says kNone; else says where the unit is to come
  // from. When `last`, always kNone: the block is then not recorded if it could not be.
  Unit InsertLocked(Shard& shard, std::uint64_t key, WorkerKey worker, bool last);
  // Frees a unit as `unit` says, then records the block if it can (the second and last try).
  void RecordAfterFreeing(const Shards::Slot& slot, WorkerKey worker, Unit unit);
  // Evicts the least recently used block of one non-empty shard other than `except` (the shards
  // taken in turn), giving its unit back to the budget. False if there is none. Locks one shard
  // at a time; a caller must hold none.
  bool EvictOldest(std::size_t except);

  const std::size_t max_blocks_;
  PrefixBudget& budget_;
  std::atomic<std::size_t> held_{0};  // blocks held, over all shards (the budget's view)
  std::atomic<bool> detached_{false};
  std::atomic<std::size_t> next_eviction_{0};  // EvictOldest's first shard to try
  Shards shards_;
};

template <typename Eligible>
std::optional<PrefixIndex::Match> PrefixIndex::LongestMatch(std::span<const BlockHash> blocks,
                                                            Eligible&& eligible) const {
  // From the deepest block back (see above), asking about each worker once.
  blocks = blocks.first(std::min(blocks.size(), kMaxPrefixBlocks));
  std::array<WorkerKey, 16> rejected{};
  std::size_t rejected_count = 0;
  Holders holders{};
  for (std::size_t depth = blocks.size(); depth > 0; --depth) {
    if (!HoldersOf(blocks[depth - 1], holders)) continue;
    for (const WorkerKey worker : holders) {
      if (worker == 0) break;
      const std::span<const WorkerKey> seen(rejected.data(), rejected_count);
      if (std::find(seen.begin(), seen.end(), worker) != seen.end()) continue;
      if (eligible(worker)) return Match{.worker = worker, .blocks = depth};
      if (rejected_count < rejected.size()) rejected[rejected_count++] = worker;
    }
  }
  return std::nullopt;
}

}  // namespace eoc::routing
