// The pick endpoint's own series, kept off the hot path's locks (DESIGN.md, "Rules of the house":
// prometheus-cpp's Family and Histogram take a mutex on every call). Each thread counts into its
// own cells, relaxed atomics that only it writes; /metrics merges every thread's cells, and reads
// the pools' queue, session and prefix figures from the pool directory at that moment.
//
//   eoc::server::PickMetrics metrics;
//   metrics.Record("prod/chat", PickMetrics::Outcome::kSessionHit, 200, took);   // every pick
//   metrics.RecordWait("prod/chat", waited);                     // a pick that waited in the queue
//   std::vector<prometheus::MetricFamily> families = metrics.Collect(&directory);  // /metrics
//
// Series (each labelled with the pool, "namespace/name"; "" for a request that named no pool the
// directory has):
//   eoc_picks_total{pool,reason,code}       picks answered, by why (session-hit, session-new,
//                                           session-overflow, prefix, strategy, queued) or why not
//                                           (bad-request, unknown-pool, unknown-model, too-large,
//                                           queue-full, unavailable, not-published, timed-out,
//                                           shutting-down, waiting-full: --pick-max-waiting picks
//                                           waited in all pools; unauthenticated, forbidden,
//                                           access-unavailable: refused by access control, always
//                                           with pool ""; caller-full: CallerCaps), and the HTTP
//                                           status sent
//   eoc_pick_duration_seconds{pool}         from the request's dispatch to its answer (a waited
//                                           pick's wait included)
//   eoc_pick_queue_wait_seconds{pool}       how long picks that waited in the queue waited
//   eoc_pick_queue_depth{pool}              picks waiting now
//   eoc_sessions{pool}, eoc_session_evictions_total{pool}
//                                           this replica's session bindings, and those pushed out
//                                           by the bounds (maxSessions, --max-sessions-total)
//   eoc_prefix_index_blocks{pool}           prefix blocks this replica's index holds
// and, from the pick listener itself (PickConnectionMetrics):
//   eoc_pick_connections                    connections open now
//   eoc_pick_connections_evicted_total      connections closed at --pick-max-connections to
//                                           admit a new one (the longest idle or stalled)
// Bounded: at most kMaxPoolSeries pools per thread; picks of further pools count under pool "".
#pragma once

#include <prometheus/metric_family.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/text.h"
#include "routing/pool_directory.h"

namespace eoc::server {

class HttpServer;

class PickMetrics {
 public:
  enum class Outcome : std::uint8_t {
    kSessionHit,
    kSessionNew,
    kSessionOverflow,
    kPrefix,
    kStrategy,
    kQueued,
    kBadRequest,
    kUnknownPool,
    kUnknownModel,
    kTooLarge,
    kQueueFull,
    kUnavailable,
    kNotPublished,
    kTimedOut,
    kShuttingDown,
    kWaitingFull,        // --pick-max-waiting picks waited in all pools together
    kUnauthenticated,    // no credentials, or ones Kubernetes did not accept (401)
    kForbidden,          // the caller may not pick in the pool's namespace (403)
    kAccessUnavailable,  // no review could be had (503)
    kCallerFull,  // the caller, or its end user, is at a cap: picks waiting or KV reserved (429)
  };
  static constexpr std::size_t kOutcomes = 20;
  // The label `reason` for an outcome: "session-hit", ..., "caller-full".
  static std::string_view ReasonOf(Outcome outcome);

  static constexpr std::size_t kMaxPoolSeries = routing::PoolDirectory::kMaxPools;

  PickMetrics();
  ~PickMetrics();
  PickMetrics(const PickMetrics&) = delete;
  PickMetrics& operator=(const PickMetrics&) = delete;
  PickMetrics(PickMetrics&&) = delete;
  PickMetrics& operator=(PickMetrics&&) = delete;

  // One pick answered with HTTP status `code`, `took` after its dispatch. Lock-free after this
  // thread's first pick for the pool.
  void Record(std::string_view pool, Outcome outcome, int code, std::chrono::nanoseconds took);
  // A pick that waited in the queue for `waited` before its answer (picked or not).
  void RecordWait(std::string_view pool, std::chrono::nanoseconds waited);

  // Every thread's counts merged, and the pools' figures from `pools` (null: none).
  std::vector<prometheus::MetricFamily> Collect(const routing::PoolDirectory* pools) const;

  // The buckets (upper bounds, seconds) of both histograms.
  static const std::vector<double>& Buckets();

 private:
  struct Histogram;
  struct PoolCells;
  struct ThreadCells;
  ThreadCells& Mine();
  PoolCells& CellsFor(std::string_view pool);

  const std::uint64_t id_;  // tells this object's thread cells from another's
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<ThreadCells>> threads_;  // guarded by mu_
};

// The pick listener's connection series (see the top of this file), read from `server` now.
std::vector<prometheus::MetricFamily> PickConnectionMetrics(const HttpServer& server);

}  // namespace eoc::server
