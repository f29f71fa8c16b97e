// The wait queue of one pool (DESIGN.md, "KV-block budget"): picks that found no eligible worker
// wait here, in arrival order, until capacity appears (a scrape shows free blocks, a new worker
// becomes ready) or their deadline passes. Bounded by `max_queue`. Generic over what a waiting
// pick carries (`T`: e.g. the request's demand and the deferred HTTP response to complete), and
// pure: time comes in as arguments, nothing is completed here; every call hands entries back to
// the caller, who answers them outside the queue's lock. Thread-safe (one mutex per queue; only
// picks that must wait ever take it, and Size() reads an atomic).
//
//   eoc::routing::WaitQueue<Waiting> queue(/*max_queue=*/1000);
//   // a pick with no eligible worker:
//   const auto deadline = eoc::routing::WaitDeadline(now, pool_timeout, request_wait);
//   auto admitted = queue.Admit(std::move(waiting), deadline, now);
//   switch (admitted.admission) {
//     case Admission::kQueued: break;   // answered later, from Release, Expire, Close or Cancel
//     case Admission::kFull: ...         // 429, answering *admitted.rejected
//     case Admission::kUnavailable: ...  // 503
//     case Admission::kExpired: ...      // 504: no time left to wait
//   }
//   // when capacity appears, in order:
//   for (Waiting& w : queue.Release([&](Waiting& w) { return TryPlace(w); })) Answer(w);
//   // at queue.NextDeadline():
//   for (Waiting& w : queue.Expire(clock.Now())) AnswerTimedOut(w);  // 504
//   // when waiting becomes impossible (no ready worker and no way to get one):
//   for (Waiting& w : queue.Close()) AnswerUnavailable(w);           // 503
//
// Head-of-line policy: Release walks the entries oldest first and the caller's `place` says, for
// each, kPlaced (taken out and returned, in order), kKeep (it stays; the walk goes on) or kStop
// (it stays; the walk ends). The queue keeps FIFO order among the entries `place` lets through;
// which entries may pass which is the caller's policy. The recommended one (WaitingPicks'),
// which offers room to the oldest entry first and keeps FIFO for a bounded time among entries
// that compete for the same capacity: when an entry cannot be placed, later entries that want
// the same workers (the same model) are kept behind it (kKeep) until its hold is over (then those
// that fit pass it), entries for other models may still pass, and the walk stops (kStop) once no
// worker has room for anything.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

namespace eoc::routing {

// What Admit did with a pick. The pick endpoint's answers: kFull 429, kUnavailable 503,
// kExpired 504.
enum class Admission {
  kQueued,       // waiting; answered later by Release, Expire, Close or Cancel
  kFull,         // the queue holds max_queue entries: shed
  kUnavailable,  // waiting is impossible: queueing is off (max_queue 0) or the queue is closed
  kExpired,      // the deadline is not after now: no time to wait
};
std::string_view ToString(Admission admission);

// What Release's `place` did with one waiting entry.
enum class Placement {
  kPlaced,  // placed: leaves the queue and is returned
  kKeep,    // not placed: stays; try the next entries
  kStop,    // not placed: stays; stop here
};

// A waiting pick's deadline: `queue_timeout` (the pool's queueTimeoutSeconds) after `now`, or
// sooner if the request asked to wait less (`requested_wait`; negative counts as zero).
std::chrono::steady_clock::time_point WaitDeadline(
    std::chrono::steady_clock::time_point now, std::chrono::nanoseconds queue_timeout,
    std::optional<std::chrono::nanoseconds> requested_wait);

template <typename T>
class WaitQueue {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  // Names a waiting entry, for Cancel. Never 0.
  using Ticket = std::uint64_t;

  struct Admitted {
    Admission admission = Admission::kUnavailable;
    Ticket ticket = 0;          // set when kQueued
    std::optional<T> rejected;  // the payload handed back, when not kQueued
  };

  // At most `max_queue` waiting entries; 0 turns queueing off (every Admit is kUnavailable).
  explicit WaitQueue(std::size_t max_queue) : max_queue_(max_queue) {}

