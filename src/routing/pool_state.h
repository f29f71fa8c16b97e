// The mutable side of one pool's routing (DESIGN.md, "Architecture"): beside the immutable
// PoolSnapshot of the current routing generation, what this replica learns and remembers between
// generations: each worker's last scraped load and the picks (and KV blocks) this replica sent it
// since, the session table, the prefix index and the wait queue. Pick() combines them into one
// choice and says why. Pure: no I/O, time comes in as arguments, randomness from the caller.
//
//   eoc::routing::SessionBudget budget(4'000'000);             // --max-sessions-total
//   eoc::routing::PoolState pool(options, budget);
//   pool.SetSnapshot(PoolSnapshot::Build(workers, generation, strategy), now);  // each generation
//   pool.ObserveLoad(worker_key, load, now);                    // each scrape of a worker
//   // a pick (any thread, no pool-wide lock):
//   PickOutcome out = pool.Pick(request, rng(), now, {.deadline = d, .done = answer_later});
//   if (out.status == PickStatus::kPicked) out.worker().address;   // reason: out.reason
//   // housekeeping, at pool.NextDeadline() and at least every second:
//   pool.Tick(clock.Now());
//
// How a pick is decided, in this order (every step only among workers that serve the model):
//   1. session     A request with a session id that is bound to a worker of the snapshot returns
//                  there (reason `session`) if the worker has room; if it has none, the request
//                  goes where step 3 says for this turn only (`session-overflow`) and the binding
//                  stays. A session that is not bound, or whose worker left the pool (or does not
//                  serve the request's model), is placed by the consistent-hash table
//                  (PoolSnapshot::PlaceSession: the first worker with room in its preference
//                  order, draining workers skipped) and bound there (`session`).
//   2. prefix      A request with prefix block hashes goes to the worker holding the longest
//                  recorded prefix (`prefix`) if it takes new work, has room, and its busyness is
//                  at most `prefix_load_margin` above that of the worker step 3 would choose (the
//                  strategy's choice stands in for "the least busy eligible worker": the least busy
//                  exactly for LeastBusy, the less busy of two weighted draws otherwise; an exact
//                  minimum would cost O(workers) per pick).
//   3. strategy    The snapshot's strategy (PoolSnapshot::Pick) among workers with room
//                  (`strategy`).
// "Room" is the KV-block budget: a worker whose engine reported its free KV blocks and block
// size has room for a request of T tokens (prompt plus expected) while free blocks minus the
// blocks this replica sent it since that scrape are at least ceil(T / block size). A worker with
// no KV data (metrics unavailable, or an engine that does not report blocks), or any worker when
// `kv_block_budget` is off, always has room. Blocks are reserved with a compare-and-swap, so
// concurrent picks never overcommit a worker.
// Whatever decided it, the chosen worker's counters take the pick, and the request's prefix blocks
// are recorded as sent to it.
// When every serving worker has weight 0 (all were saturated when the table was published) but is
// not draining, the least busy one with room is chosen by a scan (O(workers); only then), rather
// than waiting for the next generation.
//
// When no worker has room, the pick waits (status kQueued) in the pool's FIFO queue until its
// deadline and its `done` is called exactly once (unless Cancel takes it back first), from
// whichever thread then calls SetSnapshot, ObserveLoad, Tick or Pick (never while a lock of this
// object is held): kPicked with reason `queued` when capacity appears, kTimedOut at the
// deadline, kUnavailable when waiting becomes impossible. While picks for a model wait, new picks
// for that model queue behind them rather than overtake them (picks for other models may pass);
// released waiters are placed oldest first.
// Immediate refusals: kQueueFull (429: max_queue waiting), kUnavailable (503: the pool has no
// worker and `wait_without_workers` is off, or queueing is off; or the model name is longer than
// kMaxModelNameBytes, so no worker can list it), kNotPublished (503: no snapshot yet), kTimedOut
// (504: the deadline is already past). A waiting pick keeps its model name and the first
// kMaxPrefixBlocks prefix hashes (the only ones used), so the queue's memory is bounded.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/text.h"
#include "routing/ids.h"
#include "routing/worker.h"
#include "routing/pool_snapshot.h"
#include "routing/prefix_index.h"
#include "routing/session_table.h"
#include "routing/wait_queue.h"

