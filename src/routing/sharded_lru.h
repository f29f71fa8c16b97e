// An LruMap split into shards, each with its own lock: the storage of the session table and the
// prefix index. Their keys are chosen by callers (a session id's hash, a client's prefix hashes),
// so a key is never stored or placed as it is: its slot key is the process's keyed hash of it
// (common/keyed_hash.h), which stands for it in its shard's map, and the slot key's top bits are
// its shard, so that no one can craft keys that crowd one shard or one slot. The table's bound is
// split exactly over the shards (the remainder to the first ones), so the bound over all shards
// is exact while recency is exact only within a shard.
//
//   ShardedLru<Binding> shards(/*capacity=*/1'000'000, /*shards=*/0, /*min_per_shard=*/64);
//   const auto slot = shards.SlotOf(session);
//   auto& shard = shards.At(slot.shard);
//   const std::lock_guard lock(shard.mu);
//   shard.map.Insert(slot.key, binding);
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "common/keyed_hash.h"
#include "common/lru_map.h"
#include "routing/ids.h"

namespace eoc::routing {

template <typename V>
class ShardedLru {
 public:
  // Cache-line aligned so that neighbouring shards' locks do not share a line.
  struct alignas(64) Shard {
    explicit Shard(std::size_t capacity) : map(capacity) {}
    mutable std::mutex mu;
    using Map = LruMap<std::uint64_t, V>;
    Map map;
  };

  static constexpr std::size_t kDefaultShards = 64;
  static constexpr std::size_t kMaxShards = 1024;

  // `shards` 0: capacity / min_per_shard, between 1 and kDefaultShards (small tables get fewer
  // shards, so that each stays close to an exact LRU). Rounded up to a power of two, at most
  // kMaxShards, and at most `capacity` (every shard can hold one entry when there is any room).
  ShardedLru(std::size_t capacity, std::size_t shards, std::size_t min_per_shard) {
    if (shards == 0) {
      shards = std::clamp<std::size_t>(capacity / std::max<std::size_t>(min_per_shard, 1), 1,
                                       kDefaultShards);
    }
    shards = std::bit_ceil(std::min(shards, kMaxShards));
    if (capacity > 0) shards = std::min(shards, std::bit_floor(capacity));
    shift_ = 64 - std::countr_zero(shards);
    count_ = shards;
    shards_.reserve(shards);
    for (std::size_t i = 0; i < shards; ++i) {
      shards_.push_back(std::make_unique<Shard>(ShareOf(capacity, i)));
    }
  }

  // Empties every shard and frees its storage (the bounds stay). Locks each shard in turn;
  // returns how many entries went.
  std::size_t Clear() {
    std::size_t cleared = 0;
    for (const auto& shard : shards_) {
      const std::lock_guard lock(shard->mu);
      cleared += shard->map.Size();
      shard->map = typename Shard::Map(shard->map.Capacity());
    }
    return cleared;
  }

  // A new bound over all shards, split as the constructor splits it (the shard count stays: a
  // bound below it leaves some shards without room). Past its share, each shard's least recently
  // used entries go. Locks each shard in turn; returns how many entries went.
  std::size_t SetCapacity(std::size_t capacity) {
    std::size_t evicted = 0;
    for (std::size_t i = 0; i < shards_.size(); ++i) {
      const std::lock_guard lock(shards_[i]->mu);
      evicted += shards_[i]->map.SetCapacity(ShareOf(capacity, i));
    }
    return evicted;
  }

  // Where a caller's key lives: its slot key (the key of its entry in the shard's map) and its
  // shard's index.
  struct Slot {
    std::uint64_t key = 0;
    std::size_t shard = 0;
  };
  Slot SlotOf(std::uint64_t key) const {
    const std::uint64_t slot_key = keyed_(key);
    return {.key = slot_key, .shard = shift_ >= 64 ? 0 : slot_key >> shift_};
  }
  Shard& At(std::size_t index) const { return *shards_[index]; }
  std::size_t Count() const { return shards_.size(); }

  // Entries over all shards; locks each in turn.
  std::size_t Size() const {
    std::size_t size = 0;
    for (const auto& shard : shards_) {
      const std::lock_guard lock(shard->mu);
      size += shard->map.Size();
    }
    return size;
  }

  // Bytes held by the shards and their maps.
  std::size_t MemoryBytes() const {
    std::size_t bytes = sizeof(*this) + shards_.capacity() * sizeof(shards_[0]);
    for (const auto& shard : shards_) {
      const std::lock_guard lock(shard->mu);
      bytes += sizeof(Shard) - sizeof(shard->map) + shard->map.MemoryBytes();
    }
    return bytes;
  }

 private:
  // Shard i's share of `capacity`: an equal part, the remainder to the first shards.
  std::size_t ShareOf(std::size_t capacity, std::size_t i) const {
    return capacity / count_ + (i < capacity % count_ ? 1 : 0);
  }

  const KeyedHash& keyed_ = KeyedHash::ForProcess();
  int shift_ = 64;         // a slot key's shard: its top bits, key >> shift_ (64: shard 0)
  std::size_t count_ = 1;  // shards_.size(), from the start
  std::vector<std::unique_ptr<Shard>> shards_;
};

}  // namespace eoc::routing
