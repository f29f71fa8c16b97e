// The InferencePool reconcile: turns a pool into its set of workers and (leader only) publishes
// its status and Events. It reads the caches through PoolStore, writes through PoolClient and
// reports through kube::EventSink, so unit tests run it against fakes of the three; the
// PoolController gives it the informers, the real client and the EventRecorder, and a
// kube::Controller runs it.
//
//   PoolReconciler reconciler(store, status_client, recorder, {.fence = fence}, clock, &metrics);
//   reconciler.SetLeading(true);
//   auto r = reconciler.Reconcile("prod/chat");   // a kube::Result<kube::ReconcileResult>
//   auto workers = reconciler.Workers("prod/chat");
//
// Status is written only when it changes, at most once per min_publish_interval per pool (a
// change inside it asks to be reconciled again when the interval is over), retrying on a conflict
// with a fresh read, and only while the write fence says the Lease is held.
//
// The routing table (leader only): each reconcile of a valid pool weighs its workers from their
// last scraped loads in the pool's routing state (WeighWorkers, with a WeightKeeper per pool kept
// here), and DecideTablePublish says whether that candidate table is published now (its weights
// and a new generation), later (requeue_after: the time it may be) or not at all (the published
// table stays as it is, so an unchanged status is not rewritten). A pool with workers is
// reconciled again at least every spec.metrics.intervalSeconds, so weights follow the loads.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "api/inference_pool.h"
#include "common/clock.h"
#include "controller/carbon/grid_intensities.h"
#include "controller/exporter_pods.h"
#include "controller/pool_key.h"
#include "controller/pool_metrics.h"
#include "controller/pool_status.h"
#include "controller/scaling_report.h"
#include "controller/scrape_pool.h"
#include "controller/workers.h"
#include "kube/client.h"
#include "kube/controller.h"
#include "kube/event_sink.h"
#include "kube/node_view.h"
#include "kube/pod_view.h"
#include "kube/write_fence.h"
#include "routing/pool_directory.h"
#include "routing/weight_keeper.h"
#include "server/pick_pools.h"

namespace eoc::telemetry {
class Logger;
}  // namespace eoc::telemetry

namespace eoc::controller {

// The log of the InferencePool controller and its reconciler ("inferencepool").
const telemetry::Logger& PoolLog();

inline const kube::ResourceRef kInferencePools{std::string(api::kGroup), std::string(api::kVersion),
                                               std::string(api::kPlural)};

// What the pool informer keeps of an InferencePool.
struct PoolObject {
  api::InferencePool pool;
  std::string resource_version;
  // Its eoc.dev/demand-<replica> annotations: the picks waiting on each replica (demand.h).
  std::map<std::string, std::string> demand;
};
PoolObject ToPoolObject(const nlohmann::json& object);

// "namespace/name": the pool's key in the caches and the work queue.
std::string PoolKey(const api::InferencePool& pool);
// The pool as its Events name it.
kube::ObjectReference PoolReference(const api::InferencePool& pool);

// The reconcile's reads of the informer caches. Thread-safe.
class PoolStore {
 public:
  virtual ~PoolStore() = default;
  // The pool of `key` ("namespace/name"); nullptr when not (or no longer) there.
  virtual std::shared_ptr<const PoolObject> GetPool(const std::string& key) const = 0;
  virtual std::vector<std::shared_ptr<const PoolObject>> ListPools() const = 0;
  // Every watched pod, of any pool or none.
  virtual std::vector<std::shared_ptr<const kube::PodView>> ListPods() const = 0;
  // nullptr when not (yet) known.
  virtual std::shared_ptr<const kube::NodeView> GetNode(const std::string& name) const = 0;
};

// The reconcile's calls to the API server. Thread-safe.
class PoolClient {
 public:
  virtual ~PoolClient() = default;
  // PUT the status subresource of `pool` (an InferencePool with metadata.resourceVersion).
  virtual kube::Result<nlohmann::json> UpdateStatus(const nlohmann::json& pool) = 0;
  // A fresh read, after a conflict.
  virtual kube::Result<nlohmann::json> GetPool(const std::string& ns, const std::string& name) = 0;
};

// PoolClient over the REST client.
class KubePoolClient final : public PoolClient {
 public:
  explicit KubePoolClient(kube::Client& client) : client_(client) {}
  kube::Result<nlohmann::json> UpdateStatus(const nlohmann::json& pool) override;
  kube::Result<nlohmann::json> GetPool(const std::string& ns, const std::string& name) override;

