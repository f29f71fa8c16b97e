// One routing generation of a pool, immutable: its workers, their capabilities and published
// weights, the alias tables the weighted strategies draw from and the Maglev tables new sessions
// are placed by. The reconciler builds one per published table (or membership change) and swaps
// it in atomically; pick threads share it (std::shared_ptr<const PoolSnapshot>) without locks.
//
//   auto snapshot = PoolSnapshot::Build(std::move(workers), generation, Strategy::kJouleWeighted);
//   thread_local std::mt19937_64 rng(seed);
//   auto busy = [&](std::size_t i) { return state.Busyness(i); };  // local counts (PoolState)
//   auto ok = [&](std::size_t i) { return state.HasBlocks(i, request); };
//   const ModelRoute route = snapshot->RouteOf(model);  // once per pick, for every choice below
//   std::optional<std::size_t> w = snapshot->Pick(route, rng(), rr.fetch_add(1), busy, ok);
//   std::optional<std::size_t> s = snapshot->PlaceSession(SessionHashOf(id), route, ok);
//   snapshot->worker(*w).address   // "10.0.3.7:8000"
//
// Who takes new work: a worker that serves the model (its models list it, or are empty), is not
// draining, has a published weight above 0, and passes the caller's `eligible` (KV budget, ...).
// Draining and weight-0 workers stay in the snapshot (indexable, IndexOf) so that their bound
// sessions and prefix entries can still find them, but no choice here returns them (but
// PickUnweighted, the caller's fallback when every serving worker has weight 0, may return the
// weight-0 ones).
// Choices, all O(1) while most candidates are eligible (a bounded number of tries, then a scan):
//   RoundRobin       the candidates in index order, from `ticket` mod their count; the first
//                    eligible one (the caller's counter makes the turns; one per pick).
//   LeastBusy        the least busy eligible candidate; exact when a model has at most
//                    kLeastBusySamples candidates, else the least busy of that many drawn
//                    uniformly.
//   Latency-, Joule-, CarbonWeighted  two draws in proportion to the published weights (each draw
//                    retried up to kMaxRedraws times until eligible), keeping the less busy by
//                    `busyness` (power of two choices; the first on a tie).
// Fallbacks (no eligible worker in the tries): the least busy eligible candidate by a full scan,
// ties drawn at random (in proportion to weight for the weighted strategies).
// Sessions: the first eligible candidate in the session's Maglev preference order (over published
// weights; equal weights for RoundRobin and LeastBusy), kMaxPreference tries, then the eligible
// candidate with the highest weighted rendezvous score of (session, worker): deterministic too.
// Each model that some worker names has its own tables over its candidates, so picks for a model
// served by few workers stay O(1); past a memory budget (kMaxModelSlots Maglev slots), further
// models share the all-workers tables and filter by model in the tries and scans.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/text.h"
#include "routing/alias_table.h"
#include "routing/maglev.h"
#include "routing/worker.h"

namespace eoc::routing {

// A non-owning reference to a callable, for parameters that are only called during the call
// that receives them: no allocation, one indirect call (std::function may allocate).
template <class Signature>
class FunctionRef;

template <class R, class... Args>
class FunctionRef<R(Args...)> {
 public:
  // Implicit, so that a lambda can be passed where a FunctionRef is expected; `f` must outlive
  // the call that receives the FunctionRef.
  template <class F, class = std::enable_if_t<std::is_invocable_r_v<R, const F&, Args...>>>
  FunctionRef(const F& f) noexcept  // NOLINT(google-explicit-constructor)
      : object_(static_cast<const void*>(&f)), call_(&Call<F>) {}

  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  template <class F>
  static R Call(const void* object, Args... args) {
    return std::invoke(*static_cast<const F*>(object), std::forward<Args>(args)...);
  }

  const void* object_;
  R (*call_)(const void*, Args...);
};

// A worker's busyness as this replica sees it (lower is less busy), by worker index.
using BusynessFn = FunctionRef<double(std::size_t)>;
// Whether a worker may take this request (KV budget, overflow), by worker index.
using EligibleFn = FunctionRef<bool(std::size_t)>;

// Where picks for one model find their candidates in one snapshot (PoolSnapshot::RouteOf): looked
// up once per pick and handed to each choice. Valid while its snapshot and the model's text live.
struct ModelRoute {
  std::string_view model;   // as the request named it; empty: any model
  std::uint32_t group = 0;  // the snapshot's table of candidates
  bool filter = false;      // the group holds workers that do not serve the model
  bool any = false;  // some worker serves the model and takes new work (before `eligible`): when
                     // none does, a pick can only wait for the next generation
};

class PoolSnapshot {
  struct Private {
    explicit Private() = default;
  };

 public:
  static constexpr std::size_t kLeastBusySamples = 8;
  static constexpr std::size_t kMaxRedraws = 8;
  // The Maglev slots the per-model tables may hold in all (about 5 MB: 40 small tables).
  static constexpr std::size_t kMaxModelSlots = 40 * std::size_t{MaglevTable::kSmallTableSize};

