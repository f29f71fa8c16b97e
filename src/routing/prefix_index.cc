#include "routing/prefix_index.h"

#include <algorithm>
#include <bit>
#include <span>

namespace eoc::routing {

namespace {

constexpr std::size_t kMinBlocksPerShard = 64;

}  // namespace

std::size_t PrefixBudget::ShareOf(std::size_t max_blocks) const {
  return std::min(max_blocks, Limit() / std::max<std::size_t>(Registered(), 1));
}

void PrefixBudget::Register(PrefixIndex* index) {
  const std::lock_guard lock(mu_);
  indexes_.push_back(index);
  registered_.store(indexes_.size(), std::memory_order_relaxed);
}

void PrefixBudget::Unregister(PrefixIndex* index) {
  const std::lock_guard lock(mu_);
  std::erase(indexes_, index);
  registered_.store(indexes_.size(), std::memory_order_relaxed);
}

bool PrefixBudget::ReclaimFromFurthestOver() {
  // Under mu_, so that no index unregisters (and goes) meanwhile.
  const std::lock_guard lock(mu_);
  PrefixIndex* furthest = nullptr;
  std::size_t most_over = 0;
  for (PrefixIndex* index : indexes_) {
    const std::size_t held = index->held_.load(std::memory_order_relaxed);
    const std::size_t share = ShareOf(index->max_blocks_);
    if (held > share && held - share > most_over) {
      most_over = held - share;
      furthest = index;
    }
  }
  return furthest != nullptr && furthest->EvictOldest(furthest->shards_.Count());
}

PrefixIndex::PrefixIndex(const Options& options, PrefixBudget& budget)
    : max_blocks_(options.max_blocks),
      budget_(budget),
      shards_(std::min(options.max_blocks, budget.Limit()), options.shards, kMinBlocksPerShard) {
  if (max_blocks_ > 0 && budget_.Limit() > 0) budget_.Register(this);
}

PrefixIndex::~PrefixIndex() { Detach(); }

std::size_t PrefixIndex::Detach() {
  if (detached_.exchange(true)) return 0;
  budget_.Unregister(this);
  // Records check the flag under their shard's lock: none lands in a shard after it is cleared.
  const std::size_t removed = shards_.Clear();
  held_.fetch_sub(removed, std::memory_order_relaxed);
  budget_.units_.Release(removed);
  return removed;
}

void PrefixIndex::Record(std::span<const BlockHash> blocks, WorkerKey worker) {
  if (worker == 0) return;
  blocks = blocks.first(std::min(blocks.size(), kMaxPrefixBlocks));
  // Deepest first, so that the prompt's first blocks end up the most recently used.
  for (std::size_t i = blocks.size(); i-- > 0;) {
    const auto slot = shards_.SlotOf(blocks[i]);
    Shard& shard = shards_.At(slot.shard);
    Unit unit = Unit::kNone;
    {
      const std::lock_guard lock(shard.mu);
      if (TouchLocked(shard, slot.key, worker)) continue;
      unit = InsertLocked(shard, slot.key, worker, /*last=*/false);
    }
    if (unit != Unit::kNone) RecordAfterFreeing(slot, worker, unit);
  }
}

bool PrefixIndex::TouchLocked(Shard& shard, std::uint64_t key, WorkerKey worker) {
  // Under the lock: Detach empties the shard after the flag.
  if (shard.map.Capacity() == 0 || detached_.load(std::memory_order_relaxed)) return true;
  Holders* holders = shard.map.Touch(key);
  if (holders == nullptr) return false;
  // Move `worker` to the front: shift down the ones before it (or all, dropping the last).
  std::size_t at = 0;
  while (at + 1 < holders->size() && (*holders)[at] != worker) ++at;
  const std::span<WorkerKey> moved(holders->data(), at + 1);
  std::move_backward(moved.begin(), moved.end() - 1, moved.end());
  holders->front() = worker;
  return true;
}

PrefixIndex::Unit PrefixIndex::InsertLocked(Shard& shard, std::uint64_t key, WorkerKey worker,
                                            bool last) {
  if (!shard.map.Full() && budget_.units_.TryAcquire()) {
    shard.map.Insert(key, Holders{worker});
    held_.fetch_add(1, std::memory_order_relaxed);
    return Unit::kNone;
  }
  // The shard is at its part of the bound, or the budget is spent.
  const bool below_share = !shard.map.Full() && held_.load(std::memory_order_relaxed) < Share();
  if (!shard.map.Empty() && (!below_share || last)) {
    // The shard's least recently used block gives its place (and its unit) to the new one: at
    // the bound, at or over the share, and below it when freeing a unit did not bring one.
    shard.map.PopOldest();
    shard.map.Insert(key, Holders{worker});
    return Unit::kNone;
  }
  if (last) return Unit::kNone;  // no unit for it, and nothing of this shard's to replace
  return below_share ? Unit::kFromFurthestOver : Unit::kFromOwnShards;
}

void PrefixIndex::RecordAfterFreeing(const Shards::Slot& slot, WorkerKey worker, Unit unit) {
  // With the shard's lock released: no thread holds two shard locks, nor one while it locks the
  // budget.
  if (unit == Unit::kFromFurthestOver) {
    budget_.ReclaimFromFurthestOver();
  } else {
    EvictOldest(slot.shard);
  }
  // Once more, whatever that freed: another thread may have taken the unit first, or recorded
  // the block.
  Shard& shard = shards_.At(slot.shard);
  const std::lock_guard lock(shard.mu);
  if (!TouchLocked(shard, slot.key, worker)) InsertLocked(shard, slot.key, worker, /*last=*/true);
}

bool PrefixIndex::EvictOldest(std::size_t except) {
  const std::size_t count = shards_.Count();
  const std::size_t first = next_eviction_.fetch_add(1, std::memory_order_relaxed);
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t at = (first + i) % count;
    if (at == except) continue;
    Shard& shard = shards_.At(at);
    const std::lock_guard lock(shard.mu);
    if (shard.map.Empty()) continue;
    shard.map.PopOldest();
    held_.fetch_sub(1, std::memory_order_relaxed);
    budget_.units_.Release(1);
    return true;
  }
  return false;
}

bool PrefixIndex::HoldersOf(BlockHash block, Holders& out) const {
  const auto slot = shards_.SlotOf(block);
  const Shard& shard = shards_.At(slot.shard);
  const std::lock_guard lock(shard.mu);
  const Holders* holders = shard.map.Find(slot.key);
  if (holders == nullptr) return false;
  out = *holders;
  return true;
}

std::size_t PrefixIndex::Size() const { return shards_.Size(); }

std::size_t PrefixIndex::MemoryBytes() const {
  return sizeof(*this) - sizeof(shards_) + shards_.MemoryBytes();
}

}  // namespace eoc::routing