namespace eoc::routing {

// Why a pick chose its worker; the pick endpoint's `reason`.
enum class PickReason { kSession, kSessionOverflow, kPrefix, kStrategy, kQueued };
// "session", "session-overflow", "prefix", "strategy", "queued".
std::string_view ToString(PickReason reason);

// What became of a pick. The pick endpoint answers kQueueFull with 429, kUnavailable and
// kNotPublished with 503, kTimedOut with 504.
enum class PickStatus {
  kPicked,        // a worker was chosen
  kNoRoom,        // TryPick only: no worker has room now (Pick would wait)
  kQueued,        // waiting; `done` will be called
  kQueueFull,     // the wait queue holds max_queue picks
  kUnavailable,   // no worker to wait for and no way to get one, or queueing is off
  kNotPublished,  // the pool has no routing generation yet
  kTimedOut,      // the deadline passed while waiting (or before)
};
std::string_view ToString(PickStatus status);

// One pick's inputs. Views: they need only outlive the call (Pick copies what a waiting pick
// keeps).
struct PickRequest {
  std::string_view model;              // empty: any model; longer than kMaxModelNameBytes: none
  std::optional<SessionHash> session;  // SessionHashOf(session id)
  std::span<const BlockHash> prefix;   // the prompt's block hashes (PrefixHashes), may be empty
  std::int64_t prompt_tokens = 0;      // 0 or less: the pool's default
  std::int64_t expected_tokens = 0;    // 0 or less: the pool's default
};

struct PickOutcome {
  PickStatus status = PickStatus::kUnavailable;
  PickReason reason = PickReason::kStrategy;     // when kPicked
  std::size_t index = 0;                         // the worker's index in `snapshot`
  std::shared_ptr<const PoolSnapshot> snapshot;  // when kPicked: the generation it came from
  std::uint64_t ticket = 0;                      // when kQueued: for Cancel

  bool picked() const { return status == PickStatus::kPicked; }
  // When picked: the worker (its address, pod, key).
  const Worker& worker() const { return snapshot->worker(index); }
};

using PickCallback = std::function<void(const PickOutcome&)>;

class PoolState {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  struct Options {
    bool session_affinity = true;    // routing.sessionAffinity.enabled
    SessionTable::Options sessions;  // maxSessions, ttlSeconds
    bool prefix_affinity = true;     // routing.prefixAffinity.enabled
    PrefixIndex::Options prefix;     // maxBlocks
    // How much busier (in busyness: 1 = one worker's max concurrency) than the strategy's choice a
    // prefix match may be and still win.
    double prefix_load_margin = 0.25;
    bool kv_block_budget = true;                 // routing.admission.kvBlockBudget
    std::size_t max_queue = 1000;                // routing.admission.maxQueue; 0: no waiting
    std::int64_t default_prompt_tokens = 512;    // routing.defaultPromptTokens
    std::int64_t default_expected_tokens = 256;  // routing.defaultExpectedTokens
    // Whether a pick may wait while the pool has no worker at all (the autoscaler can scale it
    // from zero); otherwise such picks answer kUnavailable and waiting ones are released so.
    bool wait_without_workers = false;
  };

  // How a pick that finds no room waits.
  struct Wait {
    TimePoint deadline;  // WaitDeadline(now, queueTimeoutSeconds, wait_ms)
    PickCallback done;   // called once, later, unless Pick answered at once or Cancel took it
  };

  // `budget` (the global session limit) must outlive the state.
  PoolState(const Options& options, SessionBudget& budget);
  ~PoolState();
  PoolState(const PoolState&) = delete;
  PoolState& operator=(const PoolState&) = delete;
  PoolState(PoolState&&) = delete;
  PoolState& operator=(PoolState&&) = delete;

  // A new routing generation (or membership change). Workers that stay keep their load and
  // counters (by key); sessions and prefix entries of workers that left find them gone and are
  // placed again. Offers the new capacity to waiting picks.
  void SetSnapshot(std::shared_ptr<const PoolSnapshot> snapshot, TimePoint now);
  std::shared_ptr<const PoolSnapshot> snapshot() const;

  // A scrape of one worker: its load replaces the last, and the picks and blocks this replica sent
  // it since the last scrape start again from 0. Unknown keys are ignored (false). Offers any
  // capacity that appeared to waiting picks.
  bool ObserveLoad(WorkerKey worker, const Load& load, TimePoint now);

  // Picks now, or waits as `wait` says (see above). Thread-safe; `random` must be fresh uniform
  // 64 bits per pick. When it answers kQueued, `wait.done` may already have been called (capacity
  // that appeared while the pick was being queued is offered at once, on this thread).
  PickOutcome Pick(const PickRequest& request, std::uint64_t random, TimePoint now, Wait wait);
  // Picks now or answers kNoRoom (or kNotPublished, kUnavailable); never waits. Waiting picks of
  // the same model are not overtaken: with any waiting, the answer is kNoRoom.
  PickOutcome TryPick(const PickRequest& request, std::uint64_t random, TimePoint now);

  // Takes a waiting pick back (its client went away); its `done` will not be called. False if it
  // is no longer waiting.
  bool Cancel(std::uint64_t ticket);

