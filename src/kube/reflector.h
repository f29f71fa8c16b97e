// The reflector: keeps a local copy of one collection in step with the API server, as client-go's
// does. It lists, then watches from the list's resourceVersion with bookmarks and a jittered
// timeout, resumes watches from the last version it saw, relists after a watch error or 410 Gone,
// and backs off (jittered, exponential, reset after a healthy period) while the server is unwell.
// What it learns goes to a ReflectorSink: whole lists to Replace(), which must compute what
// vanished, and single changes to Apply().
//
// Which version a list names, and whether it pages (the rule that keeps an informer awake after
// an API-server restart, README "Reliability"):
//   - the first list names "0" (anything the server's watch cache holds), in pages;
//   - a relist names the last version seen, asked whole, so that the watch cache answers it with
//     its own newest state, at least as new as that version: a watch from the answer's version is
//     one the cache can serve. Paged, the API server (1.20) reads such a list from etcd at exactly
//     the old version, which a restarted cache then refuses to watch from (410), in a loop. Only a
//     server that has answered in pages before (it has no watch cache for the resource) is asked
//     in pages, as client-go does;
//   - after a 410 from the list itself, or a second 410 from a watch without a held watch in
//     between, the next list names "" (the newest, from etcd), in pages.
// The reflector is fresh while it holds a watch: one that has delivered an event other than an
// error (a bookmark included: the watch cache sends one about every minute), ended at its timeout,
// or stayed open for watch_hold. Successful lists alone do not make it fresh, so an informer whose
// every watch fails at once turns stale after stale_after, however well its lists go.
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
  // The reflector has held no watch for `stale_after` since its first failure (true), or a watch
  // was held again after that (false). Reported on changes only.
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
  // Failing this long without holding a watch makes the reflector stale (Stale(), OnStale): its
  // cache may be missing changes. A held watch ends it.
  std::chrono::milliseconds stale_after{std::chrono::seconds(60)};
  // A watch open this long without an error is held, events or not (an API server without its
  // watch cache sends no bookmarks). Stale() sees it at once; OnStale(false) is reported at the
  // watch's next event or end, since the reflector's thread waits in the watch meanwhile.
  std::chrono::milliseconds watch_hold{std::chrono::seconds(10)};
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
  // Whether the reflector has held no watch for at least stale_after since its first failure.
  // Thread-safe.
  bool Stale() const;
  // The hooks given in the options (a no-op set when none): for the sink's reports.
  ReflectorMetrics& metrics() const { return metrics_; }

 private:
  enum class WatchEnd { kTimeout, kStopped, kExpired, kError };

  bool ListOnce();
  WatchEnd WatchOnce();
  WatchEnd Consume(Watch& watch);
  // A watch answered 410 Gone: counts it, and after a second one without a held watch in
  // between has the next list name the newest version.
  WatchEnd Expired(const Status& status);
  void Failed(const Status& status);
  // The current watch proved itself: the reflector is fresh.
  void Held();
  // Whether the current watch has been open for watch_hold; mu_ held.
  bool HoldingLocked(Clock::TimePoint now) const;
  // Held() if the current watch, now ending, stayed open for watch_hold.
  void HeldIfOpenLong();
  // How long the current watch has been open (zero when none is).
  std::chrono::nanoseconds OpenFor() const;
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
  // Whether the last version is known to be unusable (compacted away, or refused twice by a
  // watch): the next list then reads from etcd at the newest version ("") instead of at last_rv_.
  bool rv_expired_ = false;
  // When the current watch opened, while one is open; guarded by mu_.
  std::optional<Clock::TimePoint> watch_opened_;
  // The reflector's thread only: whether the server has answered a list in pages (it has no
  // watch cache for the resource, so relists page too), and the watches refused with 410 since
  // the last held one.
  bool server_pages_ = false;
  int gone_since_held_ = 0;
  // The reflector's thread only: the backoff, the wait before the next attempt (zero once healthy
  // for backoff_reset), and when the last failure came.
  Backoff backoff_;
  std::chrono::nanoseconds wait_{0};
  Clock::TimePoint last_failure_;
  // The first failure since the last held watch, if any; guarded by mu_.
  std::optional<Clock::TimePoint> failing_since_;
  bool reported_stale_ = false;  // what OnStale last said; the reflector's thread only
};

}  // namespace eoc::kube