  // Queues `payload` until `deadline`; when it is not queued, hands it back in `rejected` for
  // the caller to answer at once.
  Admitted Admit(T payload, TimePoint deadline, TimePoint now) {
    const std::lock_guard lock(mu_);
    Admission refusal = Admission::kQueued;
    if (max_queue_ == 0 || closed_) {
      refusal = Admission::kUnavailable;
    } else if (deadline <= now) {
      refusal = Admission::kExpired;
    } else if (entries_.size() >= max_queue_) {
      refusal = Admission::kFull;
    }
    if (refusal != Admission::kQueued) {
      return {.admission = refusal, .rejected = std::optional<T>(std::move(payload))};
    }
    const Ticket ticket = next_ticket_++;
    entries_.emplace(ticket, Entry{.payload = std::move(payload), .deadline = deadline});
    deadlines_.emplace(deadline, ticket);
    size_.store(entries_.size(), std::memory_order_relaxed);
    return {.admission = Admission::kQueued, .ticket = ticket};
  }

  // Offers the waiting entries, oldest first, to `place(T&) -> Placement` and returns those it
  // placed, in FIFO order. `place` runs under the queue's lock: it must be quick and must not
  // call this queue.
  template <typename Place>
  std::vector<T> Release(Place&& place) {
    std::vector<T> released;
    const std::lock_guard lock(mu_);
    for (auto it = entries_.begin(); it != entries_.end();) {
      const Placement placement = place(it->second.payload);
      if (placement == Placement::kPlaced) {
        released.push_back(std::move(it->second.payload));
        it = EraseLocked(it);
        continue;
      }
      if (placement == Placement::kStop) break;
      ++it;
    }
    return released;
  }

  // Takes out every entry whose deadline is not after `now` (they timed out: 504), earliest
  // deadline first.
  std::vector<T> Expire(TimePoint now) {
    std::vector<T> expired;
    const std::lock_guard lock(mu_);
    while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
      const auto it = entries_.find(deadlines_.begin()->second);
      expired.push_back(std::move(it->second.payload));
      EraseLocked(it);
    }
    return expired;
  }

  // Takes out one waiting entry (its client went away); nullopt if it is no longer waiting.
  std::optional<T> Cancel(Ticket ticket) {
    const std::lock_guard lock(mu_);
    const auto it = entries_.find(ticket);
    if (it == entries_.end()) return std::nullopt;
    std::optional<T> payload(std::move(it->second.payload));
    EraseLocked(it);
    return payload;
  }

  // Waiting becomes impossible: later Admits answer kUnavailable, and every waiting entry is
  // taken out (in FIFO order) for the caller to answer 503.
  std::vector<T> Close() {
    std::vector<T> waiting;
    const std::lock_guard lock(mu_);
    closed_ = true;
    waiting.reserve(entries_.size());
    for (auto& [ticket, entry] : entries_) waiting.push_back(std::move(entry.payload));
    entries_.clear();
    deadlines_.clear();
    size_.store(0, std::memory_order_relaxed);
    return waiting;
  }
  // Waiting is possible again (a queue starts open).
  void Open() {
    const std::lock_guard lock(mu_);
    closed_ = false;
  }
  bool IsOpen() const {
    const std::lock_guard lock(mu_);
    return !closed_ && max_queue_ > 0;
  }

  // The earliest deadline of a waiting entry: when Expire next has work.
  std::optional<TimePoint> NextDeadline() const {
    const std::lock_guard lock(mu_);
    if (deadlines_.empty()) return std::nullopt;
    return deadlines_.begin()->first;
  }

  // Entries waiting; lock-free, so the pick path can see whether anyone waits before it (to send
  // a new pick behind them rather than ahead).
  std::size_t Size() const { return size_.load(std::memory_order_relaxed); }
  std::size_t MaxSize() const {
    const std::lock_guard lock(mu_);
    return max_queue_;
  }
  // A new bound: entries already waiting stay (a smaller bound refuses new ones while more wait);
  // 0 turns queueing off for new entries.
  void SetMaxSize(std::size_t max_queue) {
    const std::lock_guard lock(mu_);
    max_queue_ = max_queue;
  }

 private:
  struct Entry {
    T payload;
    TimePoint deadline;
  };
  using Entries = std::map<Ticket, Entry>;  // tickets increase: ticket order is FIFO order

  typename Entries::iterator EraseLocked(typename Entries::iterator it) {
    deadlines_.erase({it->second.deadline, it->first});
    auto next = entries_.erase(it);
    size_.store(entries_.size(), std::memory_order_relaxed);
    return next;
  }

  mutable std::mutex mu_;
  std::size_t max_queue_;  // guarded by mu_
  bool closed_ = false;
  Ticket next_ticket_ = 1;
  Entries entries_;
  std::set<std::pair<TimePoint, Ticket>> deadlines_;  // the same entries, by deadline
  std::atomic<std::size_t> size_{0};
};

}  // namespace eoc::routing
