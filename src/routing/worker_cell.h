// One worker's cell in a PoolState: its last scraped load and what this replica sent it since
// (picks, KV blocks), in atomics, so that picks on any thread read and charge it without a lock.
// A cell belongs to the worker, not to a generation: the views of every generation the worker is
// in share it (by key), so a new snapshot keeps the worker's counts.
//
//   WorkerCell cell;
//   ScrapeMark mark = cell.Mark();             // as a scrape's fetch starts
//   cell.Observe(load, &mark, next_epoch);     // its answer (PoolState serialises these)
//   if (cell.HasRoom(tokens, budget)) ...      // the KV-block budget (PoolState's "room")
//   if (cell.Reserve(tokens, budget, hook)) ...  // takes the pick and its blocks, or nothing
//   cell.Busyness(max_concurrency)            // scraped running + waiting + picks since, or
//                                              // the KV use with their blocks when higher
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>

#include "routing/worker.h"

namespace eoc::routing {

// Where a scrape of a worker began (PoolState::MarkScrape): which observation the cell's counts
// were then counted from, and the picks and KV blocks this replica had sent since it. The picks
// sent after the mark were made while the fetch was in flight, so the page cannot show them:
// ObserveLoad keeps them.
struct ScrapeMark {
  std::uint64_t epoch = 0;
  std::int64_t picks = 0;
  std::int64_t blocks = 0;
};

// Cache-line aligned: each pick writes one worker's cell.
struct alignas(64) WorkerCell {
  std::atomic<double> queued{0};                 // running + waiting, as scraped
  std::atomic<double> kv_cache_usage{0};         // 0..1, as scraped
  std::atomic<std::int32_t> block_size{0};       // 0: no KV data (the budget ignores the worker)
  std::atomic<std::int64_t> kv_blocks_total{0};  // as scraped; 0 with block_size
  std::atomic<std::int64_t> picks{0};            // picks sent since the scrape
  // The KV budget in one word, so that a scrape replaces both halves at once and a reservation
  // swaps both (a scrape landing mid-reservation makes it try again against the new free blocks):
  // free blocks as scraped in the high 32 bits, saturating at 2^32 - 1 (4 billion blocks, beyond
  // any engine); the blocks this replica's picks since that scrape need in the low 32. A
  // reservation succeeds only while sent + need <= free, so sent never passes free and never
  // carries into the high half. With the budget off the blocks are still counted (Busyness reads
  // them), up to the free blocks. The block size stays apart: an engine setting, fixed while the
  // pod lives.
  std::atomic<std::uint64_t> kv_budget{0};
  static constexpr std::uint64_t kHalf = 0xFFFF'FFFF;

  // A scrape's budget: `free` blocks, none sent yet.
  static std::uint64_t BudgetOf(std::int64_t free);
  // Free blocks minus blocks sent.
  static std::int64_t RoomIn(std::uint64_t budget);

  // Which observation the counts are since; written by Observe, read by Mark (PoolState
  // serialises both under its update lock).
  std::uint64_t epoch = 0;
  // The last load observed, for the leader's weights (PoolState::Loads): an unavailable load keeps
  // the figures of the last one that had data, with `available` false. Written by Observe, read
  // by PoolState::Loads, both under PoolState's update lock.
  Load last;

  // The counts now, for a scrape about to start.
  ScrapeMark Mark() const;
  // A scrape: an available load replaces the last and becomes observation `next_epoch`. The
  // counts since start again from what was sent after `since` (the picks the page cannot show), or
  // from 0 without a mark; a mark from before another observation keeps every count (all were
  // sent after that one). An unavailable load (no fresh data) makes the budget ignore the worker
  // until data returns; its picks keep counting from the last scrape that had data.
  void Observe(const Load& load, const ScrapeMark* since, std::uint64_t next_epoch);

  // The blocks a request of `tokens` needs here; 0 when the worker reports no KV data.
  std::int64_t BlocksFor(std::int64_t tokens) const;
  // Whether a request of `tokens` fits the budget (always, when `budget` is off or there is no
  // KV data).
  bool HasRoom(std::int64_t tokens, bool budget) const;
  // Takes the pick (and its blocks, if the budget allows them); false, with nothing taken, when
  // the budget does not. `hook`: PoolState::SetReserveHookForTesting's, called between reading the
  // budget and swapping it. Without the budget, the pick always goes and its blocks are counted
  // as far as the free blocks reach.
  bool Reserve(std::int64_t tokens, bool budget, const std::function<void()>& hook);
  // The KV cache's use once the picks since the scrape arrive: the scraped use plus the blocks
  // they need over the engine's total, those blocks counted `pick_scale` times; the scraped use
  // alone without KV data. A scrape shows a long prompt's blocks only after its fetch: between
  // scrapes, a worker that was just sent a 30,000-token prompt is not as free as the page says.
  double ProjectedKvUsage(double pick_scale = 1.0) const;
  // routing::Busyness of the scraped load and the picks since (their count and, through
  // ProjectedKvUsage, their blocks), each pick counted `pick_scale` times
  // (PoolSnapshot::pick_scale).
  double Busyness(std::int32_t max_concurrency, double pick_scale = 1.0) const;
};

}  // namespace eoc::routing
