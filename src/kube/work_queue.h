// The controller work queue, with client-go's semantics (util/workqueue): keys ("namespace/name")
// wait de-duplicated, one worker at a time holds a key, failed keys come back after a per-key
// exponential backoff limited by an overall token bucket (controller-runtime's defaults).
//
//   eoc::kube::WorkQueue queue("inferencepool", eoc::RealClock());
//   // event handlers:  queue.Add(namespace + "/" + name);
//   // each of N worker threads:
//   while (auto key = queue.Get()) {
//     if (Reconcile(*key)) {
//       queue.Forget(*key);          // success: the key's backoff starts over
//     } else {
//       queue.AddRateLimited(*key);  // failure: try again after 5 ms, 10 ms, 20 ms ... 1000 s
//     }
//     queue.Done(*key);              // always; a key added meanwhile is handed out again now
//   }
//   // on exit: queue.ShutDownWithDrain();  (or ShutDown() to stop without waiting)
//
// A reconcile that asks to be run again later does as controller-runtime: `Forget(key)` then
// `AddAfter(key, delay)`.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "kube/rate_limiter.h"

namespace eoc::kube {

// How long a key waits before it is retried. Implementations are thread-safe.
class RateLimiter {
 public:
  virtual ~RateLimiter() = default;
  // Records one more retry of `key` and returns how long it should wait before it.
  virtual std::chrono::nanoseconds When(const std::string& key) = 0;
  // The key succeeded: its history is dropped (so state stays bounded by the keys in use).
  virtual void Forget(const std::string& key) = 0;
  // Retries recorded for `key` since it was last forgotten.
  virtual int NumRequeues(const std::string& key) = 0;
};

// base * 2^(retries so far), at most `max_delay`, per key, without jitter (BackoffDelay).
class ItemExponentialFailureRateLimiter final : public RateLimiter {
 public:
  ItemExponentialFailureRateLimiter(std::chrono::nanoseconds base,
                                    std::chrono::nanoseconds max_delay);
  std::chrono::nanoseconds When(const std::string& key) override;
  void Forget(const std::string& key) override;
  int NumRequeues(const std::string& key) override;

 private:
  const std::chrono::nanoseconds base_;
  const std::chrono::nanoseconds max_delay_;
  std::mutex mu_;
  std::unordered_map<std::string, int> failures_;
};

// One token bucket over all keys: `qps` retries a second overall after a burst of `burst`. Keeps
// no per-key state (Forget does nothing, NumRequeues is 0), as client-go's BucketRateLimiter.
class BucketRateLimiter final : public RateLimiter {
 public:
  BucketRateLimiter(double qps, int burst, const Clock& clock);
  std::chrono::nanoseconds When(const std::string& key) override;
  void Forget(const std::string& key) override;
  int NumRequeues(const std::string& key) override;

 private:
  TokenBucket bucket_;
};

// The longest wait that any of its limiters asks for; every limiter records every retry.
class MaxOfRateLimiter final : public RateLimiter {
 public:
  explicit MaxOfRateLimiter(std::vector<std::unique_ptr<RateLimiter>> limiters);
  std::chrono::nanoseconds When(const std::string& key) override;
  void Forget(const std::string& key) override;
  int NumRequeues(const std::string& key) override;

