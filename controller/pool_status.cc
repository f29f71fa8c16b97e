#include "controller/pool_status.h"

#include <algorithm>

namespace eoc::controller {
namespace {

// Errors named in one condition message; the rest are counted.
constexpr std::size_t kErrorsInMessage = 5;

api::Condition Make(std::string_view type, const char* status, const char* reason,
                    std::string message, std::int64_t generation) {
  return {.type = std::string(type),
          .status = status,
          .reason = reason,
          .message = std::move(message),
          .observed_generation = generation};
}

// The first kErrorsInMessage of `items`, each as `text` writes it, `separator` between them, then
// how many more: "a, b, c, d, e (and 3 more)".
template <class Item, class Text>
std::string FirstFew(const std::vector<Item>& items, std::string_view separator, Text text) {
  std::string out;
  const std::size_t shown = std::min(items.size(), kErrorsInMessage);
  for (std::size_t i = 0; i < shown; ++i) {
    if (i > 0) out.append(separator);
    out.append(text(items[i]));
  }
  if (items.size() > shown) {
    out.append(" (and ").append(std::to_string(items.size() - shown)).append(" more)");
  }
  return out;
}

const std::string& Itself(const std::string& s) { return s; }

// "; no spec.energy.profiles entry matches accelerator A, B (and 3 more): ..."; "" for none.
std::string MissingProfilesNote(const std::vector<std::string>& accelerators) {
  if (accelerators.empty()) return "";
  return "; no spec.energy.profiles entry matches accelerator " +
         FirstFew(accelerators, ", ", Itself) + ": their workers are weighed by busyness alone";
}

// "zone a: why; zone b: why (and 3 more)".
std::string ZoneErrors(const std::vector<signals::ZoneIntensityError>& errors) {
  return FirstFew(errors, "; ", [](const signals::ZoneIntensityError& e) {
    return "zone " + e.zone + ": " + e.error;
  });
}

// "; spec.energy.exporter is not watched: ..."; "" when it is.
std::string ExporterRefusedNote(const std::string& refused) {
  if (refused.empty()) return "";
  return "; spec.energy.exporter is not watched: " + refused;
}

// "; the prefix index is clamped to its share ..."; "" when maxBlocks is within the share, or
// the pool has no index.
std::string PrefixClampedNote(const api::PrefixAffinitySpec& spec,
                              const std::optional<std::size_t>& share) {
  if (!share || spec.max_blocks <= 0 || static_cast<std::size_t>(spec.max_blocks) <= *share) {
    return "";
  }
  return "; the prefix index is clamped to its share of --max-prefix-blocks-total, " +
         std::to_string(*share) +
         " blocks (spec.routing.prefixAffinity.maxBlocks: " + std::to_string(spec.max_blocks) +
         "): it holds more only while other pools leave the budget unused";
}

std::string WorkerCount(std::size_t n) {
  return std::to_string(n) + (n == 1 ? " worker is ready" : " workers are ready");
}

}  // namespace

std::string DescribeErrors(const std::vector<api::FieldError>& errors) {
  return FirstFew(errors, "; ", [](const api::FieldError& e) { return e.ToString(); });
}

api::Condition CarbonIntensityCondition(const carbon::ZoneReadings& readings, std::size_t workers,
                                        std::size_t zoned, const std::string& zone_label,
                                        std::int64_t generation) {
  const auto type = api::kConditionCarbonIntensityAvailable;
  if (!readings.refused.empty()) {
    return Make(type, "False", reasons::kNamespaceLimit,
                "the carbon source is not read: " + readings.refused, generation);
  }
  if (workers == 0) {
    return Make(type, "Unknown", reasons::kNoReadyWorkers, "the pool has no worker", generation);
  }
  if (zoned == 0) {
    return Make(type, "Unknown", reasons::kNoZones,
                "no worker's node has the label " + zone_label + " (spec.carbon.zoneLabel)",
                generation);
  }
  if (!readings.errors.empty()) {
    return Make(type, "False", reasons::kZonesUnknown,
                ZoneErrors(readings.errors) +
                    "; CarbonWeighted gives those zones' workers the median of the known zones",
                generation);
  }
  if (!readings.pending.empty()) {
    return Make(type, "Unknown", reasons::kZonesPending,
                "waiting for the source's first answer for zone " +
                    FirstFew(readings.pending, ", ", Itself),
                generation);
  }
  if (!readings.held.empty()) {
    return Make(type, "True", reasons::kLastValuesHeld,
                ZoneErrors(readings.held) +
                    "; the last good value is used until spec.carbon.maxStaleSeconds have passed",
                generation);
  }
  return Make(type, "True", reasons::kAllZonesKnown, "every worker's zone has an intensity",
              generation);
}

api::Condition MetricsAvailableCondition(const ScrapeSummary& summary, std::int64_t generation) {
  const auto type = api::kConditionMetricsAvailable;
  const std::size_t available = std::min(summary.ok, summary.total);
  const std::size_t unavailable = summary.total - available;
  if (available == 0 && unavailable == 0) {
    return Make(type, "Unknown", reasons::kNoReadyWorkers,
                "the pool has no worker to read metrics from", generation);
  }
  if (available == 0) {
    return Make(type, "False", reasons::kNoMetricsAvailable,
                "no worker's metrics could be read; see the eoc_worker_scrape_* metrics",
                generation);
  }
  if (unavailable > 0 || summary.recovering > 0) {
    return Make(type, "True", reasons::kSomeMetricsUnavailable,
                "some workers' metrics could not be read; see the eoc_worker_scrape_* metrics",
                generation);
  }
  return Make(type, "True", reasons::kAllMetricsAvailable, "all workers' metrics were read",
              generation);
}

std::span<const routing::Worker> PublishedWorkers(const std::vector<routing::Worker>& workers) {
  return std::span(workers).first(std::min(workers.size(), api::kMaxRoutingTableWorkers));
}

api::RoutingTable BuildRoutingTable(const api::InferencePoolSpec& spec,
                                    const std::vector<routing::Worker>& workers,
                                    const std::optional<api::RoutingTable>& previous) {
  api::RoutingTable table;
  table.strategy = std::string(StrategyName(spec.routing.strategy));
  const auto published = PublishedWorkers(workers);
  table.workers.reserve(published.size());
  for (const routing::Worker& w : published) {
    table.workers.push_back({.pod = std::string(PodName(w)),
                             .address = w.address,
                             .weight = w.weight,
                             .draining = w.draining,
                             .models = w.capability.models});
  }
  if (!previous) {
    table.generation = 1;
  } else {
    const bool same = previous->strategy == table.strategy && previous->workers == table.workers;
    table.generation = same ? previous->generation : previous->generation + 1;
  }
  return table;
}

api::InferencePoolStatus DesiredStatus(const api::InferencePool& pool,
                                       const std::vector<routing::Worker>& workers,
                                       const std::string& now, const StatusInputs& inputs) {
  api::InferencePoolStatus next = pool.status;
  const std::int64_t gen = pool.generation;
  next.observed_generation = gen;
  auto& conditions = next.conditions;
  if (!pool.errors.empty()) {
    const std::string why = DescribeErrors(pool.errors);
    api::SetCondition(
        conditions, Make(api::kConditionSpecValid, "False", reasons::kSpecInvalid, why, gen), now);
    api::SetCondition(conditions,
                      Make(api::kConditionReady, "False", reasons::kSpecInvalid,
                           "the spec is invalid: " + why, gen),
                      now);
    return next;
  }
  api::SetCondition(
      conditions,
      Make(api::kConditionSpecValid, "True", reasons::kSpecValid, "the spec is valid", gen), now);
  next.ready_workers = static_cast<std::int32_t>(workers.size());
  if (!inputs.keep_table || !pool.status.routing) {
    next.routing = BuildRoutingTable(pool.spec, workers, pool.status.routing);
  }
  const std::string notes =
      MissingProfilesNote(inputs.missing_profiles) + ExporterRefusedNote(inputs.exporter_refused) +
      PrefixClampedNote(pool.spec.routing.prefix_affinity, inputs.prefix_share);
  if (workers.empty()) {
    api::SetCondition(conditions,
                      Make(api::kConditionReady, "False", reasons::kNoReadyWorkers,
                           "no pod matching the selector is ready", gen),
                      now);
  } else if (workers.size() > api::kMaxRoutingTableWorkers) {
    api::SetCondition(
        conditions,
        Make(api::kConditionReady, "True", reasons::kTableTruncated,
             WorkerCount(workers.size()) + "; the routing table lists the first " +
                 std::to_string(api::kMaxRoutingTableWorkers) + " by pod name" + notes,
             gen),
        now);
  } else if (!notes.empty()) {
    const char* reason = !inputs.missing_profiles.empty()   ? reasons::kEnergyProfileMissing
                         : inputs.exporter_not_allowed      ? reasons::kExporterNamespaceNotAllowed
                         : !inputs.exporter_refused.empty() ? reasons::kNamespaceLimit
                                                            : reasons::kPrefixIndexClamped;
    api::SetCondition(
        conditions,
        Make(api::kConditionReady, "True", reason, WorkerCount(workers.size()) + notes, gen), now);
  } else {
    api::SetCondition(conditions,
                      Make(api::kConditionReady, "True", reasons::kWorkersReady,
                           WorkerCount(workers.size()), gen),
                      now);
  }
  api::SetCondition(conditions,
                    inputs.scrapes
                        ? MetricsAvailableCondition(*inputs.scrapes, gen)
                        : Make(api::kConditionMetricsAvailable, "Unknown", reasons::kNotScraped,
                               "no scrape of the pool's workers has finished yet", gen),
                    now);
  if (inputs.carbon) {
    const auto zoned = static_cast<std::size_t>(std::count_if(
        workers.begin(), workers.end(), [](const auto& w) { return !w.capability.zone.empty(); }));
    api::SetCondition(conditions,
                      CarbonIntensityCondition(*inputs.carbon, workers.size(), zoned,
                                               pool.spec.carbon.zone_label, gen),
                      now);
  } else {
    std::erase_if(conditions, [](const api::Condition& c) {
      return c.type == api::kConditionCarbonIntensityAvailable;
    });
  }
  if (!pool.spec.autoscaling.enabled) {
    api::SetCondition(conditions,
                      Make(api::kConditionScalingActive, "False", reasons::kAutoscalingDisabled,
                           "spec.autoscaling is not enabled", gen),
                      now);
  } else if (inputs.scaling) {
    api::Condition c = inputs.scaling->condition;
    c.observed_generation = gen;
    api::SetCondition(conditions, std::move(c), now);
    if (inputs.scaling->desired_replicas) next.desired_replicas = inputs.scaling->desired_replicas;
    if (!inputs.scaling->last_scale_time.empty()) {
      next.last_scale_time = inputs.scaling->last_scale_time;
    }
  } else {
    api::SetCondition(conditions,
                      Make(api::kConditionScalingActive, "Unknown", reasons::kPending,
                           "the autoscaler has not decided for this pool yet", gen),
                      now);
  }
  return next;
}

}  // namespace eoc::controller
