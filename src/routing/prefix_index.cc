#include "routing/prefix_index.h"

#include <algorithm>
#include <bit>
#include <span>

namespace eoc::routing {

namespace {

constexpr std::size_t kMinBlocksPerShard = 64;

}  // namespace

PrefixIndex::PrefixIndex(const Options& options)
    : shards_(options.max_blocks, options.shards, kMinBlocksPerShard) {}

void PrefixIndex::Record(std::span<const BlockHash> blocks, WorkerKey worker) {
  if (worker == 0) return;
  blocks = blocks.first(std::min(blocks.size(), kMaxPrefixBlocks));
  // Deepest first, so that the prompt's first blocks end up the most recently used.
  for (std::size_t i = blocks.size(); i-- > 0;) {
    const auto slot = shards_.SlotOf(blocks[i]);
    Shard& shard = shards_.At(slot.shard);
    const std::lock_guard lock(shard.mu);
    if (shard.map.Capacity() == 0) return;
    if (Holders* holders = shard.map.Touch(slot.key)) {
      // Move `worker` to the front: shift down the ones before it (or all, dropping the last).
      std::size_t at = 0;
      while (at + 1 < holders->size() && (*holders)[at] != worker) ++at;
      const std::span<WorkerKey> moved(holders->data(), at + 1);
      std::move_backward(moved.begin(), moved.end() - 1, moved.end());
      holders->front() = worker;
      continue;
    }
    if (shard.map.Full()) shard.map.PopOldest();
    shard.map.Insert(slot.key, Holders{worker});
  }
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
