// The prefix index of one pool (DESIGN.md, "Prefix affinity"): from a prompt block's hash to the
// workers it was last sent to, so that a request sharing a prefix goes where that prefix's KV
// cache probably still is. Bounded by `max_blocks` (least recently used blocks go first), keeps
// the last kWorkersPerBlock workers per block, sharded: each step locks one shard, never the
// index. Thread-safe.
//
//   eoc::routing::PrefixIndex index({.max_blocks = 1'000'000});
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
// Memory: 48 bytes of node and 6 to 12 bytes of index per block, plus per-shard overheads:
// about 56 bytes per block at 1,000,000 blocks (measured by prefix_index_test).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "routing/ids.h"
#include "routing/prefix_hash.h"
#include "routing/sharded_lru.h"

namespace eoc::routing {

class PrefixIndex {
 public:
  // Workers remembered per block, the most recent first.
  static constexpr std::size_t kWorkersPerBlock = 4;

  struct Options {
    // At most this many blocks in the index (a pool's `prefixAffinity.maxBlocks`). 0: the index
    // records nothing.
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

  explicit PrefixIndex(const Options& options);

  // `blocks` (a prompt's hashes, in order) were sent to `worker`: each becomes the most recently
  // used, with `worker` first among its workers. Only the first kMaxPrefixBlocks count, here and
  // in LongestMatch. Worker key 0 is not recorded (it marks an empty place).
  void Record(std::span<const BlockHash> blocks, WorkerKey worker);

  // The eligible worker holding the longest prefix of `blocks` (the deepest block held with an
  // eligible holder, see above), the most recently recorded first among workers of the same
  // block; nullopt if no block with an eligible worker is known.
  // `eligible(WorkerKey) -> bool` is called without any lock held, at most once per worker
  // (for up to 16 distinct workers). Recency is not changed (Record does that).
  template <typename Eligible>
  std::optional<Match> LongestMatch(std::span<const BlockHash> blocks, Eligible&& eligible) const;

  // Forgets every block and frees their memory (the bound stays): for an index being dropped while
  // views of it may live on a while in threads' caches (published.h).
  void Clear() { shards_.Clear(); }
  // Blocks held.
  std::size_t Size() const;
  // Bytes held by the index and its shards.
  std::size_t MemoryBytes() const;
  std::size_t ShardCount() const { return shards_.Count(); }

 private:
  using Holders = std::array<WorkerKey, kWorkersPerBlock>;  // most recent first; 0: empty
  using Shards = ShardedLru<Holders>;
  using Shard = Shards::Shard;

  // The workers recorded for `block`; false if it is not in the index.
  bool HoldersOf(BlockHash block, Holders& out) const;

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
