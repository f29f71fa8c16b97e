// The mutable side of one pool's routing (DESIGN.md, "Architecture"): beside the immutable
// PoolSnapshot of the current routing generation, what this replica learns and remembers between
// generations: each worker's last scraped load and the picks (and KV blocks) this replica sent it
// since, the session table, the prefix index and the wait queue. Pick() combines them into one
// choice and says why. Pure: no I/O, time comes in as arguments, randomness from the caller.
//
//   eoc::routing::SessionBudget budget(4'000'000);             // --max-sessions-total
//   eoc::routing::PrefixBudget prefix_budget(4'000'000);       // --max-prefix-blocks-total
//   eoc::routing::PoolState pool(options, budget, prefix_budget);
//   pool.SetSnapshot(PoolSnapshot::Build(workers, generation, strategy), now);  // each generation
//   pool.ObserveLoad(worker_key, load, now);                    // each scrape of a worker
//   // or, for a scrape that takes a while, keeping the picks made while it was in flight:
//   std::optional<ScrapeMark> mark = pool.MarkScrape(worker_key);  // as the fetch starts
//   pool.ObserveLoad(worker_key, load, now, *mark);                 // with its answer
//   // a pick (any thread, no pool-wide lock):
//   PickOutcome out = pool.Pick(request, rng(), now,
//                               {.deadline = d, .make_done = [&] { return answer_later; }});
//   if (out.status == PickStatus::kPicked) out.worker().address;   // reason: out.reason
//   // housekeeping, at pool.NextDeadline() and at least every second:
//   pool.Tick(clock.Now());
//
// How a pick is decided, in this order (every step only among workers that serve the model):
//   1. prefix      A request with prefix block hashes goes to the worker holding the longest
//                  recorded prefix (`prefix`) if it takes new work, has room, and its busyness is
//                  at most `prefix_load_margin` above that of the strategy's choice (which stands
//                  in for "the least busy eligible worker": the least busy exactly for LeastBusy,
//                  the less busy of two weighted draws otherwise; an exact minimum would cost
//                  O(workers) per pick). First, even before a session's binding: the prefix index
//                  knows where the conversation's cache went, and, unlike the binding, weighs it
//                  against load (bench/results/peers.md, "Session affinity under load": ahead of
//                  the binding it kept the KV hits and raised SLO attainment at every load).
//   2. session     A request with a session id that is bound to a worker of the snapshot returns
//                  there (reason `session`) if the worker has room; if it has none, the request
//                  goes where step 3 says for this turn only (`session-overflow`) and the binding
//                  stays. A session that is not bound, or whose worker left the pool, is
//                  draining (the autoscaler is removing it) or does not serve the request's
//                  model, is placed by the consistent-hash table
//                  (PoolSnapshot::PlaceSession: the first worker with room in its preference
//                  order, draining workers skipped) and bound there (`session`). A turn that
//                  step 1 placed leaves the binding as it was (or absent).
//   3. strategy    The snapshot's strategy (PoolSnapshot::Pick) among workers with room
//                  (`strategy`): step 1's choice when it made one.
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
// When no worker has room, the pick waits (status kQueued, waiting_picks.h) in the pool's FIFO
// queue until its deadline and its `done` is called exactly once (unless Cancel takes it back
// first), from whichever thread then calls SetSnapshot, ObserveLoad, Tick or Pick (never while a
// lock of this object is held): kPicked with reason `queued` when capacity appears, kTimedOut at
// the deadline, kUnavailable when waiting becomes impossible. The hold: a waiting pick that
// cannot be placed holds the later picks of its model behind it for at most `hold` (a scrape
// interval) from when it was queued. While the oldest waiting pick of a model is within its hold,
// new picks for that model queue behind it; after that they are decided as if none waited, and
// waiting ones that fit pass it when released (picks for other models may pass at any time).
// Released waiters are offered room oldest first, so a pick that others passed still takes the
// first room that fits it; one found too large by then (a worker reported its cache, or a smaller
// `max_request_tokens`) answers kTooLarge at once. Immediate refusals: kQueueFull (429: max_queue
// waiting), kUnavailable (503: the pool has no worker and `wait_without_workers` is off, or
// queueing is off; or the model name is longer than kMaxModelNameBytes, so no worker can list it),
// kNotPublished (503: no snapshot yet), kTimedOut (504: the deadline is already past),
// kUnknownModel (404: `models` is not empty and does not list the request's model), kTooLarge
// (400: the request asks for more than `max_request_tokens`, or its tokens need more KV blocks
// than the largest worker, by the blocks its engine last reported in all, holds; known once some
// worker has reported them, and kept while none does, as when the pool scales to zero). A waiting
// pick keeps its model name and the first kMaxPrefixBlocks prefix hashes (the only ones used), so
// the queue's memory is bounded.
//
// A changed `spec.routing` is applied in place (Reconfigure), and this is what survives it:
//   sessions       kept across a change of strategy (that comes with the next snapshot), of
//                  `ttlSeconds` (the new ttl counts from each binding's last use) and of
//                  `maxSessions` (a smaller one evicts the least recently used down to it);
//                  dropped when session affinity is turned off, and a new table starts empty when
//                  it is turned on again.
//   prefix index   kept unless `blockSizeTokens` or `maxBlocks` changes or prefix affinity is
//                  turned off or on: then emptied (hashes of blocks of another size never match
//                  again; a new bound starts a new index).
//   loads, counts  always kept (they belong to the workers, not to the spec).
//   wait queue     kept: a smaller `maxQueue` refuses new picks while more wait.
//   the rest       (`loadMargin`, `kvBlockBudget`, the default token counts, waiting without
//                  workers, `models`) applies from the next pick.
// The parts a pick reads (the snapshot, the cells, the options, the session table and the prefix
// index) are one immutable view, swapped whole (published.h), so a pick sees one configuration.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "routing/ids.h"
#include "routing/pick.h"
#include "routing/pool_snapshot.h"
#include "routing/prefix_index.h"
#include "routing/published.h"
#include "routing/session_table.h"
#include "routing/waiting_picks.h"
#include "routing/worker.h"
#include "routing/worker_cell.h"

