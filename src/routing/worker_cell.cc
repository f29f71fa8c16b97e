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

void WorkerCell::Observe(const Load& load) {
  if (!load.available) {
    block_size.store(0, std::memory_order_relaxed);
    return;
  }
  const bool kv_known = load.block_size > 0 && load.kv_blocks_total > 0;
  queued.store(std::max(0.0, load.running + load.waiting), std::memory_order_relaxed);
  kv_cache_usage.store(load.kv_cache_usage, std::memory_order_relaxed);
  block_size.store(kv_known ? load.block_size : 0, std::memory_order_relaxed);
  kv_budget.store(BudgetOf(kv_known ? load.kv_blocks_free : 0), std::memory_order_relaxed);
  picks.store(0, std::memory_order_relaxed);
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
  if (budget && need > 0) {
    std::uint64_t word = kv_budget.load(std::memory_order_relaxed);
    do {
      if (RoomIn(word) < need) return false;  // so need < 2^32: no carry below
      if (hook) hook();
    } while (!kv_budget.compare_exchange_weak(word, word + static_cast<std::uint64_t>(need),
                                              std::memory_order_relaxed));
  }
  picks.fetch_add(1, std::memory_order_relaxed);
  return true;
}

double WorkerCell::Busyness(std::int32_t max_concurrency) const {
  Load load;
  load.running = queued.load(std::memory_order_relaxed);
  load.kv_cache_usage = kv_cache_usage.load(std::memory_order_relaxed);
  return routing::Busyness(load, static_cast<double>(picks.load(std::memory_order_relaxed)),
                           max_concurrency);
}

}  // namespace eoc::routing