  // Housekeeping: answers waiting picks whose deadline passed (kTimedOut) and, at most once a
  // second, sweeps expired sessions. Call at NextDeadline() and at least every second.
  void Tick(TimePoint now);
  std::optional<TimePoint> NextDeadline() const;

  // The worker's busyness as this replica sees it (scraped load plus its picks since), and
  // whether it has room for `tokens`; nullopt for a worker not in the snapshot.
  std::optional<double> Busyness(WorkerKey worker) const;
  std::optional<bool> HasRoom(WorkerKey worker, std::int64_t tokens) const;

  const SessionTable* sessions() const { return sessions_.get(); }
  SessionTable* sessions() { return sessions_.get(); }
  const PrefixIndex* prefix_index() const { return prefix_.get(); }
  std::size_t Waiting() const { return queue_.Size(); }
  // Bytes of request the waiting picks keep (model names and prefix hashes).
  std::size_t WaitingBytes() const;
  const Options& options() const { return options_; }

  // Test seam: called by every KV-block reservation between reading the worker's budget and
  // swapping it, on the picking thread, so that a test can land a scrape there. Null by default
  // (the pick path then pays one null check); set it before any pick.
  void SetReserveHookForTesting(std::function<void()> hook) { reserve_hook_ = std::move(hook); }

 private:
  struct Cell;  // one worker's scraped load and local counters (atomics)
  struct View;  // a snapshot and its workers' cells, by index
  // A pick that waits: its request, kept (bounded: see Pick).
  struct Waiter {
    std::string model;
    std::optional<SessionHash> session;
    std::vector<BlockHash> prefix;
    std::int64_t prompt_tokens = 0;
    std::int64_t expected_tokens = 0;
    std::uint64_t random = 0;
    PickCallback done;
    PickOutcome outcome;  // set when released

    PickRequest Request() const;
    std::size_t KeptBytes() const { return model.size() + prefix.size() * sizeof(BlockHash); }
  };

  // The current view as this thread holds it (see view_ below), with its snapshot under a
  // reference count of this thread's own, so that picks on different threads do not all write
  // one shared count (measured: two threads picked slower than one without it).
  struct ViewHandle {
    std::shared_ptr<const View> view;              // null before the first snapshot
    std::shared_ptr<const PoolSnapshot> snapshot;  // view->snapshot, for PickOutcome
  };
  // Valid until this thread's next LoadView() of any pool: copy it to keep it longer.
  const ViewHandle& LoadView() const;
  std::int64_t TokensOf(const PickRequest& request) const;
  // Steps 1-3 against `view`, reserving the chosen worker's budget; kNoRoom if none has room.
  PickOutcome Decide(const ViewHandle& handle, const PickRequest& request, std::uint64_t random,
                     TimePoint now, bool released) const;
  // Whether picks for `model` are waiting (new ones go behind them).
  bool ModelWaiting(std::string_view model) const;
  void CountWaiting(const Waiter& waiter, std::ptrdiff_t delta);
  // Offers capacity to the waiting picks, oldest first, and answers the placed ones.
  void ReleaseWaiting(TimePoint now);
  // Calls each waiter's `done` with `status` (no lock held).
  void Answer(const std::vector<Waiter>& waiters, PickStatus status);

  const Options options_;
  std::unique_ptr<SessionTable> sessions_;  // null when session affinity is off
  std::unique_ptr<PrefixIndex> prefix_;     // null when prefix affinity is off
  // The current view. Picks read it through a per-thread cache checked against view_version_
  // (one atomic load; no lock unless the view changed since this thread last saw it).
  // std::atomic<std::shared_ptr> would do, but libstdc++ 12's is a spin lock that
  // ThreadSanitizer reports as racy (google/sanitizers#1558).
  const std::uint64_t id_;  // unique in the process: the per-thread cache's key
  mutable std::mutex view_mu_;
  std::shared_ptr<const View> view_;  // guarded by view_mu_
  std::atomic<std::uint64_t> view_version_{0};
  mutable std::atomic<std::uint64_t> round_robin_{0};

  std::mutex update_mu_;  // serialises SetSnapshot and ObserveLoad
  std::unordered_map<WorkerKey, std::shared_ptr<Cell>> cells_;  // guarded by update_mu_

  WaitQueue<Waiter> queue_;
  mutable std::mutex waiting_mu_;
  StringMap<std::size_t> waiting_models_;  // guarded by waiting_mu_
  std::size_t waiting_bytes_ = 0;          // guarded by waiting_mu_
  std::atomic<TimePoint::rep> last_sweep_{0};
  // Moves whenever capacity may have appeared (a snapshot, a scrape).
  std::atomic<std::uint64_t> capacity_epoch_{0};
  std::function<void()> reserve_hook_;  // SetReserveHookForTesting
};

}  // namespace eoc::routing
