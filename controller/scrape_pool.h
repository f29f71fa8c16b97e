// What the scrape loop scrapes in one pool: the pool's engine and metrics spec and its workers'
// metrics endpoints, made from the same members the reconciler publishes (workers.h); and the
// interface through which the reconciler hands them over (ScrapePools), so that it never waits on
// a scrape.
//
//   ScrapePool pool = ScrapePoolOf(inference_pool, members, readings.intensity, exporters);
//   pool.targets[0].address     // "10.0.3.7:9090": the pod IP and spec.metrics.port
//   scrape_pools.SetPool(std::move(pool));   // each reconcile of a valid pool; cheap if unchanged
//   scrape_pools.RemovePool("prod/chat");    // the pool is gone
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/inference_pool.h"
#include "controller/workers.h"
#include "kube/pod_view.h"
#include "routing/ids.h"
#include "routing/worker.h"
#include "signals/engine_metrics.h"

namespace eoc::controller {

// One worker's metrics endpoint.
struct ScrapeTarget {
  routing::WorkerKey key = 0;        // the routing engine's key of the worker (WorkerKeyOf(pod))
  std::string pod;                   // "namespace/name"
  std::string address;               // "podIP:metrics.port" (IPv6 in brackets)
  std::int32_t max_concurrency = 0;  // the worker's, for its busyness gauge (0: unknown)
  EnergyProfile profile;             // the worker's (the spec's for its accelerator): bounds the
                                     // slope of its measured watts
  // Its zone's grid intensity, gCO2e/kWh (spec.carbon.static by the worker's zone; 0: unknown),
  // for its grams-per-token gauge.
  double grid_g_per_kwh = 0;
  // The pod ("namespace/name") of the energy exporter on its node, one of ScrapePool::exporters,
  // whose page gives its watts when its own page carries none; "" for none.
  std::string exporter;

  bool operator==(const ScrapeTarget&) const = default;
};

// A node's energy exporter (a dcgm-exporter or Kepler DaemonSet pod): scraped once a round, for
// every worker of the pool on its node.
struct ExporterTarget {
  std::string pod;      // "namespace/name"
  std::string address;  // "podIP:port"

  bool operator==(const ExporterTarget&) const = default;
};

struct ScrapePool {
  std::string key;  // "namespace/name"
  api::Engine engine = api::Engine::kVllm;
  signals::GenericMetricNames generic_names;  // engine generic: spec.metrics.names
  std::string path = "/metrics";
  std::chrono::seconds interval{5};
  std::chrono::seconds timeout{2};
  api::MetricsAccess access = api::MetricsAccess::kDirect;
  // spec.energy.source: which exporters' series are read from the workers' own pages (none for
  // Static).
  api::EnergySource energy_source = api::EnergySource::kAuto;
  std::vector<ScrapeTarget> targets;  // sorted by pod
  // The exporters the targets name, sorted by pod, and the path of their pages.
  std::vector<ExporterTarget> exporters;
  std::string exporter_path = "/metrics";

  bool operator==(const ScrapePool&) const = default;
};

// A pool's energy exporters (spec.energy.exporter's DaemonSet pods): the one on each node, and
// the path of their pages.
struct NodeExporters {
  std::map<std::string, ExporterTarget> by_node;
  std::string path = "/metrics";

  bool operator==(const NodeExporters&) const = default;
};

// The exporter on each node among `pods` (those the exporter's namespace and selector give),
// each at its pod IP and `port`: only serving pods (IsServing) on a node count, and of two on one
// node (a rolling update) the first by name.
NodeExporters ExportersByNode(const std::vector<std::shared_ptr<const kube::PodView>>& pods,
                              std::int32_t port, std::string path);

// The pool's scrape targets: each worker at its pod IP (the host of its address) and
// spec.metrics.port, with spec.metrics' path, interval, timeout, access and (engine generic)
// names, spec.energy.source, each worker's zone's intensity in `grid_g_per_kwh` (zone ->
// gCO2e/kWh, what the pool's carbon source gives now), and the exporter on each worker's node
// (members.notes[i].node) among `exporters` (none under spec.energy.source Static); `exporters`
// lists just the ones some target names.
ScrapePool ScrapePoolOf(const api::InferencePool& pool, const PoolMembers& members,
                        const std::map<std::string, double>& grid_g_per_kwh,
                        const NodeExporters& exporters);

// The engine map that reads a pool's pages.
signals::EngineMap EngineMapOf(api::Engine engine, const signals::GenericMetricNames& generic);

// The good scrapes in a row after a failed one before a worker counts as steady again.
inline constexpr std::uint32_t kSteadyScrapes = 3;

// A pool's scrapes as the loop last saw them (the reconciler's MetricsAvailable reads ok and
// total).
struct ScrapeSummary {
  std::size_t ok = 0;  // workers whose last scrape was good (within its last interval)
  // Of those, the workers that failed within their last kSteadyScrapes scrapes: a worker that
  // flaps between good and failed scrapes stays here rather than move the pool's
  // MetricsAvailable reason back and forth.
  std::size_t recovering = 0;
  std::size_t total = 0;      // workers
  std::uint64_t rounds = 0;   // rounds started
  std::uint64_t scrapes = 0;  // scrapes finished (good or not)

  bool operator==(const ScrapeSummary&) const = default;
};

// Where the reconciler hands each valid pool's targets. Implementations must not block (no I/O,
// no waiting on a scrape). Thread-safe.
class ScrapePools {
 public:
  virtual ~ScrapePools() = default;
  // A pool's current targets and settings (new, changed or the same).
  virtual void SetPool(ScrapePool pool) = 0;
  // The pool is gone: its workers' state and series go too.
  virtual void RemovePool(const std::string& key) = 0;
  // The pool's summary; nullopt for a pool not (yet) scraped.
  virtual std::optional<ScrapeSummary> Summary(const std::string& key) const = 0;
};

}  // namespace eoc::controller
