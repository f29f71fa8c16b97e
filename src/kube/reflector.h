// The reflector: keeps a local copy of one collection in step with the API server, as client-go's
// does. It lists, then watches from the list's resourceVersion with bookmarks and a jittered
// timeout, resumes watches from the last version it saw, relists after a watch error or 410 Gone
// (from "" when the list itself answers 410), and backs off (jittered, exponential, reset after a
// healthy period) while the server is unwell. What it learns goes to a ReflectorSink: whole lists
// to Replace(), which must compute what vanished, and single changes to Apply().
//
//   Reflector r(client, {.resource = resources::kPods, .ns = ""}, sink, clock);
//   std::thread t([&] { r.Run(); });   // until Stop()
//   ...
//   r.Stop(); t.join();
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/backoff.h"
#include "common/clock.h"
#include "kube/client.h"
#include "kube/types.h"

namespace eoc::kube {

// Receives what the reflector learns. Called from the reflector's thread only.
class ReflectorSink {
 public:
  virtual ~ReflectorSink() = default;
  // The whole collection as of `resource_version`: the sink replaces what it holds, treating
  // objects it holds but `items` lacks as deleted.
  virtual void Replace(std::vector<nlohmann::json>&& items,
                       const std::string& resource_version) = 0;
  // One ADDED, MODIFIED or DELETED event.
  virtual void Apply(WatchEventType type, nlohmann::json&& object) = 0;
};

// Hooks for the operator's metrics and logs; src/kube knows nothing of Prometheus. Called on the
// reflector's thread.
class ReflectorMetrics {
 public:
  virtual ~ReflectorMetrics() = default;
  virtual void OnList(std::size_t /*items*/) {}
  virtual void OnWatchStart() {}
  virtual void OnEvent(WatchEventType /*type*/) {}
  virtual void OnError(const Status& /*status*/) {}
  // Lists and watches have failed without a success in between for `stale_after` (true), or a
  // list or watch succeeded again after that (false). Reported on changes only.
  virtual void OnStale(bool /*stale*/, std::chrono::nanoseconds /*failing_for*/) {}
  // The sink left an object out of its cache (its informer could not map it): once per object
  // ("namespace/name") and resourceVersion.
  virtual void OnInvalidObject(const std::string& /*key*/, const std::string& /*resource_version*/,
                               const std::string& /*why*/) {}
};

struct ReflectorOptions {
  ResourceRef resource;
  std::string ns;  // "" for all namespaces
  std::string label_selector;
  std::string field_selector;
  std::int64_t page_size = 500;
  // Each watch asks the server to end it after a random time in this range, so that many
  // watches do not all restart at once (client-go: 5 to 10 minutes).
  std::chrono::seconds min_watch_timeout{300};
  std::chrono::seconds max_watch_timeout{600};
  // Backoff between failed attempts: doubles from `initial_backoff` up to `max_backoff`, each
  // wait jittered up to twice its size, and starts over after `backoff_reset` without failures.
  // A Retry-After from the server is a floor for the wait it comes with. Waits are on the clock.
  std::chrono::milliseconds initial_backoff{800};
  std::chrono::milliseconds max_backoff{30000};
  std::chrono::seconds backoff_reset{120};
  // The jitter of the backoff and the choice of watch timeouts; empty: seeded at random.
  Random01 random;
  // Failing this long without a success makes the reflector stale (Stale(), OnStale): its cache
  // may be missing changes. A successful list, watch start or event ends it.
  std::chrono::milliseconds stale_after{std::chrono::seconds(60)};
  ReflectorMetrics* metrics = nullptr;
  // Called on the reflector's thread before each watch starts; tests use it to hold the
  // reflector between two watches.
  std::function<void()> before_watch;
};

class Reflector {
 public:
  Reflector(Client& client, ReflectorOptions options, ReflectorSink& sink, const Clock& clock);

  // Lists and watches until Stop(). Blocks; run it on a thread of its own.
  void Run();
  // From any thread: ends Run() promptly, also from inside a watch or a backoff wait (on any
  // clock: a ManualClock need not move).
  void Stop();

  // The last resourceVersion seen (from a list, an event or a bookmark).
  std::string LastResourceVersion() const;
  // Whether lists and watches have kept failing for at least stale_after. Thread-safe.
  bool Stale() const;
  // The hooks given in the options (a no-op set when none): for the sink's reports.
  ReflectorMetrics& metrics() const { return metrics_; }

 private:
  enum class WatchEnd { kTimeout, kStopped, kExpired, kError };

  bool ListOnce();
  WatchEnd WatchOnce();
  WatchEnd Consume(Watch& watch);
  void Failed(const Status& status);
  void Healthy();
  // Sleeps for `d` on the clock unless Stop() comes first; false when stopped.
  bool SleepFor(std::chrono::nanoseconds d);
  static BackoffPolicy Policy(const ReflectorOptions& options);
  bool stopping() const;
  std::chrono::seconds WatchTimeout();
  void SetLastResourceVersion(const std::string& rv);

  Client& client_;
  const ReflectorOptions options_;
  ReflectorSink& sink_;
  const Clock& clock_;
  ReflectorMetrics default_metrics_;
  ReflectorMetrics& metrics_;
  Random01 random_;

  mutable std::mutex mu_;
  Wakeup wake_;  // the backoff waits: Stop() wakes them
  std::atomic<bool> stop_{false};
  Watch* current_watch_ = nullptr;  // guarded by mu_, so that Stop() can end it
  std::string last_rv_;             // guarded by mu_
  // Whether the last version is known to be compacted away: the next list then reads from etcd
  // at the newest version ("") instead of at last_rv_.
  bool rv_expired_ = false;
  // The reflector's thread only: the backoff, the wait before the next attempt (zero once healthy
  // for backoff_reset), and when the last failure came.
  Backoff backoff_;
  std::chrono::nanoseconds wait_{0};
  Clock::TimePoint last_failure_{};
  // The first failure since the last success, if the last attempt failed; guarded by mu_.
  std::optional<Clock::TimePoint> failing_since_;
  bool reported_stale_ = false;  // what OnStale last said; the reflector's thread only
};

}  // namespace eoc::kube
