// The picks waiting in one pool (PoolState's "when no worker has room"): the pool's FIFO
// WaitQueue of requests, kept bounded, with the bookkeeping around it: when the picks of each
// model were queued (a new pick for such a model queues behind them while the oldest is within
// its hold), how many bytes of request they keep, and the release in order, head of line per
// model for a bounded time.
//
//   WaitingPicks waiting(/*max_queue=*/1000);
//   if (waiting.Holds(request.model, now, hold)) ...               // behind them, not ahead
//   auto admitted = waiting.Admit(request, random, std::move(done), deadline, now);
//   if (admitted.admission != Admission::kQueued) ...              // answer at once
//   // when capacity may have appeared:
//   WaitingPicks::Answer(waiting.Release(now, hold, [&](const PickRequest& r, std::uint64_t n) {
//     return Decide(r, n);                      // a PickOutcome: picked, a refusal, or kNoRoom
//   }));
//   WaitingPicks::Answer(waiting.Expire(now), PickStatus::kTimedOut);
//
// The hold: a waiting pick that cannot be placed keeps the later picks of its model behind it
// for at most `hold` from when it was queued; after that they are offered room like picks of
// other models (those that fit pass it), and it keeps its place, offered room first.
//
// A waiting pick keeps its model name (callers accept at most kMaxModelNameBytes) and the first
// kMaxPrefixBlocks prefix hashes (the only ones a pick uses), so the queue's memory is bounded by
// max_queue. Thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/text.h"
#include "routing/pick.h"
#include "routing/wait_queue.h"

namespace eoc::routing {

class WaitingPicks {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  // A pick that waits: its request, kept, and how it is answered.
  struct Waiter {
    std::string model;
    std::optional<SessionHash> session;
    std::vector<BlockHash> prefix;
    std::int64_t prompt_tokens = 0;
    std::int64_t expected_tokens = 0;
    std::uint64_t random = 0;
    TimePoint queued_at;
    PickCallback done;
    PickOutcome outcome;  // set when released: picked, or refused (kTooLarge)

    PickRequest Request() const;
    std::size_t KeptBytes() const { return model.size() + prefix.size() * sizeof(BlockHash); }
  };
  using Admitted = WaitQueue<Waiter>::Admitted;

  explicit WaitingPicks(std::size_t max_queue) : queue_(max_queue) {}

  // Queues what `request` needs to be decided later, until `deadline`. When it is not queued,
  // nothing is kept (`rejected` holds it, for the caller to answer).
  Admitted Admit(const PickRequest& request, std::uint64_t random, PickCallback done,
                 TimePoint deadline, TimePoint now);
  // Takes a waiting pick back; false if it is no longer waiting.
  bool Cancel(WaitQueue<Waiter>::Ticket ticket);
  // The picks whose deadline passed, taken out, oldest first.
  std::vector<Waiter> Expire(TimePoint now);
  // Takes every waiting pick out and refuses new ones until Open().
  std::vector<Waiter> Close();
  void Open();
  // A new bound (a changed maxQueue): picks already waiting stay until placed or timed out; a
  // smaller bound only refuses new ones while more wait.
  void SetMaxSize(std::size_t max_queue) { queue_.SetMaxSize(max_queue); }

  // Offers the waiting picks, oldest first, to `decide(const PickRequest&, std::uint64_t random)
  // -> PickOutcome` and takes out, in order, those it answered (picked or refused: all but
  // kNoRoom), their `outcome` set. A pick that finds no room within `hold` of being queued keeps
  // later picks for its model behind it (the hold, above); picks for other models may pass.
  // `decide` runs under the queue's lock: it must not call this object.
  template <typename Decide>
  std::vector<Waiter> Release(TimePoint now, std::chrono::nanoseconds hold, Decide&& decide);

  // Whether a new pick for `model` queues behind the waiting ones: the oldest of them was queued
  // less than `hold` before `now`.
  bool Holds(std::string_view model, TimePoint now, std::chrono::nanoseconds hold) const;
  std::size_t Size() const { return queue_.Size(); }
  // Bytes of request the waiting picks keep (model names and prefix hashes).
  std::size_t KeptBytes() const;
  std::optional<TimePoint> NextDeadline() const { return queue_.NextDeadline(); }

  // Calls each waiter's `done` (if any): with its `outcome` (Release's) for kPicked, else with
  // `status`.
  // Call with no lock held: a `done` may pick again.
  static void Answer(const std::vector<Waiter>& waiters, PickStatus status = PickStatus::kPicked);

 private:
  // `delta`: 1 for a pick being queued, -1 for one taken out.
  void Count(const Waiter& waiter, std::ptrdiff_t delta);
  std::vector<Waiter> Uncount(std::vector<Waiter> waiters);

  WaitQueue<Waiter> queue_;
  mutable std::mutex mu_;
  // When each waiting pick of a model was queued, oldest first; guarded by mu_.
  StringMap<std::multiset<TimePoint>> models_;
  std::size_t kept_bytes_ = 0;  // guarded by mu_
};

template <typename Decide>
std::vector<WaitingPicks::Waiter> WaitingPicks::Release(TimePoint now,
                                                        std::chrono::nanoseconds hold,
                                                        Decide&& decide) {
  if (queue_.Size() == 0) return {};
  std::vector<std::string_view> held;  // models whose later picks stay behind
  return Uncount(queue_.Release([&](Waiter& waiter) {
    if (std::find(held.begin(), held.end(), waiter.model) != held.end()) {
      return Placement::kKeep;
    }
    PickOutcome outcome = decide(waiter.Request(), waiter.random);
    if (outcome.status != PickStatus::kNoRoom) {
      waiter.outcome = std::move(outcome);
      return Placement::kPlaced;
    }
    if (now - waiter.queued_at < hold) held.push_back(waiter.model);
    return Placement::kKeep;
  }));
}

}  // namespace eoc::routing