namespace eoc::routing {

// PoolState::Wait's default: makes no callback.
inline constexpr auto kNoPickCallback = [] { return PickCallback(); };

class PoolState {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  struct Options {
    bool session_affinity = true;    // routing.sessionAffinity.enabled
    SessionTable::Options sessions;  // maxSessions, ttlSeconds
    bool prefix_affinity = true;     // routing.prefixAffinity.enabled
    PrefixIndex::Options prefix;     // maxBlocks
    // routing.prefixAffinity.blockSizeTokens: how callers cut prompts into blocks (PrefixHashes).
    std::int32_t block_size_tokens = 16;
    // How much busier (in busyness: 1 = one worker's max concurrency) than the strategy's choice a
    // prefix match may be and still win.
    double prefix_load_margin = 0.25;
    bool kv_block_budget = true;                 // routing.admission.kvBlockBudget
    std::size_t max_queue = 1000;                // routing.admission.maxQueue; 0: no waiting
    std::int64_t default_prompt_tokens = 512;    // routing.defaultPromptTokens
    std::int64_t default_expected_tokens = 256;  // routing.defaultExpectedTokens
    // routing.admission.maxRequestTokens: the most tokens (prompt plus expected) a pick may ask
    // for; more answers kTooLarge whatever the workers. 0: no bound but the largest worker's.
    std::int64_t max_request_tokens = 0;
    // How long a waiting pick that cannot be placed holds later picks of its model, counted from
    // when it was queued (the pool's metrics.intervalSeconds: one scrape).
    std::chrono::nanoseconds hold = std::chrono::seconds(5);
    // Whether a pick may wait while the pool has no worker at all (the autoscaler can scale it
    // from zero); otherwise such picks answer kUnavailable and waiting ones are released so.
    bool wait_without_workers = false;
    // The models the pool's spec lists: a pick that names another answers kUnknownModel. Empty:
    // any model (one that no worker serves yet waits like any pick without room).
    std::vector<std::string> models;

    bool operator==(const Options&) const = default;
  };

  // How a pick that finds no room waits. Build it in the call to Pick: `make_done` refers to a
  // callable that must outlive the call.
  struct Wait {
    TimePoint deadline;  // WaitDeadline(now, queueTimeoutSeconds, wait_ms)
    // Makes the callback that answers the pick once it waits: called at most once, on the
    // picking thread inside Pick, and only when the pick is about to be queued, so that a pick
    // that finds room makes none (the pick endpoint puts its HTTP answer off only then). The
    // callback it makes is called once, later, unless the queue refuses the pick (Pick answers
    // at once) or Cancel takes it back. By default none: the pick waits unanswered.
    FunctionRef<PickCallback()> make_done = kNoPickCallback;
    // Waiting is refused now (a bound of the caller's over every pool, such as the pick
    // endpoint's --pick-max-waiting): a pick that finds no room answers kQueueFull at once, makes
    // no callback and is not queued.
    bool refused = false;
  };

