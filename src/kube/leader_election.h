// Leader election on a coordination.k8s.io/v1 Lease, with client-go's semantics
// (tools/leaderelection): candidates poll the Lease every retry period (with jitter); the holder
// renews it every retry period; a follower may take it over once it has seen no change to the
// record for the record's leaseDurationSeconds, timed on its own monotonic clock from the moment
// it observed the change (never from renewTime, so clock skew between hosts does not matter).
//
//   eoc::kube::LeaderElector elector(*client, {.lease_namespace = "eoc-system",
//                                              .lease_name = "eoc-operator"},
//                                    {.on_started_leading = [&] { controller.StartLeading(); },
//                                     .on_stopped_leading = [&] { controller.StopLeading(); }});
//   elector.Start();
//   ...
//   if (elector.IsLeader()) PublishStatus();
//   elector.Stop();   // stops leading, then releases the Lease so a successor takes over at once
//
// Unlike client-go, losing the Lease does not end the elector: it calls on_stopped_leading and
// goes back to candidacy, so leader-only work stops while the process (and its pick endpoint)
// keeps serving. And a holder that sees another identity in the Lease steps down at once instead
// of retrying until its renew deadline.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "common/backoff.h"
#include "common/clock.h"
#include "kube/client.h"
#include "kube/status.h"

namespace eoc::kube {

struct LeaderElectionConfig {
  std::string lease_namespace;
  std::string lease_name;
  // Who we are in holderIdentity; empty: DefaultLeaderIdentity().
  std::string identity;
  // How long a follower waits, from when it saw the record change, before taking the Lease over.
  std::chrono::milliseconds lease_duration{std::chrono::seconds(15)};
  // How long the holder keeps retrying a failed renewal before it stops leading.
  std::chrono::milliseconds renew_deadline{std::chrono::seconds(10)};
  // How often candidates try to acquire and the holder renews.
  std::chrono::milliseconds retry_period{std::chrono::seconds(2)};
  // A candidate waits retry_period * (1 + random * jitter_factor) between tries, so that
  // candidates started together do not stay in step.
  double jitter_factor = 1.2;
  // On Stop(), hand the Lease back (holderIdentity "") so a successor need not wait it out.
  bool release_on_cancel = true;
};

// Called on the elector's own thread: keep them short (start or stop work elsewhere), and do not
// call Stop() from them.
struct LeaderCallbacks {
  std::function<void()> on_started_leading;
  std::function<void()> on_stopped_leading;
  // A holder other than the last one this elector saw (ourselves included); a released, empty
  // holder is not reported.
  std::function<void(const std::string& identity)> on_new_leader;
};

// Hooks for metrics and logs (src/kube does not depend on the telemetry module); no-ops by default.
class LeaderElectionMetrics {
 public:
  virtual ~LeaderElectionMetrics() = default;
  virtual void OnLeadershipChanged(bool /*leading*/) {}
  // A failed read or write of the Lease (not a lost race, which is normal).
  virtual void OnLeaseError(const Status& /*error*/) {}
};

// hostname + "_" + 16 random hex digits, as client-go's callers build it (hostname + "_" + UUID).
std::string DefaultLeaderIdentity();

// The record a Lease's spec carries (client-go's LeaderElectionRecord).
struct LeaseRecord {
  std::string holder_identity;
  std::int64_t lease_duration_seconds = 0;
  std::string acquire_time;  // MicroTime strings, kept as the server wrote them
  std::string renew_time;
  std::int64_t lease_transitions = 0;

  bool operator==(const LeaseRecord&) const = default;
};

// Reads spec of a Lease object (absent fields stay empty or zero).
LeaseRecord ParseLeaseRecord(const nlohmann::json& lease);

// What a LeaderElector takes from its surroundings; tests inject their own.
struct LeaderElectorDeps {
  // RealClock() when null. The elector times the Lease and sleeps between tries on it (Stop()
  // wakes it), so a test drives it with a ManualClock.
  const Clock* clock = nullptr;
  Random01 random;                           // for the jitter; empty: seeded at random
  LeaderElectionMetrics* metrics = nullptr;  // none when null
};

class LeaderElector {
 public:
  // What one tryAcquireOrRenew came to.
  enum class Attempt {
    kLeading,      // we hold the Lease now (acquired or renewed)
    kHeldByOther,  // another identity holds an unexpired Lease
    kFailed,       // an API error, or a lost race (409)
  };

  // Throws std::invalid_argument, naming the field, for an unusable config (as client-go:
  // lease_duration > renew_deadline > jitter_factor * retry_period > 0). `client` must outlive
  // the elector; give it a request timeout below renew_deadline so that a hung call cannot keep a
  // leader from stepping down in time.
  LeaderElector(Client& client, LeaderElectionConfig config, LeaderCallbacks callbacks,
                LeaderElectorDeps deps = {});
  ~LeaderElector();  // Stop()
  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  // Starts the election on its own thread. Once only.
  void Start();
  // Stops the thread: stops leading (on_stopped_leading), then releases the Lease when configured.
  // Waits for a call in flight to the API server. Safe to call twice.
  void Stop();

  // True between on_started_leading and on_stopped_leading, and only while the last successful
  // renewal is less than renew_deadline old (so it turns false on time even while the elector's
  // thread is stuck in a call). Thread-safe.
  bool IsLeader() const;
  // The holder last observed in the Lease ("" when none yet). Thread-safe.
  std::string Leader() const;
  const std::string& identity() const { return config_.identity; }

  // One round of the protocol; the thread's loop calls it. Exposed for tests that drive the
  // elector step by step without Start().
  Attempt TryAcquireOrRenew();

 private:
  void Run();
  bool Acquire();       // false when stopped first
  void KeepRenewing();  // returns when leadership is lost or Stop() was called
  void SetLeading(bool leading);
  void Release();
  void ReportLeader();
  std::optional<Attempt> TryRenewOptimistically(std::chrono::system_clock::time_point wall);
  Attempt CreateLease(std::chrono::system_clock::time_point wall);
  Attempt Write(const LeaseRecord& record);
  nlohmann::json LeaseObject(const LeaseRecord& record) const;
  // Keeps a Lease read or written; restarts the follower's clock when its record changed.
  void Observe(nlohmann::json lease);
  bool ObservedLeaseValid() const;
  bool Stopping() const;
  void SleepFor(std::chrono::nanoseconds d);
  void Failed(const Status& error) const;

  Client& client_;
  LeaderElectionConfig config_;
  LeaderCallbacks callbacks_;
  const Clock& clock_;
  Random01 random_;
  LeaderElectionMetrics* metrics_;

  // The elector thread's own state (TryAcquireOrRenew's bookkeeping).
  LeaseRecord observed_;
  bool observed_any_ = false;  // observed_ and observed_time_ hold something read or written
  std::chrono::steady_clock::time_point observed_time_;
  nlohmann::json lease_;  // the last Lease object read or written: its resourceVersion
  std::string reported_leader_;

  mutable std::mutex mu_;
  Wakeup wake_;  // the sleeps between tries: Stop() wakes them
  std::atomic<bool> stopping_{false};
  bool leading_ = false;
  std::chrono::steady_clock::time_point renewed_at_;
  std::string leader_;
  std::thread thread_;
};

}  // namespace eoc::kube