  // The snapshot of `workers` (kept in this order, their indices) for one routing generation.
  // Weights outside 0-1000 are clamped to it. Costs about 25 ms at 1,000 workers (the Maglev fill).
  // Throws std::invalid_argument when two workers share a key, std::length_error past
  // MaglevTable::kMaxEntries workers.
  static std::shared_ptr<const PoolSnapshot> Build(std::vector<Worker> workers,
                                                   std::int64_t generation, Strategy strategy);

  std::int64_t generation() const { return generation_; }
  Strategy strategy() const { return strategy_; }
  std::span<const Worker> workers() const { return workers_; }
  std::size_t size() const { return workers_.size(); }
  const Worker& worker(std::size_t index) const { return workers_[index]; }
  // What one of this replica's picks since the last scrape adds to worker `index`'s busyness when
  // a weighted strategy compares its two draws: the mean weight of the workers taking new work over
  // this one's (1 under RoundRobin and LeastBusy, and for weight 0). A worker of twice the mean
  // weight is expected to take twice the picks between two scrapes; counted at full value, every
  // pick would count against its worker until the shares were even, whatever the weights.
  double pick_scale(std::size_t index) const { return pick_scale_[index]; }
  std::optional<std::size_t> IndexOf(WorkerKey key) const;

  // Whether worker `index` serves `model` (empty models: any; an empty `model`: every worker).
  bool Serves(std::size_t index, std::string_view model) const;
  // Not draining and a published weight above 0.
  bool TakesNewWork(std::size_t index) const;
  // The route of picks for `model` (one hash lookup), for the choices below.
  ModelRoute RouteOf(std::string_view model) const;

  // The snapshot's strategy: RoundRobin uses `ticket`; the others `random` (uniform 64 bits,
  // fresh for each pick). Nothing when no candidate is eligible. No allocation; thread-safe.
  std::optional<std::size_t> Pick(const ModelRoute& route, std::uint64_t random,
                                  std::uint64_t ticket, BusynessFn busyness,
                                  EligibleFn eligible) const;
  std::optional<std::size_t> PickRoundRobin(const ModelRoute& route, std::uint64_t ticket,
                                            EligibleFn eligible) const;
  std::optional<std::size_t> PickLeastBusy(const ModelRoute& route, std::uint64_t random,
                                           BusynessFn busyness, EligibleFn eligible) const;
  std::optional<std::size_t> PickWeighted(const ModelRoute& route, std::uint64_t random,
                                          BusynessFn busyness, EligibleFn eligible) const;

  // Where a new session goes: the same answer on every replica for the same workers, weights
  // and eligibility. Nothing when no candidate is eligible.
  std::optional<std::size_t> PlaceSession(SessionHash session, const ModelRoute& route,
                                          EligibleFn eligible) const;

  // The fallback for a model with no candidate by weight (`route.any` false because every
  // serving worker had weight 0 when the table was published: all were saturated): the least
  // busy serving worker that is not draining and is `eligible`, by a scan of every worker, from a
  // random start (the first of equals from there). Nothing when the model has candidates, or
  // none of these is eligible.
  std::optional<std::size_t> PickUnweighted(const ModelRoute& route, std::uint64_t random,
                                            BusynessFn busyness, EligibleFn eligible) const;

  PoolSnapshot(Private /*unused*/, std::vector<Worker> workers, std::int64_t generation,
               Strategy strategy);

 private:
  // The tables over one set of candidates (worker indices, ascending).
  struct Group {
    std::vector<std::uint32_t> candidates;
    AliasTable alias;    // over candidates' published weights
    MaglevTable maglev;  // over candidates' keys and weights
  };
  // How picks for one model find their candidates (ModelRoute's fields, without the model).
  struct Route {
    std::uint32_t group = 0;
    bool filter = false;
    bool any = false;
  };
  // Whether the route's group's candidate `index` serves the route's model.
  bool Routes(std::uint32_t index, const ModelRoute& route) const;
  std::uint32_t AddGroup(std::vector<std::uint32_t> candidates, std::size_t& slots_left);
  // The least busy of the group's candidates that are `ok`; ties go at random, in proportion to
  // weight when `weighted`.
  std::optional<std::size_t> ScanLeastBusy(const Group& group, std::uint64_t random, bool weighted,
                                           FunctionRef<bool(std::uint32_t)> ok,
                                           BusynessFn busyness) const;

  std::vector<Worker> workers_;
  std::vector<double> pick_scale_;  // by worker index
  std::int64_t generation_;
  Strategy strategy_;
  std::unordered_map<WorkerKey, std::uint32_t> index_;
  std::vector<Group> groups_;  // [0]: every worker that takes new work
  StringMap<Route> models_;
  Route unnamed_model_;  // a model no worker names: the workers that serve any model
};

}  // namespace eoc::routing