 private:
  kube::Client& client_;
};

struct PoolReconcilerOptions {
  // A pool's status is written at most this often; a change inside it waits for the rest.
  std::chrono::milliseconds min_publish_interval{1000};
  // Attempts to write a status that meets a conflict, each after a fresh read.
  int max_conflict_attempts = 5;
  // Asked immediately before each status write: the Lease must be held at that moment, not only
  // when the reconcile began (the recorder has a fence of its own for Events). Empty: always.
  kube::WriteFence fence;
  // Where the pick path finds each valid pool's routing state (written by every replica, as
  // pools come, go, or change); null: none. Must outlive the reconciler.
  routing::PoolDirectory* directory = nullptr;
  // The pick endpoint's table: each valid pool's state (the directory's) and its HTTP settings,
  // written with the directory; null: none. Must outlive the reconciler.
  server::PickPools* picks = nullptr;
  // Where each valid pool's scrape targets go (the scrape loop, every replica), whenever the pool
  // is reconciled; null: none. Must outlive the reconciler; never blocks.
  // Its Summary(key) is the MetricsAvailable condition (leader).
  ScrapePools* scrape = nullptr;
  // The grid intensities of each valid pool's zones (every replica: the weights and the gCO2e
  // gauges), tracked on every reconcile and forgotten with the pool; never blocks. Null:
  // spec.carbon.static only (carbon::StaticReadings). Must outlive the reconciler.
  carbon::GridSource* grid = nullptr;
  // The energy exporter pods of each valid pool's spec.energy.exporter (every replica: each
  // worker's node exporter in its scrape targets), tracked on every reconcile and forgotten with
  // the pool; never blocks. Null: none (each worker's watts come from its own page). Must outlive
  // the reconciler.
  ExporterSource* exporters = nullptr;
  // The autoscaler (every replica: the pools to scale are tracked on each reconcile; leader: its
  // report is the status's ScalingActive, desiredReplicas and lastScaleTime, and the workers a
  // scale-in drains are published as draining). Null: none (the condition then says the
  // autoscaler is not running). Must outlive the reconciler.
  ScalingSource* scaling = nullptr;
};

class PoolReconciler final : public kube::Reconciler {
 public:
  // `store`, `client`, `events` and `metrics` (which may be null) must outlive the reconciler.
  PoolReconciler(const PoolStore& store, PoolClient& client, kube::EventSink& events,
                 PoolReconcilerOptions options, const Clock& clock, PoolMetrics* metrics);

  kube::Result<kube::ReconcileResult> Reconcile(const std::string& key) override;

  // Whether this replica writes status and Events; returns whether it did until now.
  bool SetLeading(bool leading) { return leading_.exchange(leading); }

  // A pool's current workers, sorted by pod name; nullptr for a pool not known or not yet
  // reconciled.
  std::shared_ptr<const PoolMembers> Workers(const std::string& pool_key) const;
  // The pools that have a worker on `node`.
  std::vector<std::string> PoolsOnNode(const std::string& node) const;

 private:
  struct PoolRecord {
    std::shared_ptr<const PoolMembers> workers;
    Clock::TimePoint last_write;
    std::unordered_map<std::string, std::string> annotation_errors;  // reported: pod -> error
    std::optional<routing::WeightKeeper> keeper;  // the leader's, from its first weighing
    // When this replica last wrote a changed routing table; none: never (then a material
    // difference is published at once).
    std::optional<Clock::TimePoint> table_written;
  };

  void Forget(const std::string& key);
  // Writes `object`'s status if it differs; on a conflict reads the pool again and recomputes.
  // `workers` carry the candidate weights (WeighWorkers); the publish decision picks the table.
  kube::Result<kube::ReconcileResult> Publish(const PoolObject& object,
                                              const std::vector<routing::Worker>& workers,
                                              const StatusInputs& inputs);
  // The intensities of the zones of the pool's workers, from options_.grid (or the static map).
  carbon::ZoneReadings ReadGrid(const std::string& key, const api::InferencePool& pool,
                                const std::vector<routing::Worker>& workers);
  // The exporter on each node for the pool's spec.energy.exporter, from options_.exporters; why
  // it is not watched in refusal->refused and ->not_allowed (its pods are left out).
  NodeExporters ReadExporters(const std::string& key, const api::InferencePool& pool,
                              ExporterRead* refusal) const;
  // The pool's workers with the weights the leader would publish now.
  std::vector<routing::Worker> Weigh(const std::string& key, const api::InferencePool& pool,
                                     const std::vector<routing::Worker>& workers,
                                     const std::map<std::string, double>& grid_g_per_kwh);
  void StatusWritten(StatusWrite outcome);
  void RecordSpecEvents(const api::InferencePool& pool, const api::InferencePoolStatus& written);
  void RecordAnnotationErrors(const api::InferencePool& pool, const PoolMembers& members,
                              PoolRecord& record);

  const PoolStore& store_;
  PoolClient& client_;
  kube::EventSink& events_;
  const PoolReconcilerOptions options_;
  const Clock& clock_;
  PoolMetrics* const metrics_;
  std::atomic<bool> leading_{false};

  mutable std::mutex mu_;
  std::unordered_map<std::string, PoolRecord> records_;  // by pool key; guarded by mu_
};

}  // namespace eoc::controller
