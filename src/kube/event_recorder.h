// core/v1 Events, written as client-go's tools/record writes them: each recorded event goes
// through an EventCorrelator (kube/event_correlator.h: counting, aggregation, spam filter); a
// bounded queue and one background thread keep Record() off the network.
//
//   eoc::kube::EventRecorder recorder(*client, {.component = "eoc-controller"});
//   recorder.Record({.kind = "InferencePool", .ns = "prod", .name = "chat",
//                    .uid = uid, .api_version = "eoc.dev/v1alpha1"},
//                   eoc::kube::EventType::kWarning, "ScaleFailed", "409 Conflict: ...");
//
// Messages are cut to max_message_bytes (1 KiB) at a UTF-8 boundary.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <thread>

#include "common/backoff.h"
#include "common/clock.h"
#include "kube/client.h"
#include "kube/event.h"
#include "kube/event_correlator.h"
#include "kube/event_sink.h"
#include "kube/status.h"
#include "kube/write_fence.h"

namespace eoc::kube {

enum class EventDropReason {
  kQueueFull,    // Record() found the queue full
  kSpam,         // the spam filter
  kInvalid,      // no object name, or the server refused the Event (4xx)
  kWriteFailed,  // still failing after max_tries
  kStopped,      // Stop() came before it could be written
  kNotLeader,    // the write fence said no when it was to be written
};

// Hooks for metrics and logs (src/kube does not depend on the telemetry module); no-ops by default.
// Called on the writer thread, except OnEventDropped(kQueueFull), called from Record().
class EventRecorderMetrics {
 public:
  virtual ~EventRecorderMetrics() = default;
  virtual void OnEventWritten() {}     // an Event created or updated
  virtual void OnEventAggregated() {}  // of those, a repeat folded into an existing Event
  virtual void OnEventDropped(EventDropReason /*reason*/) {}
  virtual void OnWriteError(const Status& /*error*/) {}
};

struct EventRecorderOptions {
  std::string component = "eoc-controller";
  std::string host;  // source.host; empty leaves it out
  std::size_t queue_capacity = 1000;
  std::size_t max_message_bytes = 1024;
  // A write that fails for want of an answer (or a 5xx) is retried, as client-go, up to
  // `max_tries` in all, `retry_delay` apart on the clock, the first wait spread at random over
  // [0, retry_delay) (Spread in common/backoff.h). Stop() ends a wait.
  int max_tries = 12;
  std::chrono::milliseconds retry_delay{std::chrono::seconds(10)};
  // How long Stop() keeps writing what is queued (one try each) before dropping the rest.
  std::chrono::milliseconds drain_timeout{std::chrono::seconds(5)};
  EventCorrelatorOptions correlator;
};

struct EventRecorderDeps {
  const Clock* clock = nullptr;             // RealClock() when null
  Random01 random;                          // spreads first retries; empty: seeded at random
  EventRecorderMetrics* metrics = nullptr;  // none when null
  // Asked immediately before each write (and each retry); empty: always write.
  WriteFence fence;
};

class EventRecorder : public EventSink {
 public:
  struct Stats {
    std::uint64_t written = 0;
    std::uint64_t aggregated = 0;
    std::uint64_t dropped = 0;
  };

  // `client` must outlive the recorder. Starts the writer thread.
  EventRecorder(Client& client, EventRecorderOptions options = {}, EventRecorderDeps deps = {});
  ~EventRecorder() override;  // Stop()
  EventRecorder(const EventRecorder&) = delete;
  EventRecorder& operator=(const EventRecorder&) = delete;

  // Queues an event and returns at once; drops it (and counts the drop) when the queue is full.
  // Thread-safe.
  void Record(const ObjectReference& object, EventType type, std::string_view reason,
              std::string_view message) override;
  // Waits until everything recorded so far is written or dropped; false on timeout. The timeout is
  // real time, not the clock's: only tests and shutdown wait here.
  bool Flush(std::chrono::milliseconds timeout);
  // Writes what is queued (within drain_timeout, one try each), then ends the thread. Record()
  // drops from then on. Safe to call twice.
  void Stop();
  Stats stats() const;

 private:
  enum class Outcome { kDone, kRetry };

  void Run();
  bool Next(Event& event);  // false once stopped and drained
  void Process(Event event);
  void WriteWithRetries(const CorrelationResult& result);
  Outcome WriteOnce(const CorrelationResult& result);
  Outcome Failed(const Status& error);
  void Written(const CorrelationResult& result, const nlohmann::json& answer, bool patched);
  void Drop(EventDropReason reason);
  bool Stopping() const;
  // Waits `d` on the clock; false when Stop() came first.
  bool WaitUnlessStopped(std::chrono::nanoseconds d);

  Client& client_;
  const EventRecorderOptions options_;
  const Clock& clock_;
  EventRecorderMetrics* metrics_;
  const WriteFence fence_;
  EventCorrelator correlator_;  // writer thread only

  mutable std::mutex mu_;
  Wakeup wake_;                   // the writer: work queued, or stop, or a retry's time
  std::condition_variable idle_;  // Flush(): the writer went idle
  std::deque<Event> queue_;
  bool busy_ = false;
  std::atomic<bool> stopping_{false};  // written under mu_
  std::chrono::steady_clock::time_point drain_deadline_;
  Stats stats_;
  Random01 random_;  // writer thread only: spreads the first retry of each write
  std::thread thread_;
};

}  // namespace eoc::kube
