#include "routing/worker_cell.h"

#include <algorithm>

namespace eoc::routing {

std::uint64_t WorkerCell::BudgetOf(std::int64_t free) {
  return static_cast<std::uint64_t>(
             std::clamp(free, std::int64_t{0}, static_cast<std::int64_t>(kHalf)))
         << 32U;
}

std::int64_t WorkerCell::RoomIn(std::uint64_t budget) {
  return static_cast<std::int64_t>(budget >> 32U) - static_cast<std::int64_t>(budget & kHalf);
}

ScrapeMark WorkerCell::Mark() const {
  return {.epoch = epoch,
          .picks = picks.load(std::memory_order_relaxed),
          .blocks = static_cast<std::int64_t>(kv_budget.load(std::memory_order_relaxed) & kHalf)};
}

void WorkerCell::Observe(const Load& load, const ScrapeMark* since, std::uint64_t next_epoch) {
  if (!load.available) {
    last.available = false;
    block_size.store(0, std::memory_order_relaxed);
    return;
  }
  last = load;
  const bool same = since != nullptr && since->epoch == epoch;
  const bool kv_known = load.block_size > 0 && load.kv_blocks_total > 0;
  queued.store(std::max(0.0, load.running + load.waiting), std::memory_order_relaxed);
  kv_cache_usage.store(load.kv_cache_usage, std::memory_order_relaxed);
  block_size.store(kv_known ? load.block_size : 0, std::memory_order_relaxed);
  kv_blocks_total.store(kv_known ? load.kv_blocks_total : 0, std::memory_order_relaxed);
  // The blocks sent after the mark stay charged against the new free blocks (one swap, so a
  // reservation racing the scrape either lands before it and is kept, or retries after it).
  const std::uint64_t free_budget = BudgetOf(kv_known ? load.kv_blocks_free : 0);
  std::uint64_t word = kv_budget.load(std::memory_order_relaxed);
  std::uint64_t next = 0;
  do {
    const auto sent = static_cast<std::int64_t>(word & kHalf);
    std::int64_t keep = 0;
    if (same) {
      keep = std::max<std::int64_t>(0, sent - since->blocks);
    } else if (since != nullptr) {
      keep = sent;
    }
    next = free_budget + static_cast<std::uint64_t>(kv_known ? keep : 0);
  } while (!kv_budget.compare_exchange_weak(word, next, std::memory_order_relaxed));
  if (same) {
    picks.fetch_sub(std::min(since->picks, picks.load(std::memory_order_relaxed)),
                    std::memory_order_relaxed);
  } else if (since == nullptr) {
    picks.store(0, std::memory_order_relaxed);
  }
  epoch = next_epoch;
}

std::int64_t WorkerCell::BlocksFor(std::int64_t tokens) const {
  const std::int64_t size = block_size.load(std::memory_order_relaxed);
  return size > 0 ? (tokens + size - 1) / size : 0;
}

bool WorkerCell::HasRoom(std::int64_t tokens, bool budget) const {
  const std::int64_t need = BlocksFor(tokens);
  if (!budget || need == 0) return true;
  return RoomIn(kv_budget.load(std::memory_order_relaxed)) >= need;
}

bool WorkerCell::Reserve(std::int64_t tokens, bool budget, const std::function<void()>& hook) {
  const std::int64_t need = BlocksFor(tokens);
  if (need > 0) {
    std::uint64_t word = kv_budget.load(std::memory_order_relaxed);
    std::int64_t take = 0;
    do {
      const std::int64_t room = RoomIn(word);
      if (budget && room < need) return false;  // so need < 2^32: no carry below
      take = std::clamp<std::int64_t>(room, 0, need);
      if (hook) hook();
    } while (!kv_budget.compare_exchange_weak(word, word + static_cast<std::uint64_t>(take),
                                              std::memory_order_relaxed));
  }
  picks.fetch_add(1, std::memory_order_relaxed);
  return true;
}

double WorkerCell::ProjectedKvUsage(double pick_scale) const {
  const double scraped = kv_cache_usage.load(std::memory_order_relaxed);
  const std::int64_t total = kv_blocks_total.load(std::memory_order_relaxed);
  if (total <= 0) return scraped;
  const auto sent = static_cast<double>(kv_budget.load(std::memory_order_relaxed) & kHalf);
  return scraped + sent * pick_scale / static_cast<double>(total);
}

double WorkerCell::Busyness(std::int32_t max_concurrency, double pick_scale) const {
  Load load;
  load.running = queued.load(std::memory_order_relaxed);
  load.kv_cache_usage = ProjectedKvUsage(pick_scale);
  return routing::Busyness(load,
                           static_cast<double>(picks.load(std::memory_order_relaxed)) * pick_scale,
                           max_concurrency);
}

}  // namespace eoc::routing
