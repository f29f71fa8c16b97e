#include "routing/pool_state.h"

#include <algorithm>
#include <array>
#include <functional>
#include <stdexcept>
#include <utility>

#include "routing/prefix_hash.h"

namespace eoc::routing {

namespace {

// Tries at reserving a chosen worker's KV blocks before the pick gives up (another thread took
// the room in between); each try chooses again.
constexpr int kMaxReserveTries = 4;
// Token counts beyond this are taken as this (no engine holds more; keeps sums from overflowing).
constexpr std::int64_t kMaxTokens = std::int64_t{1} << 40;
constexpr auto kSweepInterval = std::chrono::seconds(1);
// Views a thread keeps cached (of as many pools); a thread that picks from more pools in turn
// takes a pool's view lock on some picks.
constexpr std::size_t kCachedViews = 16;

std::atomic<std::uint64_t> next_pool_id{1};

// The answer to a pick that the queue did not admit.
PickStatus RefusalStatus(Admission admission) {
  switch (admission) {
    case Admission::kFull:
      return PickStatus::kQueueFull;
    case Admission::kExpired:
      return PickStatus::kTimedOut;
    case Admission::kQueued:  // not a refusal
    case Admission::kUnavailable:
      break;
  }
  return PickStatus::kUnavailable;
}

}  // namespace

std::string_view ToString(PickReason reason) {
  switch (reason) {
    case PickReason::kSession:
      return "session";
    case PickReason::kSessionOverflow:
      return "session-overflow";
    case PickReason::kPrefix:
      return "prefix";
    case PickReason::kStrategy:
      return "strategy";
    case PickReason::kQueued:
      return "queued";
  }
  return "strategy";
}

std::string_view ToString(PickStatus status) {
  switch (status) {
    case PickStatus::kPicked:
      return "picked";
    case PickStatus::kNoRoom:
      return "no-room";
    case PickStatus::kQueued:
      return "queued";
    case PickStatus::kQueueFull:
      return "queue-full";
    case PickStatus::kUnavailable:
      return "unavailable";
    case PickStatus::kNotPublished:
      return "not-published";
    case PickStatus::kTimedOut:
      return "timed-out";
  }
  return "unavailable";
}

// One worker's last scraped load and what this replica sent it since. Shared by the views of
// every generation the worker is in, so a new snapshot keeps its counts. Cache-line aligned: each
// pick writes one worker's cell.
struct alignas(64) PoolState::Cell {
  std::atomic<double> queued{0};            // running + waiting, as scraped
  std::atomic<double> kv_cache_usage{0};    // 0..1, as scraped
  std::atomic<std::int32_t> block_size{0};  // 0: no KV data (the budget ignores the worker)
  std::atomic<std::int64_t> picks{0};       // picks sent since the scrape
  // The KV budget in one word, so that a scrape replaces both halves at once and a reservation
  // swaps both (a scrape landing mid-reservation makes it try again against the new free blocks):
  // free blocks as scraped in the high 32 bits, saturating at 2^32 - 1 (4 billion blocks, beyond
  // any engine); the blocks this replica's picks since that scrape need in the low 32. A
  // reservation succeeds only while sent + need <= free, so sent never passes free and never
  // carries into the high half. The block size stays apart: an engine setting, fixed while the
  // pod lives.
  std::atomic<std::uint64_t> kv_budget{0};
  static constexpr std::uint64_t kHalf = 0xFFFF'FFFF;

  // A scrape's budget: `free` blocks, none sent yet.
  static std::uint64_t BudgetOf(std::int64_t free) {
    return static_cast<std::uint64_t>(
               std::clamp(free, std::int64_t{0}, static_cast<std::int64_t>(kHalf)))
           << 32U;
  }
  // Free blocks minus blocks sent.
  static std::int64_t RoomIn(std::uint64_t budget) {
    return static_cast<std::int64_t>(budget >> 32U) - static_cast<std::int64_t>(budget & kHalf);
  }

  // The blocks a request of `tokens` needs here; 0 when the worker reports no KV data.
  std::int64_t BlocksFor(std::int64_t tokens) const {
    const std::int64_t size = block_size.load(std::memory_order_relaxed);
    return size > 0 ? (tokens + size - 1) / size : 0;
  }

