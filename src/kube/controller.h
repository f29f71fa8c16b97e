// The generic controller loop, in controller-runtime's shape: a Reconciler turns one key
// ("namespace/name") into the state it should have and says whether to come back; a Controller
// owns the work queue of keys, the worker threads, the wait for the caches to sync, and the
// retry rules between them.
//
//   class PoolReconciler final : public eoc::kube::Reconciler {
//     eoc::kube::Result<eoc::kube::ReconcileResult> Reconcile(const std::string& key) override {
//       ...
//       if (!written) return written.error();                 // retried with backoff
//       if (too_soon) return eoc::kube::ReconcileResult{.requeue_after = wait};
//       return eoc::kube::ReconcileResult{};                  // done: the key's backoff resets
//     }
//   };
//   eoc::kube::Controller c("inferencepool", reconciler, {.workers = 2});
//   pods.AddHandlers({.on_add = [&](const PodView& p) { c.Add(KeyOf(p)); }});
//   c.Start({[&] { return pods.HasSynced(); }});   // workers begin once every check holds
//   c.Stop();
//
// The rules, as controller-runtime's reconcileHandler: an error (or an exception, which is a
// bug) -> AddRateLimited; requeue_after > 0 -> Forget, then AddAfter(requeue_after); requeue ->
// AddRateLimited; otherwise Forget. One key is never reconciled by two workers at once (the
// work queue hands a key to one worker until it is Done).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "kube/status.h"
#include "kube/work_queue.h"

namespace eoc::kube {

// What a successful reconcile asks for (controller-runtime's reconcile.Result).
struct ReconcileResult {
  // Come back after the rate limiter's backoff, as after an error but without one.
  bool requeue = false;
  // Come back after this long (positive), the key's backoff reset; wins over `requeue`.
  std::chrono::nanoseconds requeue_after{0};

  bool operator==(const ReconcileResult&) const = default;
};

// How one reconcile ended, as the metrics count it ("success", "error", "requeue").
enum class ReconcileOutcome : std::uint8_t { kSuccess, kError, kRequeue };
const char* ToString(ReconcileOutcome outcome);
ReconcileOutcome OutcomeOf(const Result<ReconcileResult>& result);

class Reconciler {
 public:
  virtual ~Reconciler() = default;
  // Brings `key`'s object to what it should be; the error is the API's (or a client-side)
  // Status that stopped it. Called by one worker at a time per key; may throw only for a bug.
  virtual Result<ReconcileResult> Reconcile(const std::string& key) = 0;
};

// Hooks for the controller's metrics and logs (this module knows neither); no-ops by default.
// Called on the worker threads.
class ControllerMetrics {
 public:
  virtual ~ControllerMetrics() = default;
  virtual void OnReconcile(ReconcileOutcome /*outcome*/, std::chrono::nanoseconds /*took*/) {}
  // Reconcile threw (counted as an error, retried with backoff).
  virtual void OnException(const std::string& /*key*/, const std::string& /*what*/) {}
};

struct ControllerOptions {
  // Worker threads (controller-runtime's MaxConcurrentReconciles); 0 runs none (a test or a
  // benchmark then calls the reconciler itself).
  int workers = 1;
  // The queue's retry backoff; null: DefaultControllerRateLimiter(clock).
  std::unique_ptr<RateLimiter> rate_limiter;
  // How often the synced checks are asked again while one fails (client-go polls every 100 ms).
  std::chrono::milliseconds sync_poll_period{100};
};

struct ControllerDeps {
  const Clock* clock = nullptr;               // RealClock() when null
  WorkQueueMetrics* queue_metrics = nullptr;  // none when null
  ControllerMetrics* metrics = nullptr;       // none when null
};

// Thread-safe. The reconciler and the hooks must outlive the controller.
class Controller {
 public:
  // Whether a cache has its first list (an informer's HasSynced).
  using SyncedCheck = std::function<bool()>;

  // `name` names the queue (and the metrics' label).
  Controller(std::string name, Reconciler& reconciler, ControllerOptions options = {},
             ControllerDeps deps = {});
  ~Controller();  // Stop()s
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;
  Controller(Controller&&) = delete;
  Controller& operator=(Controller&&) = delete;

  const std::string& Name() const { return queue_.Name(); }

  // Queues `key` for a reconcile (event handlers call this); ignored once stopped.
  void Add(const std::string& key) { queue_.Add(key); }

  // Once. Waits, on a thread of its own, until every check holds (polled every
  // sync_poll_period on the clock), then starts the workers. Keys added meanwhile wait.
  void Start(std::vector<SyncedCheck> synced);
  // Every check held: the workers are started (or starting).
  bool Started() const { return started_.load(); }
  // Ends the sync wait at once, shuts the queue down (keys waiting are dropped), and joins the
  // workers once their reconciles in progress return. Safe to call twice.
  void Stop();

 private:
  void Run(const std::vector<SyncedCheck>& synced);
  bool WaitForCacheSync(const std::vector<SyncedCheck>& synced);
  void RunWorker();
  void ProcessNext(const std::string& key);

  Reconciler& reconciler_;
  const int workers_count_;
  const std::chrono::milliseconds sync_poll_period_;
  const Clock& clock_;
  ControllerMetrics no_metrics_;
  ControllerMetrics* const metrics_;  // never null

  WorkQueue queue_;
  Wakeup wakeup_;  // the sync wait sleeps on it; Stop() notifies it
  std::atomic<bool> stopping_{false};
  std::atomic<bool> started_{false};
  std::thread runner_;                // waits for sync, starts the workers, then joins them
  std::vector<std::thread> workers_;  // the runner's only
};

}  // namespace eoc::kube
