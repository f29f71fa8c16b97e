// The status the leader publishes for a pool, computed from what the reconciler knows: the spec's
// validity, the pool's workers and the status already on the server. Pure, for unit tests.
//
//   api::InferencePoolStatus next = DesiredStatus(pool, workers, FormatRfc3339(now));
//   if (next != pool.status) client.Update(..., "status");
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "api/inference_pool.h"
#include "controller/workers.h"

namespace eoc::controller {

// Condition reasons, as `kubectl describe` shows them.
namespace reasons {
inline constexpr const char* kSpecValid = "Valid";
inline constexpr const char* kSpecInvalid = "InvalidSpec";
inline constexpr const char* kWorkersReady = "WorkersReady";
inline constexpr const char* kNoReadyWorkers = "NoReadyWorkers";
inline constexpr const char* kTableTruncated = "RoutingTableTruncated";
inline constexpr const char* kNotScraped = "NotScraped";
inline constexpr const char* kAllMetricsAvailable = "AllAvailable";
inline constexpr const char* kSomeMetricsUnavailable = "SomeUnavailable";
inline constexpr const char* kNoMetricsAvailable = "NoneAvailable";
inline constexpr const char* kAutoscalingDisabled = "AutoscalingDisabled";
inline constexpr const char* kAutoscalerNotRunning = "AutoscalerNotRunning";
}  // namespace reasons

// What the last scrape round found of a pool's workers: how many were scraped successfully in
// their last interval, and how many were not.
struct ScrapeSummary {
  std::size_t available = 0;
  std::size_t unavailable = 0;

  bool operator==(const ScrapeSummary&) const = default;
};

// The MetricsAvailable condition for `summary`:
//   every worker read          True     AllAvailable
//   some read, some not        True     SomeUnavailable
//   none read                  False    NoneAvailable
//   no worker at all           Unknown  NoReadyWorkers (nothing to read; Ready says the same)
// Its message names no count: while some workers fail, one more failing or recovering rewrites
// nothing; only a move between these four states changes the condition (the counts are in the
// eoc_worker_scrape_* metrics). lastTransitionTime moves with the status only (SetCondition), so
// AllAvailable and SomeUnavailable, both True, share it.
api::Condition MetricsAvailableCondition(const ScrapeSummary& summary, std::int64_t generation);

// The workers a routing table lists, and so the routing snapshot holds: the first
// api::kMaxRoutingTableWorkers of `workers` (sorted by pod name).
std::span<const routing::Worker> PublishedWorkers(const std::vector<routing::Worker>& workers);

// The routing table for PublishedWorkers(workers), each with its weight and draining, with the
// generation of `previous` when nothing in it changed, else the next one.
api::RoutingTable BuildRoutingTable(const api::InferencePoolSpec& spec,
                                    const std::vector<routing::Worker>& workers,
                                    const std::optional<api::RoutingTable>& previous);

// The whole status for `pool` as it should be now: conditions keep their transition times where
// their status did not change (`now` is RFC 3339). A pool with an invalid spec keeps its last
// routing table (its workers keep serving) and says why it is not Ready. MetricsAvailable is
// MetricsAvailableCondition(*scrapes), or Unknown/NotScraped while nothing scrapes the pool
// (`scrapes` empty).
api::InferencePoolStatus DesiredStatus(const api::InferencePool& pool,
                                       const std::vector<routing::Worker>& workers,
                                       const std::string& now,
                                       const std::optional<ScrapeSummary>& scrapes = std::nullopt);

// "spec.targetPort: ...; spec.selector: ..." (the first few errors, and how many more).
std::string DescribeErrors(const std::vector<api::FieldError>& errors);

}  // namespace eoc::controller