  bool HasRoom(std::int64_t tokens, bool budget) const {
    const std::int64_t need = BlocksFor(tokens);
    if (!budget || need == 0) return true;
    return RoomIn(kv_budget.load(std::memory_order_relaxed)) >= need;
  }

  // Takes the pick (and its blocks, if the budget allows them); false, with nothing taken, when
  // the budget does not. `hook`: SetReserveHookForTesting's. Without the budget, blocks are not
  // counted: nothing reads them.
  bool Reserve(std::int64_t tokens, bool budget, const std::function<void()>& hook) {
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

  double BusynessFor(std::int32_t max_concurrency) const {
    Load load;
    load.running = queued.load(std::memory_order_relaxed);
    load.kv_cache_usage = kv_cache_usage.load(std::memory_order_relaxed);
    return routing::Busyness(load, static_cast<double>(picks.load(std::memory_order_relaxed)),
                             max_concurrency);
  }
};

// Cache-line aligned: its reference count (before it, in make_shared's block) is written on
// every snapshot() and outcome copy, while picks on every thread read its fields.
struct alignas(64) PoolState::View {
  std::shared_ptr<const PoolSnapshot> snapshot;
  std::vector<std::shared_ptr<Cell>> cells;  // by the snapshot's worker index

  double BusynessOf(std::size_t index) const {
    return cells[index]->BusynessFor(snapshot->worker(index).capability.max_concurrency);
  }
};

PickRequest PoolState::Waiter::Request() const {
  return {.model = model,
          .session = session,
          .prefix = prefix,
          .prompt_tokens = prompt_tokens,
          .expected_tokens = expected_tokens};
}

PoolState::PoolState(const Options& options, SessionBudget& budget)
    : options_(options),
      id_(next_pool_id.fetch_add(1, std::memory_order_relaxed)),
      queue_(options.max_queue) {
  if (options_.session_affinity) {
    sessions_ = std::make_unique<SessionTable>(options_.sessions, budget);
  }
  if (options_.prefix_affinity) prefix_ = std::make_unique<PrefixIndex>(options_.prefix);
}

PoolState::~PoolState() = default;

const PoolState::ViewHandle& PoolState::LoadView() const {
  struct Cached {
    std::uint64_t pool = 0;
    std::uint64_t version = 0;
    ViewHandle handle;
  };
  // This thread's own owner of a view: the snapshot handles it gives out count on it alone.
  struct alignas(64) Pin {
    std::shared_ptr<const View> view;
  };
  // Most recently used first; views of pools that are gone leave as other pools' views come in.
  thread_local std::array<Cached, kCachedViews> cache;
  const std::uint64_t version = view_version_.load(std::memory_order_acquire);
  std::size_t k = 0;
  while (k + 1 < cache.size() && cache[k].pool != id_) ++k;
  std::rotate(cache.begin(), cache.begin() + static_cast<std::ptrdiff_t>(k),
              cache.begin() + static_cast<std::ptrdiff_t>(k) + 1);
  Cached& entry = cache.front();
  if (entry.pool != id_ || entry.version != version) {
    std::shared_ptr<const View> view;
    {
      const std::lock_guard lock(view_mu_);
      entry.version = view_version_.load(std::memory_order_relaxed);
      view = view_;
    }
    entry.pool = id_;
    entry.handle.snapshot = nullptr;
    if (view) {
      auto pin = std::make_shared<const Pin>(Pin{view});
      entry.handle.snapshot = std::shared_ptr<const PoolSnapshot>(pin, view->snapshot.get());
    }
    entry.handle.view = std::move(view);
  }
  return entry.handle;
}

std::shared_ptr<const PoolSnapshot> PoolState::snapshot() const {
  const ViewHandle& handle = LoadView();
  if (!handle.view) return nullptr;
  return handle.view->snapshot;
}

void PoolState::SetSnapshot(std::shared_ptr<const PoolSnapshot> snapshot, TimePoint now) {
  if (!snapshot) throw std::invalid_argument("PoolState::SetSnapshot: null snapshot");
  std::vector<Waiter> closed;
  {
    const std::lock_guard lock(update_mu_);
    auto view = std::make_shared<View>();
    view->cells.reserve(snapshot->size());
    std::unordered_map<WorkerKey, std::shared_ptr<Cell>> cells;
    cells.reserve(snapshot->size());
    for (const Worker& worker : snapshot->workers()) {
      auto it = cells_.find(worker.key);
      auto cell = it != cells_.end() ? it->second : std::make_shared<Cell>();
      cells.emplace(worker.key, cell);
      view->cells.push_back(std::move(cell));
    }
    cells_ = std::move(cells);
    const bool empty = snapshot->size() == 0;
    view->snapshot = std::move(snapshot);
    {
      const std::lock_guard view_lock(view_mu_);
      view_ = std::move(view);
      view_version_.fetch_add(1, std::memory_order_release);
    }
    capacity_epoch_.fetch_add(1, std::memory_order_acq_rel);
    if (empty && !options_.wait_without_workers) {
      closed = queue_.Close();
    } else {
      queue_.Open();
    }
  }
  for (const Waiter& waiter : closed) CountWaiting(waiter, -1);
  Answer(closed, PickStatus::kUnavailable);
  ReleaseWaiting(now);
}

bool PoolState::ObserveLoad(WorkerKey worker, const Load& load, TimePoint now) {
  {
    const std::lock_guard lock(update_mu_);
    const auto it = cells_.find(worker);
    if (it == cells_.end()) return false;
    Cell& cell = *it->second;
    if (load.available) {
      const bool kv_known = load.block_size > 0 && load.kv_blocks_total > 0;
      cell.queued.store(std::max(0.0, load.running + load.waiting), std::memory_order_relaxed);
      cell.kv_cache_usage.store(load.kv_cache_usage, std::memory_order_relaxed);
      cell.block_size.store(kv_known ? load.block_size : 0, std::memory_order_relaxed);
      cell.kv_budget.store(Cell::BudgetOf(kv_known ? load.kv_blocks_free : 0),
                           std::memory_order_relaxed);
      cell.picks.store(0, std::memory_order_relaxed);
    } else {
      // No fresh data: the budget ignores the worker until data returns; its picks keep counting
      // from the last scrape that had data.
      cell.block_size.store(0, std::memory_order_relaxed);
    }
  }
  capacity_epoch_.fetch_add(1, std::memory_order_acq_rel);
  ReleaseWaiting(now);
  return true;
}

std::int64_t PoolState::TokensOf(const PickRequest& request) const {
  const std::int64_t prompt =
      request.prompt_tokens > 0 ? request.prompt_tokens : options_.default_prompt_tokens;
  const std::int64_t expected =
      request.expected_tokens > 0 ? request.expected_tokens : options_.default_expected_tokens;
  return std::clamp<std::int64_t>(prompt, 0, kMaxTokens) +
         std::clamp<std::int64_t>(expected, 0, kMaxTokens);
}

PickOutcome PoolState::Decide(const ViewHandle& handle, const PickRequest& request,
                              std::uint64_t random, TimePoint now, bool released) const {
  const View* view = handle.view.get();
  const PoolSnapshot& snap = *view->snapshot;
  const std::int64_t tokens = TokensOf(request);
  const bool budget = options_.kv_block_budget;
  auto room = [&](std::size_t i) { return view->cells[i]->HasRoom(tokens, budget); };
  auto busy = [&](std::size_t i) { return view->BusynessOf(i); };
  auto reserve = [&](std::size_t i) {
    return view->cells[i]->Reserve(tokens, budget, reserve_hook_);
  };
  auto picked = [&](std::size_t i, PickReason reason) {
    if (prefix_ && !request.prefix.empty()) prefix_->Record(request.prefix, snap.worker(i).key);
    return PickOutcome{.status = PickStatus::kPicked,
                       .reason = released ? PickReason::kQueued : reason,
                       .index = i,
                       .snapshot = handle.snapshot};
  };
  // When every serving worker had weight 0 at publish: a scan, only then.
  auto unweighted = [&](std::uint64_t r) {
    return snap.PickUnweighted(request.model, r, busy, room);
  };

  // 1. Sessions.
  bool overflow = false;
  if (sessions_ && request.session) {
    const SessionHash session = *request.session;
    if (const auto bound = sessions_->Lookup(session, now)) {
      const auto i = snap.IndexOf(*bound);
      if (i && snap.Serves(*i, request.model)) {
        if (reserve(*i)) return picked(*i, PickReason::kSession);
        overflow = true;  // momentarily full: elsewhere for this turn; the binding stays
      }
    }
    if (!overflow) {
      for (int attempt = 0; attempt < kMaxReserveTries; ++attempt) {
        auto i = snap.PlaceSession(session, request.model, room);
        if (!i) i = unweighted(random);
        if (!i) break;
        if (reserve(*i)) {
          sessions_->Bind(session, snap.worker(*i).key, now);
          return picked(*i, PickReason::kSession);
        }
      }
      return PickOutcome{.status = PickStatus::kNoRoom};
    }
  }

  // 2 and 3. Prefix, against the strategy's choice; then the strategy.
  for (int attempt = 0; attempt < kMaxReserveTries; ++attempt) {
    const std::uint64_t r = attempt == 0 ? random : Mix64(random + attempt);
    const std::uint64_t ticket = snap.strategy() == Strategy::kRoundRobin
                                     ? round_robin_.fetch_add(1, std::memory_order_relaxed)
                                     : 0;
    auto choice = snap.Pick(request.model, r, ticket, busy, room);
    if (!choice) choice = unweighted(r);
    if (!choice) break;
    if (attempt == 0 && prefix_ && !overflow && !request.prefix.empty()) {
      const double limit = busy(*choice) + options_.prefix_load_margin;
      const auto match = prefix_->LongestMatch(request.prefix, [&](WorkerKey key) {
        const auto i = snap.IndexOf(key);
        return i && snap.Serves(*i, request.model) && snap.TakesNewWork(*i) && room(*i) &&
               busy(*i) <= limit;
      });
      if (match) {
        const std::size_t i = *snap.IndexOf(match->worker);
        if (reserve(i)) return picked(i, PickReason::kPrefix);
      }
    }
    if (reserve(*choice)) {
      return picked(*choice, overflow ? PickReason::kSessionOverflow : PickReason::kStrategy);
    }
  }
  return PickOutcome{.status = PickStatus::kNoRoom};
}

PickOutcome PoolState::TryPick(const PickRequest& request, std::uint64_t random, TimePoint now) {
  const ViewHandle& handle = LoadView();
  if (!handle.view) return PickOutcome{.status = PickStatus::kNotPublished};
  // A model name no worker can list (callers refuse it first, the pick endpoint with 400): it
  // matches no worker, not even one that serves any model, and never waits.
  if ((handle.view->snapshot->size() == 0 && !options_.wait_without_workers) ||
      request.model.size() > kMaxModelNameBytes) {
    return PickOutcome{.status = PickStatus::kUnavailable};
  }
  if (queue_.Size() > 0 && ModelWaiting(request.model)) {
    return PickOutcome{.status = PickStatus::kNoRoom};
  }
  return Decide(handle, request, random, now, /*released=*/false);
}

PickOutcome PoolState::Pick(const PickRequest& request, std::uint64_t random, TimePoint now,
                            Wait wait) {
  const std::uint64_t epoch = capacity_epoch_.load(std::memory_order_acquire);
  PickOutcome outcome = TryPick(request, random, now);
  if (outcome.status != PickStatus::kNoRoom) return outcome;

  // Only what a pick uses is kept: the first kMaxPrefixBlocks hashes, and a model name TryPick
  // accepted (at most kMaxModelNameBytes).
  const auto prefix = request.prefix.first(std::min(request.prefix.size(), kMaxPrefixBlocks));
  Waiter waiter{.model = std::string(request.model),
                .session = request.session,
                .prefix = std::vector<BlockHash>(prefix.begin(), prefix.end()),
                .prompt_tokens = request.prompt_tokens,
                .expected_tokens = request.expected_tokens,
                .random = random,
                .done = std::move(wait.done)};
  CountWaiting(waiter, 1);
  auto admitted = queue_.Admit(std::move(waiter), wait.deadline, now);
  if (admitted.admission != Admission::kQueued) {
    CountWaiting(*admitted.rejected, -1);
    return PickOutcome{.status = RefusalStatus(admitted.admission)};
  }
  // Capacity that appeared between the decision and the admission would otherwise wait for the
  // next scrape: offer it now.
  if (capacity_epoch_.load(std::memory_order_acquire) != epoch) ReleaseWaiting(now);
  return PickOutcome{.status = PickStatus::kQueued, .ticket = admitted.ticket};
}

bool PoolState::Cancel(std::uint64_t ticket) {
  auto waiter = queue_.Cancel(ticket);
  if (!waiter) return false;
  CountWaiting(*waiter, -1);
  return true;
}

void PoolState::Tick(TimePoint now) {
  std::vector<Waiter> expired = queue_.Expire(now);
  for (const Waiter& waiter : expired) CountWaiting(waiter, -1);
  Answer(expired, PickStatus::kTimedOut);

  const TimePoint::rep ticks = now.time_since_epoch().count();
  TimePoint::rep last = last_sweep_.load(std::memory_order_relaxed);
  if (sessions_ && ticks - last >= TimePoint::duration(kSweepInterval).count() &&
      last_sweep_.compare_exchange_strong(last, ticks, std::memory_order_relaxed)) {
    sessions_->Sweep(now);
  }
}

std::optional<PoolState::TimePoint> PoolState::NextDeadline() const {
  return queue_.NextDeadline();
}

std::optional<double> PoolState::Busyness(WorkerKey worker) const {
  const std::shared_ptr<const View> view = LoadView().view;
  if (!view) return std::nullopt;
  const auto i = view->snapshot->IndexOf(worker);
  if (!i) return std::nullopt;
  return view->BusynessOf(*i);
}

std::optional<bool> PoolState::HasRoom(WorkerKey worker, std::int64_t tokens) const {
  const std::shared_ptr<const View> view = LoadView().view;
  if (!view) return std::nullopt;
  const auto i = view->snapshot->IndexOf(worker);
  if (!i) return std::nullopt;
  return view->cells[*i]->HasRoom(tokens, options_.kv_block_budget);
}

bool PoolState::ModelWaiting(std::string_view model) const {
  const std::lock_guard lock(waiting_mu_);
  const auto it = waiting_models_.find(model);
  return it != waiting_models_.end() && it->second > 0;
}

std::size_t PoolState::WaitingBytes() const {
  const std::lock_guard lock(waiting_mu_);
  return waiting_bytes_;
}

void PoolState::CountWaiting(const Waiter& waiter, std::ptrdiff_t delta) {
  const std::lock_guard lock(waiting_mu_);
  waiting_bytes_ =
      static_cast<std::size_t>(static_cast<std::ptrdiff_t>(waiting_bytes_) +
                               delta * static_cast<std::ptrdiff_t>(waiter.KeptBytes()));
  auto it = waiting_models_.try_emplace(waiter.model, 0).first;
  it->second = static_cast<std::size_t>(static_cast<std::ptrdiff_t>(it->second) + delta);
  if (it->second == 0) waiting_models_.erase(it);
}

void PoolState::ReleaseWaiting(TimePoint now) {
  if (queue_.Size() == 0) return;
  const ViewHandle handle = LoadView();  // a copy: `done` callbacks may pick again
  if (!handle.view) return;
  // Head of line per model: once a pick for a model finds no room, later picks for that model
  // stay behind it; picks for other models may pass.
  std::vector<std::string_view> blocked;
  std::vector<Waiter> released = queue_.Release([&](Waiter& waiter) {
    if (std::find(blocked.begin(), blocked.end(), waiter.model) != blocked.end()) {
      return Placement::kKeep;
    }
    PickOutcome outcome = Decide(handle, waiter.Request(), waiter.random, now, /*released=*/true);
    if (outcome.picked()) {
      waiter.outcome = std::move(outcome);
      return Placement::kPlaced;
    }
    blocked.push_back(waiter.model);
    return Placement::kKeep;
  });
  for (const Waiter& waiter : released) CountWaiting(waiter, -1);
  Answer(released, PickStatus::kPicked);
}

void PoolState::Answer(const std::vector<Waiter>& waiters, PickStatus status) {
  for (const Waiter& waiter : waiters) {
    if (!waiter.done) continue;
    if (status == PickStatus::kPicked) {
      waiter.done(waiter.outcome);
    } else {
      waiter.done(PickOutcome{.status = status});
    }
  }
}

}  // namespace eoc::routing
