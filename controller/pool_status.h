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
#include "controller/carbon/grid_intensities.h"
#include "controller/scaling_report.h"
#include "controller/scrape_pool.h"
#include "controller/workers.h"

namespace eoc::controller {

// Condition reasons, as `kubectl describe` shows them.
namespace reasons {
inline constexpr const char* kSpecValid = "Valid";
inline constexpr const char* kSpecInvalid = "InvalidSpec";
inline constexpr const char* kWorkersReady = "WorkersReady";
inline constexpr const char* kNoReadyWorkers = "NoReadyWorkers";
inline constexpr const char* kTableTruncated = "RoutingTableTruncated";
inline constexpr const char* kEnergyProfileMissing = "EnergyProfileMissing";
inline constexpr const char* kNotScraped = "NotScraped";
inline constexpr const char* kAllMetricsAvailable = "AllAvailable";
inline constexpr const char* kSomeMetricsUnavailable = "SomeUnavailable";
inline constexpr const char* kNoMetricsAvailable = "NoneAvailable";
inline constexpr const char* kAutoscalingDisabled = "AutoscalingDisabled";
inline constexpr const char* kAllZonesKnown = "AllZonesKnown";
inline constexpr const char* kLastValuesHeld = "LastValuesHeld";
inline constexpr const char* kZonesUnknown = "ZonesUnknown";
inline constexpr const char* kZonesPending = "Pending";
inline constexpr const char* kNoZones = "NoZones";
inline constexpr const char* kNamespaceLimit = "NamespaceLimit";
inline constexpr const char* kExporterNamespaceNotAllowed = "ExporterNamespaceNotAllowed";
inline constexpr const char* kPrefixIndexClamped = "PrefixIndexClamped";
}  // namespace reasons

// The MetricsAvailable condition for `summary`:
// (available: summary.ok; unavailable: the rest of summary.total)
//   every worker read, and
//   none failed lately         True     AllAvailable
//   some read, some not (or a
//   read one failed lately)    True     SomeUnavailable
//   none read                  False    NoneAvailable
//   no worker at all           Unknown  NoReadyWorkers (nothing to read; Ready says the same)
// Its message names no count: while some workers fail, one more failing or recovering rewrites
// nothing; only a move between these four states changes the condition (the counts are in the
// eoc_worker_scrape_* metrics). "Lately" is within its last kSteadyScrapes scrapes
// (summary.recovering), so a worker that fails every other scrape keeps the pool at
// SomeUnavailable instead of rewriting the condition each time it comes back. lastTransitionTime
// moves with the status only (SetCondition), so AllAvailable and SomeUnavailable, both True, share
// it.
api::Condition MetricsAvailableCondition(const ScrapeSummary& summary, std::int64_t generation);

// The CarbonIntensityAvailable condition of a pool with a carbon source, from what the source gave
// for its workers' zones (`workers` ready workers, `zoned` of them with a zone label):
//   every zone has a value, the source is well            True     AllZonesKnown
//   every zone has a value, some only the last good one
//   (the source fails, the hold has not run out)           True     LastValuesHeld
//   some zone has none (past the hold, or never read;
//   a ConfigMap or static map without the zone)            False    ZonesUnknown
//   no error, but some zone not yet answered               Unknown  Pending
//   no worker with a zone                                  Unknown  NoZones (or NoReadyWorkers)
//   the source is not read: its namespace is at a cap     False    NamespaceLimit (before all)
// The message names each such zone and its source's error (the first few, and how many more).
api::Condition CarbonIntensityCondition(const carbon::ZoneReadings& readings, std::size_t workers,
                                        std::size_t zoned, const std::string& zone_label,
                                        std::int64_t generation);

// The workers a routing table lists, and so the routing snapshot holds: the first
// api::kMaxRoutingTableWorkers of `workers` (sorted by pod name).
std::span<const routing::Worker> PublishedWorkers(const std::vector<routing::Worker>& workers);

// The routing table for PublishedWorkers(workers), each with its weight and draining, with the
// generation of `previous` when nothing in it changed, else the next one.
api::RoutingTable BuildRoutingTable(const api::InferencePoolSpec& spec,
                                    const std::vector<routing::Worker>& workers,
                                    const std::optional<api::RoutingTable>& previous);

// What the reconciler knows beside the pool and its workers.
struct StatusInputs {
  // What the scrape loop last saw of the pool; nullopt while nothing scrapes it.
  std::optional<ScrapeSummary> scrapes;
  // Keep the published table (pool.status.routing) as it is rather than build one from the
  // workers: the publish decision said "not yet" or "nothing material changed". Ignored while
  // nothing is published.
  bool keep_table = false;
  // The accelerators no spec.energy.profiles entry matches (MissingEnergyProfiles).
  std::vector<std::string> missing_profiles;
  // What the pool's carbon source gave for its workers' zones; nullopt without a source (then
  // the pool has no CarbonIntensityAvailable condition).
  std::optional<carbon::ZoneReadings> carbon;
  // Why spec.energy.exporter is not watched (ExporterRead::refused); empty when it is.
  std::string exporter_refused;
  // It is not watched because its namespace is not allowed (ExporterRead::not_allowed).
  bool exporter_not_allowed = false;
  // The guaranteed share of the pool's prefix index in the global budget
  // (routing::PrefixIndex::Share); nullopt while the pool has none (prefix affinity off).
  std::optional<std::size_t> prefix_share;
  // What the autoscaler reports of the pool (ScalingActive, desiredReplicas, lastScaleTime);
  // nullopt while it has not ticked for the pool (or does not run).
  std::optional<ScalingReport> scaling;
};

// The whole status for `pool` as it should be now: conditions keep their transition times where
// their status did not change (`now` is RFC 3339). A pool with an invalid spec keeps its last
// routing table (its workers keep serving) and says why it is not Ready. The table is
// BuildRoutingTable(workers) unless `inputs.keep_table`. MetricsAvailable is
// MetricsAvailableCondition(*inputs.scrapes), or Unknown/NotScraped while nothing scrapes the
// pool. Workers without an energy profile under an energy strategy leave Ready True with the
// reason EnergyProfileMissing (RoutingTableTruncated wins the reason; the message says both),
// naming the first few accelerators and how many more. An exporter not watched
// (inputs.exporter_refused) leaves Ready True too, with the reason ExporterNamespaceNotAllowed
// (inputs.exporter_not_allowed) or NamespaceLimit when no other reason above applies, and its
// message says why. So does a prefix index clamped to its share of
// the global budget (spec maxBlocks over inputs.prefix_share): PrefixIndexClamped, last, with
// both numbers.
api::InferencePoolStatus DesiredStatus(const api::InferencePool& pool,
                                       const std::vector<routing::Worker>& workers,
                                       const std::string& now, const StatusInputs& inputs = {});

// "spec.targetPort: ...; spec.selector: ..." (the first few errors, and how many more).
std::string DescribeErrors(const std::vector<api::FieldError>& errors);

}  // namespace eoc::controller