 private:
  const std::vector<std::unique_ptr<RateLimiter>> limiters_;
};

// controller-runtime's default: the larger of a per-key backoff from 5 ms to 1000 s and an
// overall 10 QPS bucket with a burst of 100.
std::unique_ptr<RateLimiter> DefaultControllerRateLimiter(const Clock& clock);

// Hooks for the queue's metrics, so that this module need not know the telemetry module. Called
// with the queue's lock held: implementations must be quick and must not call the queue.
class WorkQueueMetrics {
 public:
  virtual ~WorkQueueMetrics() = default;
  // A key became waiting (Add of a key that was not already waiting).
  virtual void OnAdd() {}
  // The number of keys waiting to be processed changed (client-go's workqueue_depth: this
  // includes a key re-added while it is being processed).
  virtual void OnDepth(std::size_t /*depth*/) {}
  // AddAfter or AddRateLimited was called.
  virtual void OnRetry() {}
  // A key was handed out by Get, `queued` after it became waiting.
  virtual void OnLatency(std::chrono::nanoseconds /*queued*/) {}
  // Done was called, `work` after Get handed the key out.
  virtual void OnWorkDuration(std::chrono::nanoseconds /*work*/) {}
};

// Thread-safe. Keeps one background thread that moves delayed keys in when they are due.
class WorkQueue {
 public:
  // `clock` times what the metrics measure and when delayed keys are due (on a ManualClock, they
  // become due as the test advances it). `rate_limiter` defaults to
  // DefaultControllerRateLimiter(clock). `metrics`, if given, must outlive the queue.
  explicit WorkQueue(std::string name, const Clock& clock = RealClock(),
                     std::unique_ptr<RateLimiter> rate_limiter = nullptr,
                     WorkQueueMetrics* metrics = nullptr);
  // Shuts down (without draining) and stops the background thread.
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;
  WorkQueue(WorkQueue&&) = delete;
  WorkQueue& operator=(WorkQueue&&) = delete;

  const std::string& Name() const { return name_; }

  // Marks `key` as needing processing. A key already waiting stays queued once; a key being
  // processed is queued again when its worker calls Done. Ignored after shutdown.
  void Add(const std::string& key);
  // Adds `key` once `delay` has passed (at once if it is not positive). While a delayed add of
  // the same key is pending, the earlier of the two due times wins.
  void AddAfter(const std::string& key, std::chrono::nanoseconds delay);
  // AddAfter(key, rate limiter's When(key)). Ignored after shutdown, the limiter untouched.
  void AddRateLimited(const std::string& key);
  // The rate limiter forgets `key` (its backoff starts over). Does not remove it from the queue.
  void Forget(const std::string& key);
  int NumRequeues(const std::string& key);

  // Blocks until a key is ready and hands it to the caller, who must call Done(key) after
  // processing it. After shutdown, keys already queued are still handed out (as client-go);
  // nullopt once none are left: the worker should exit.
  std::optional<std::string> Get();
  // The caller has finished with a key that Get gave it. A call for a key that is not being
  // processed is ignored.
  void Done(const std::string& key);

  // Keys queued and ready to be handed out (not those being processed or delayed).
  std::size_t Len() const;

  // Further adds are ignored, blocked Get()s return nullopt, pending delayed adds are dropped.
  void ShutDown();
  // As ShutDown, then waits until every key being processed is Done. A ShutDown() from another
  // thread ends the wait early.
  void ShutDownWithDrain();
  bool ShuttingDown() const;

 private:
  using ClockTime = Clock::TimePoint;

  void ShutDownLocked(bool drain);
  void AddLocked(const std::string& key);
  void ScheduleLocked(const std::string& key, ClockTime due);
  void PromoteDueLocked(ClockTime now);
  void DelayLoop();

  const std::string name_;
  const Clock& clock_;
  const std::unique_ptr<RateLimiter> rate_limiter_;
  WorkQueueMetrics* const metrics_;  // never null: a no-op instance when none was given
  WorkQueueMetrics no_metrics_;

  mutable std::mutex mu_;
  std::condition_variable ready_cv_;    // Get: a key was queued, or shutdown
  std::condition_variable drained_cv_;  // ShutDownWithDrain: nothing in processing
  bool shutting_down_ = false;
  bool drain_ = false;
  std::deque<std::string> queue_;  // ready keys, in order; each is dirty and not processing
  // Keys that need processing, with when they became so (for OnLatency).
  std::unordered_map<std::string, ClockTime> dirty_;
  // Keys handed out by Get and not yet Done, with when (for OnWorkDuration).
  std::unordered_map<std::string, ClockTime> processing_;
  // Delayed adds: each key's due time, and the same ordered by due time.
  std::unordered_map<std::string, ClockTime> due_by_key_;
  std::set<std::pair<ClockTime, std::string>> due_order_;
  Wakeup delay_wake_;  // DelayLoop sleeps on it: until the next due time, a new one, or shutdown
  std::thread delay_thread_;  // last: started after everything it uses
};

}  // namespace eoc::kube