  // `budget` (the global session limit) and `prefix_budget` (the prefix indexes') must outlive
  // the state.
  PoolState(const Options& options, SessionBudget& budget, PrefixBudget& prefix_budget);
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

  // A changed spec.routing, applied in place (what survives: see above). Offers any capacity
  // the change made (a budget turned off, a longer queue) to waiting picks.
  void Reconfigure(const Options& options, TimePoint now);

  // The pool is gone: its waiting picks answer kUnavailable now, and new picks that find no room
  // answer so too (until a SetSnapshot, which a retired pool does not get); its sessions and
  // prefix blocks are forgotten, their budgets given back.
  void Retire();

  // A scrape of one worker: its load replaces the last, and the picks and blocks this replica sent
  // it since the last scrape start again from 0. Unknown keys are ignored (false). Offers any
  // capacity that appeared to waiting picks.
  bool ObserveLoad(WorkerKey worker, const Load& load, TimePoint now);
  // The same for a scrape that began at `since` (MarkScrape, taken as its fetch started): the
  // picks and blocks sent after the mark were in flight with the fetch, so the page does not show
  // them, and they keep counting against the new load (a worker's load is only replaced by a
  // newer scrape's, so a mark from before a later scrape keeps every count).
  bool ObserveLoad(WorkerKey worker, const Load& load, TimePoint now, const ScrapeMark& since);
  // Where a scrape of `worker` starts from; nullopt for a worker not in the snapshot.
  std::optional<ScrapeMark> MarkScrape(WorkerKey worker);

  // Picks now, or waits as `wait` says (see above): one decision, and when it finds no room the
  // same call queues the pick. Thread-safe; `random` must be fresh uniform 64 bits per pick. When
  // it answers kQueued, the callback may already have been called (capacity that appeared while
  // the pick was being queued is offered at once, on this thread).
  PickOutcome Pick(const PickRequest& request, std::uint64_t random, TimePoint now,
                   const Wait& wait);
  // Picks now or answers kNoRoom (or the refusals above); never waits. Waiting picks of the same
  // model are not overtaken during their hold: the answer is then kNoRoom.
  PickOutcome TryPick(const PickRequest& request, std::uint64_t random, TimePoint now);

  // Takes a waiting pick back (its client went away); its `done` will not be called. False if it
  // is no longer waiting.
  bool Cancel(std::uint64_t ticket);

  // Housekeeping: answers waiting picks whose deadline passed (kTimedOut) and, at most once a
  // second, sweeps expired sessions. Call at NextDeadline() and at least every second.
  void Tick(TimePoint now);
  std::optional<TimePoint> NextDeadline() const;

  // One worker's last scraped load and the picks this replica sent it since (what the leader's
  // weights read: ComputeWeights' WorkerLoad).
  struct ObservedLoad {
    WorkerKey worker = 0;
    Load load;  // available false until a scrape with data, or when the last had none
    double picks_since_scrape = 0;
  };
  // Every worker this state has a cell for (those of the current snapshot), in no set order.
  std::vector<ObservedLoad> Loads() const;

  // The worker's busyness as this replica sees it (scraped load plus its picks since), and
  // whether it has room for `tokens`; nullopt for a worker not in the snapshot.
  std::optional<double> Busyness(WorkerKey worker) const;
  std::optional<bool> HasRoom(WorkerKey worker, std::int64_t tokens) const;

  // The current session table (null when session affinity is off) and prefix index (null when
  // prefix affinity is off); a Reconfigure may replace them.
  std::shared_ptr<SessionTable> sessions() const;
  std::shared_ptr<const PrefixIndex> prefix_index() const;
  std::size_t Waiting() const { return waiting_.Size(); }
  // Session bindings the bounds pushed out, over every session table the pool has had.
  std::uint64_t SessionEvictions() const;
  // Bytes of request the waiting picks keep (model names and prefix hashes).
  std::size_t WaitingBytes() const { return waiting_.KeptBytes(); }
  // The options now in force.
  Options options() const;
  // The block size, in tokens, that a pick's prompt is cut in (PrefixHashes) as the options now
  // in force say: 0 when prefix affinity is off (a prompt is then not hashed). Cheaper than
  // options(), for every pick that sends a prompt.
  std::int32_t PromptBlockTokens() const;

