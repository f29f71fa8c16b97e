#include "routing/pool_state.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <utility>
#include <vector>

namespace eoc::routing {

namespace {

// Tries at reserving a chosen worker's KV blocks before the pick gives up (another thread took
// the room in between); each try chooses again.
constexpr int kMaxReserveTries = 4;
// Token counts beyond this are taken as this (no engine holds more; keeps sums from overflowing).
constexpr std::int64_t kMaxTokens = std::int64_t{1} << 40;
constexpr auto kSweepInterval = std::chrono::seconds(1);

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

// Cache-line aligned: its reference count (before it, in make_shared's block) is written when a
// thread first reads a new view, while picks on every thread read its fields.
struct alignas(64) PoolState::View {
  std::shared_ptr<const PoolSnapshot> snapshot;    // null before the first
  std::vector<std::shared_ptr<WorkerCell>> cells;  // by the snapshot's worker index
  Options options;
  std::shared_ptr<SessionTable> sessions;  // null when session affinity is off
  std::shared_ptr<PrefixIndex> prefix;     // null when prefix affinity is off

  double BusynessOf(std::size_t index) const {
    return cells[index]->Busyness(snapshot->worker(index).capability.max_concurrency);
  }
  // As the strategy's draw compares workers (PoolSnapshot::pick_scale).
  double DrawBusynessOf(std::size_t index) const {
    return cells[index]->Busyness(snapshot->worker(index).capability.max_concurrency,
                                  snapshot->pick_scale(index));
  }
  std::int64_t TokensOf(const PickRequest& request) const {
    const std::int64_t prompt =
        request.prompt_tokens > 0 ? request.prompt_tokens : options.default_prompt_tokens;
    const std::int64_t expected =
        request.expected_tokens > 0 ? request.expected_tokens : options.default_expected_tokens;
    return std::clamp<std::int64_t>(prompt, 0, kMaxTokens) +
           std::clamp<std::int64_t>(expected, 0, kMaxTokens);
  }
};

PoolState::PoolState(const Options& options, SessionBudget& budget, PrefixBudget& prefix_budget)
    : budget_(budget), prefix_budget_(prefix_budget), waiting_(options.max_queue) {
  auto view = std::make_shared<View>();
  view->options = options;
  if (options.session_affinity) {
    view->sessions = std::make_shared<SessionTable>(options.sessions, budget_);
  }
  if (options.prefix_affinity) {
    view->prefix = std::make_shared<PrefixIndex>(options.prefix, prefix_budget_);
  }
  const std::lock_guard lock(update_mu_);
  PublishLocked(std::move(view));
}

PoolState::~PoolState() {
  // Threads' caches may keep the last view past this state, and past the budgets.
  const std::lock_guard lock(update_mu_);
  DetachTablesLocked();
}

void PoolState::DetachTablesLocked() {
  const ViewPtr view = view_.LoadLocked();
  if (view->sessions) view->sessions->Detach();
  if (view->prefix) view->prefix->Detach();
}

const PoolState::ViewPtr& PoolState::LoadView() const { return view_.Load(); }

void PoolState::PublishLocked(std::shared_ptr<View> next) {
  view_.Store(std::move(next));
  capacity_epoch_.fetch_add(1, std::memory_order_acq_rel);
}

std::shared_ptr<const PoolSnapshot> PoolState::snapshot() const {
  const ViewPtr& view = LoadView();
  return view->snapshot;
}

std::shared_ptr<SessionTable> PoolState::sessions() const { return view_.LoadLocked()->sessions; }

std::shared_ptr<const PrefixIndex> PoolState::prefix_index() const {
  return view_.LoadLocked()->prefix;
}

PoolState::Options PoolState::options() const { return view_.LoadLocked()->options; }

std::uint64_t PoolState::SessionEvictions() const {
  const std::lock_guard lock(update_mu_);
  const auto& sessions = view_.LoadLocked()->sessions;
  return dropped_evictions_ + (sessions ? sessions->Evictions() : 0);
}

std::int32_t PoolState::PromptBlockTokens() const {
  const Options& options = LoadView()->options;
  return options.prefix_affinity ? options.block_size_tokens : 0;
}

void PoolState::UpdateKvTotalsLocked() {
  std::int64_t best_tokens = 0;
  std::uint64_t best = 0;
  std::int64_t capacity = 0;
  for (const auto& [key, cell] : cells_) {
    const Load& load = cell->last;
    if (load.kv_blocks_total <= 0 || load.block_size <= 0) continue;
    const std::int64_t blocks =
        std::min<std::int64_t>(load.kv_blocks_total, (std::int64_t{1} << kLargestBlockBits) - 1);
    const std::int64_t size = std::min<std::int64_t>(load.block_size, (1 << 23) - 1);
    // One cell's tokens fit (under 2^40 blocks of under 2^23 tokens); the sum saturates.
    capacity = blocks * size > std::numeric_limits<std::int64_t>::max() - capacity
                   ? std::numeric_limits<std::int64_t>::max()
                   : capacity + blocks * size;
    if (blocks * size > best_tokens) {
      best_tokens = blocks * size;
      best = static_cast<std::uint64_t>(blocks) |
             (static_cast<std::uint64_t>(size) << kLargestBlockBits);
    }
  }
  // None reports (a pool scaled to zero, or scrapes failing): picks stay bounded by the last seen.
  if (best != 0) largest_.store(best, std::memory_order_relaxed);
  capacity_tokens_.store(capacity, std::memory_order_relaxed);
}

PoolState::Reservation PoolState::ReservationOf(const PickRequest& request) const {
  const View& view = *LoadView();
  return {.tokens = view.TokensOf(request),
          .capacity_tokens = capacity_tokens_.load(std::memory_order_relaxed),
          .window = view.options.hold};
}

void PoolState::SetSnapshot(std::shared_ptr<const PoolSnapshot> snapshot, TimePoint now) {
  if (!snapshot) throw std::invalid_argument("PoolState::SetSnapshot: null snapshot");
  std::vector<WaitingPicks::Waiter> closed;
  {
    const std::lock_guard lock(update_mu_);
    auto next = std::make_shared<View>(*view_.LoadLocked());
    next->cells.clear();
    next->cells.reserve(snapshot->size());
    std::unordered_map<WorkerKey, std::shared_ptr<WorkerCell>> cells;
    cells.reserve(snapshot->size());
    for (const Worker& worker : snapshot->workers()) {
      auto it = cells_.find(worker.key);
      auto cell = it != cells_.end() ? it->second : std::make_shared<WorkerCell>();
      if (it == cells_.end()) cell->epoch = ++observations_;
      cells.emplace(worker.key, cell);
      next->cells.push_back(std::move(cell));
    }
    cells_ = std::move(cells);
    UpdateKvTotalsLocked();
    const bool empty = snapshot->size() == 0;
    next->snapshot = std::move(snapshot);
    const bool wait_without_workers = next->options.wait_without_workers;
    PublishLocked(std::move(next));
    if (empty && !wait_without_workers) {
      closed = waiting_.Close();
    } else {
      waiting_.Open();
    }
  }
  WaitingPicks::Answer(closed, PickStatus::kUnavailable);
  ReleaseWaiting(now);
}

void PoolState::Reconfigure(const Options& options, TimePoint now) {
  std::vector<WaitingPicks::Waiter> closed;
  {
    const std::lock_guard lock(update_mu_);
    auto next = std::make_shared<View>(*view_.LoadLocked());
    const Options before = next->options;
    if (options == before) return;
    if (!options.session_affinity) {
      if (next->sessions) {
        dropped_evictions_ += next->sessions->Evictions();
        next->sessions->Detach();  // its budget back now, not with the last view
      }
      next->sessions = nullptr;
    } else if (!next->sessions) {
      next->sessions = std::make_shared<SessionTable>(options.sessions, budget_);
    } else {
      next->sessions->Resize(options.sessions.max_sessions, options.sessions.ttl);
    }
    const bool same_blocks =
        options.block_size_tokens == before.block_size_tokens && options.prefix == before.prefix;
    if (next->prefix && (!options.prefix_affinity || !same_blocks)) {
      next->prefix->Detach();  // its budget and memory back now, not with the last view
      next->prefix = nullptr;
    }
    if (options.prefix_affinity && !next->prefix) {
      next->prefix = std::make_shared<PrefixIndex>(options.prefix, prefix_budget_);
    }
    waiting_.SetMaxSize(options.max_queue);
    next->options = options;
    const bool no_workers = next->snapshot && next->snapshot->size() == 0;
    PublishLocked(std::move(next));
    if (no_workers && !options.wait_without_workers) {
      closed = waiting_.Close();
    } else if (no_workers) {
      waiting_.Open();
    }
  }
  WaitingPicks::Answer(closed, PickStatus::kUnavailable);
  ReleaseWaiting(now);
}

void PoolState::Retire() {
  std::vector<WaitingPicks::Waiter> closed;
  {
    const std::lock_guard lock(update_mu_);
    closed = waiting_.Close();
    // Its tables' budgets and memory back now: threads' caches may keep the view a while.
    DetachTablesLocked();
  }
  WaitingPicks::Answer(closed, PickStatus::kUnavailable);
}

bool PoolState::ObserveLoad(WorkerKey worker, const Load& load, TimePoint now) {
  return Observe(worker, load, now, nullptr);
}

bool PoolState::ObserveLoad(WorkerKey worker, const Load& load, TimePoint now,
                            const ScrapeMark& since) {
  return Observe(worker, load, now, &since);
}

std::optional<ScrapeMark> PoolState::MarkScrape(WorkerKey worker) {
  const std::lock_guard lock(update_mu_);
  const auto it = cells_.find(worker);
  if (it == cells_.end()) return std::nullopt;
  return it->second->Mark();
}

bool PoolState::Observe(WorkerKey worker, const Load& load, TimePoint now,
                        const ScrapeMark* since) {
  {
    const std::lock_guard lock(update_mu_);
    const auto it = cells_.find(worker);
    if (it == cells_.end()) return false;
    const Load before = it->second->last;
    it->second->Observe(load, since, ++observations_);
    if (before.kv_blocks_total != load.kv_blocks_total || before.block_size != load.block_size) {
      UpdateKvTotalsLocked();
    }
  }
  capacity_epoch_.fetch_add(1, std::memory_order_acq_rel);
  ReleaseWaiting(now);
  return true;
}

PickOutcome PoolState::Decide(const ViewPtr& view, const PickRequest& request, std::uint64_t random,
                              TimePoint now, bool released) const {
  const PoolSnapshot& snap = *view->snapshot;
  const Options& options = view->options;
  SessionTable* const sessions = view->sessions.get();
  PrefixIndex* const prefix = view->prefix.get();
  const std::int64_t tokens = view->TokensOf(request);
  const bool budget = options.kv_block_budget;
  auto room = [&](std::size_t i) { return view->cells[i]->HasRoom(tokens, budget); };
  auto busy = [&](std::size_t i) { return view->BusynessOf(i); };
  auto draw_busy = [&](std::size_t i) { return view->DrawBusynessOf(i); };
  auto reserve = [&](std::size_t i) {
    return view->cells[i]->Reserve(tokens, budget, reserve_hook_);
  };
  auto picked = [&](std::size_t i, PickReason reason) {
    if (prefix != nullptr && !request.prefix.empty()) {
      prefix->Record(request.prefix, snap.worker(i).key);
    }
    return PickOutcome{.status = PickStatus::kPicked,
                       .reason = released ? PickReason::kQueued : reason,
                       .index = i,
                       // Counted on this thread's pin of the view (published.h).
                       .snapshot = std::shared_ptr<const PoolSnapshot>(view, &snap)};
  };
  // The model's candidates, looked up once for every choice below.
  const ModelRoute route = snap.RouteOf(request.model);
  // When every serving worker had weight 0 at publish: a scan, only then.
  auto unweighted = [&](std::uint64_t r) { return snap.PickUnweighted(route, r, busy, room); };

  // The strategy's choice on attempt `attempt` (each retry draws afresh); nullopt: none.
  auto choose = [&](int attempt) -> std::optional<std::size_t> {
    const std::uint64_t r = attempt == 0 ? random : Mix64(random + attempt);
    const std::uint64_t ticket = snap.strategy() == Strategy::kRoundRobin
                                     ? round_robin_.fetch_add(1, std::memory_order_relaxed)
                                     : 0;
    auto choice = snap.Pick(route, r, ticket, draw_busy, room);
    if (!choice) choice = unweighted(r);
    return choice;
  };

  // 1. Prefix, against the strategy's first choice (kept for step 3).
  std::optional<std::size_t> first;
  bool chosen = false;
  if (prefix != nullptr && !request.prefix.empty()) {
    first = choose(0);
    chosen = true;
    if (first) {
      const double limit = busy(*first) + options.prefix_load_margin;
      const auto match = prefix->LongestMatch(request.prefix, [&](WorkerKey key) {
        const auto i = snap.IndexOf(key);
        return i && snap.Serves(*i, request.model) && snap.TakesNewWork(*i) && room(*i) &&
               busy(*i) <= limit;
      });
      if (match) {
        const std::size_t i = *snap.IndexOf(match->worker);
        if (reserve(i)) return picked(i, PickReason::kPrefix);
      }
    }
  }

  // 2. Sessions.
  bool overflow = false;
  if (sessions != nullptr && request.session) {
    const SessionHash session = *request.session;
    if (const auto bound = sessions->Lookup(session, now)) {
      const auto i = snap.IndexOf(*bound);
      // A draining worker's sessions are placed again (it is about to go).
      if (i && snap.Serves(*i, request.model) && !snap.worker(*i).draining) {
        if (reserve(*i)) return picked(*i, PickReason::kSession);
        overflow = true;  // momentarily full: elsewhere for this turn; the binding stays
      }
    }
    if (!overflow) {
      for (int attempt = 0; attempt < kMaxReserveTries; ++attempt) {
        auto i = snap.PlaceSession(session, route, room);
        if (!i) i = unweighted(random);
        if (!i) break;
        if (reserve(*i)) {
          sessions->Bind(session, snap.worker(*i).key, now);
          PickOutcome out = picked(*i, PickReason::kSession);
          out.new_session = true;
          return out;
        }
      }
      return PickOutcome{.status = PickStatus::kNoRoom};
    }
  }

  // 3. The strategy.
  for (int attempt = 0; attempt < kMaxReserveTries; ++attempt) {
    const auto choice = attempt == 0 && chosen ? first : choose(attempt);
    if (!choice) break;
    if (reserve(*choice)) {
      return picked(*choice, overflow ? PickReason::kSessionOverflow : PickReason::kStrategy);
    }
  }
  return PickOutcome{.status = PickStatus::kNoRoom};
}

PickOutcome PoolState::TryPick(const PickRequest& request, std::uint64_t random, TimePoint now) {
  const ViewPtr& view = LoadView();
  if (!view->snapshot) return PickOutcome{.status = PickStatus::kNotPublished};
  // A model name no worker can list (callers refuse it first, the pick endpoint with 400): it
  // matches no worker, not even one that serves any model, and never waits.
  if ((view->snapshot->size() == 0 && !view->options.wait_without_workers) ||
      request.model.size() > kMaxModelNameBytes) {
    return PickOutcome{.status = PickStatus::kUnavailable};
  }
  const std::vector<std::string>& models = view->options.models;
  if (!models.empty() && !request.model.empty() &&
      std::find(models.begin(), models.end(), request.model) == models.end()) {
    return PickOutcome{.status = PickStatus::kUnknownModel};
  }
  if (auto too_large = TooLarge(*view, request)) return *std::move(too_large);
  if (waiting_.Holds(request.model, now, view->options.hold)) {
    return PickOutcome{.status = PickStatus::kNoRoom};
  }
  return Decide(view, request, random, now, /*released=*/false);
}

std::optional<PickOutcome> PoolState::TooLarge(const View& view, const PickRequest& request) const {
  const std::int64_t tokens = view.TokensOf(request);
  if (const std::int64_t allowed = view.options.max_request_tokens;
      allowed > 0 && tokens > allowed) {
    return PickOutcome{
        .status = PickStatus::kTooLarge, .tokens_asked = tokens, .tokens_allowed = allowed};
  }
  const std::uint64_t largest = largest_.load(std::memory_order_relaxed);
  if (largest == 0) return std::nullopt;
  const auto blocks =
      static_cast<std::int64_t>(largest & ((std::uint64_t{1} << kLargestBlockBits) - 1));
  const auto size = static_cast<std::int64_t>(largest >> kLargestBlockBits);
  const std::int64_t needed = (tokens + size - 1) / size;
  if (needed <= blocks) return std::nullopt;
  return PickOutcome{
      .status = PickStatus::kTooLarge, .blocks_needed = needed, .blocks_largest = blocks};
}

PickOutcome PoolState::Pick(const PickRequest& request, std::uint64_t random, TimePoint now,
                            const Wait& wait) {
  const std::uint64_t epoch = capacity_epoch_.load(std::memory_order_acquire);
  PickOutcome outcome = TryPick(request, random, now);
  if (outcome.status != PickStatus::kNoRoom) return outcome;
  if (wait.refused) return PickOutcome{.status = PickStatus::kQueueFull};
  // The one decision found no room: the same call queues the pick, and only now is its callback
  // made.
  auto admitted = waiting_.Admit(request, random, wait.make_done(), wait.deadline, now);
  if (admitted.admission != Admission::kQueued) {
    return PickOutcome{.status = RefusalStatus(admitted.admission)};
  }
  // Capacity that appeared between the decision and the admission would otherwise wait for the
  // next scrape: offer it now.
  if (capacity_epoch_.load(std::memory_order_acquire) != epoch) ReleaseWaiting(now);
  return PickOutcome{.status = PickStatus::kQueued, .ticket = admitted.ticket};
}

bool PoolState::Cancel(std::uint64_t ticket) { return waiting_.Cancel(ticket); }

void PoolState::Tick(TimePoint now) {
  WaitingPicks::Answer(waiting_.Expire(now), PickStatus::kTimedOut);

  const TimePoint::rep ticks = now.time_since_epoch().count();
  TimePoint::rep last = last_sweep_.load(std::memory_order_relaxed);
  if (ticks - last >= TimePoint::duration(kSweepInterval).count() &&
      last_sweep_.compare_exchange_strong(last, ticks, std::memory_order_relaxed)) {
    if (const auto sessions = view_.LoadLocked()->sessions) sessions->Sweep(now);
  }
}

std::optional<PoolState::TimePoint> PoolState::NextDeadline() const {
  return waiting_.NextDeadline();
}

std::vector<PoolState::ObservedLoad> PoolState::Loads() const {
  const std::lock_guard lock(update_mu_);
  std::vector<ObservedLoad> out;
  out.reserve(cells_.size());
  for (const auto& [key, cell] : cells_) {
    out.push_back(
        {.worker = key,
         .load = cell->last,
         .picks_since_scrape = static_cast<double>(cell->picks.load(std::memory_order_relaxed))});
  }
  return out;
}

std::optional<double> PoolState::Busyness(WorkerKey worker) const {
  const ViewPtr view = LoadView();
  if (!view->snapshot) return std::nullopt;
  const auto i = view->snapshot->IndexOf(worker);
  if (!i) return std::nullopt;
  return view->BusynessOf(*i);
}

std::optional<bool> PoolState::HasRoom(WorkerKey worker, std::int64_t tokens) const {
  const ViewPtr view = LoadView();
  if (!view->snapshot) return std::nullopt;
  const auto i = view->snapshot->IndexOf(worker);
  if (!i) return std::nullopt;
  return view->cells[*i]->HasRoom(tokens, view->options.kv_block_budget);
}

void PoolState::ReleaseWaiting(TimePoint now) {
  if (waiting_.Size() == 0) return;
  const ViewPtr view = LoadView();  // a copy: `done` callbacks may pick again
  if (!view->snapshot) return;
  const auto decide = [&](const PickRequest& request, std::uint64_t random) {
    if (auto too_large = TooLarge(*view, request)) return *std::move(too_large);
    return Decide(view, request, random, now, /*released=*/true);
  };
  WaitingPicks::Answer(waiting_.Release(now, view->options.hold, decide));
}

}  // namespace eoc::routing
