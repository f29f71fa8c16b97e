// The status the leader publishes for a pool, computed from what the reconciler knows: the spec's
// validity, the pool's workers and the status already on the server. Pure, for unit tests.
//
//   api::InferencePoolStatus next = DesiredStatus(pool, workers, FormatRfc3339(now));
//   if (next != pool.status) client.Update(..., "status");
#pragma once

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
inline constexpr const char* kAutoscalingDisabled = "AutoscalingDisabled";
inline constexpr const char* kAutoscalerNotRunning = "AutoscalerNotRunning";
}  // namespace reasons

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
// routing table (its workers keep serving) and says why it is not Ready.
api::InferencePoolStatus DesiredStatus(const api::InferencePool& pool,
                                       const std::vector<routing::Worker>& workers,
                                       const std::string& now);

// "spec.targetPort: ...; spec.selector: ..." (the first few errors, and how many more).
std::string DescribeErrors(const std::vector<api::FieldError>& errors);

}  // namespace eoc::controller