  // What a pick of `request` would reserve here, and of what: its tokens (prompt plus expected,
  // the defaults filled in as the pick counts them), the KV caches of the pool's workers in tokens
  // as each last reported its own (a failed scrape keeps it), and how long a reservation stands
  // (until the worker's next scrape: one metrics interval, Options::hold). For callers' shares of
  // the pool (the pick endpoint's CallerCaps). No lock, no allocation.
  struct Reservation {
    std::int64_t tokens = 0;
    std::int64_t capacity_tokens = 0;  // 0: no worker of the pool has reported one
    std::chrono::nanoseconds window{};
  };
  Reservation ReservationOf(const PickRequest& request) const;

  // Test seam: called by every KV-block reservation between reading the worker's budget and
  // swapping it, on the picking thread, so that a test can land a scrape there. Null by default
  // (the pick path then pays one null check); set it before any pick.
  void SetReserveHookForTesting(std::function<void()> hook) { reserve_hook_ = std::move(hook); }

 private:
  struct View;  // what a pick reads: a snapshot, its workers' cells, the options and tables
  using ViewPtr = std::shared_ptr<const View>;

  // The current view (never null), as this thread's cache holds it (published.h).
  const ViewPtr& LoadView() const;
  // Publishes `next` as the current view; under update_mu_. Views are made where they will live,
  // on the heap: a View is over-aligned (64), and one on the stack is not always aligned as it
  // asks (under ASan's fake stack frames with the hardening flags, UBSan saw it 32-aligned).
  void PublishLocked(std::shared_ptr<View> next);
  // Empties the current view's session table and prefix index for good (Retire, destruction);
  // under update_mu_.
  void DetachTablesLocked();
  // Steps 1-3 against `view`, reserving the chosen worker's budget; kNoRoom if none has room.
  PickOutcome Decide(const ViewPtr& view, const PickRequest& request, std::uint64_t random,
                     TimePoint now, bool released) const;
  // kTooLarge when `request` asks for more tokens than `view`'s options allow or needs more KV
  // blocks than the largest worker holds (largest_); nullopt when it may be decided.
  std::optional<PickOutcome> TooLarge(const View& view, const PickRequest& request) const;
  // Offers capacity to the waiting picks, oldest first, and answers the placed ones (and those
  // found too large since they were queued).
  void ReleaseWaiting(TimePoint now);

  SessionBudget& budget_;
  PrefixBudget& prefix_budget_;
  Published<View> view_;
  mutable std::atomic<std::uint64_t> round_robin_{0};

  mutable std::mutex update_mu_;  // serialises SetSnapshot, Reconfigure and ObserveLoad
  std::unordered_map<WorkerKey, std::shared_ptr<WorkerCell>> cells_;  // guarded by update_mu_
  std::uint64_t observations_ = 0;  // numbers cells' epochs, unique per cell; under update_mu_
  bool Observe(WorkerKey worker, const Load& load, TimePoint now, const ScrapeMark* since);

  // The cells' largest KV cache, in tokens: its blocks (low kLargestBlockBits bits) and block
  // size (the rest); 0 until one has reported, and the last one seen while none reports (a pool
  // scaled to zero). Recomputed under update_mu_, read by picks.
  static constexpr int kLargestBlockBits = 40;
  std::atomic<std::uint64_t> largest_{0};
  // The cells' KV caches together, in tokens, as last reported; 0 while none has.
  // Recomputed under update_mu_ with largest_, read by picks.
  std::atomic<std::int64_t> capacity_tokens_{0};
  // Evictions of the session tables this state dropped (SessionEvictions); under update_mu_.
  std::uint64_t dropped_evictions_ = 0;
  void UpdateKvTotalsLocked();  // largest_ and capacity_tokens_

  WaitingPicks waiting_;
  std::atomic<TimePoint::rep> last_sweep_{0};
  // Moves whenever capacity may have appeared (a snapshot, a scrape, a new configuration).
  std::atomic<std::uint64_t> capacity_epoch_{0};
  std::function<void()> reserve_hook_;  // SetReserveHookForTesting
};

}  // namespace eoc::routing
