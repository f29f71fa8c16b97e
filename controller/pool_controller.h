// The InferencePool controller: informers over InferencePools, worker Pods and Nodes, the event
// mapping that turns their changes into pool keys, and a kube::Controller that runs the
// PoolReconciler (controller/pool_reconciler.h) over those keys: each pool is reconciled by one
// worker at a time, retried with backoff after an error, and again when the reconciler asks.
//
//   PoolController pools(*client, recorder, {.namespaces = {"prod"}}, RealClock(),
//                        &kube_metrics, &pool_metrics);
//   pools.Start();                        // informers now, reconcile workers once synced
//   pools.SetLeading(true);               // without leader election: always
//   auto workers = pools.Workers("prod/chat");
//   pools.Stop();
//
// Membership is kept by every replica (each will serve picks); status and Events are written by
// the leader only, through the status subresource, only when they change, at most once a second
// per pool, retrying on a conflict with a fresh read.
#pragma once

#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "controller/carbon/grid_intensities.h"
#include "controller/exporter_pods.h"
#include "controller/kube_metrics.h"
#include "controller/pool_metrics.h"
#include "controller/pool_reconciler.h"
#include "controller/pool_scaler.h"
#include "controller/workers.h"
#include "kube/client.h"
#include "kube/controller.h"
#include "kube/event_recorder.h"
#include "kube/informer.h"
#include "kube/node_view.h"
#include "kube/pod_view.h"

namespace eoc::controller {

struct PoolControllerOptions {
  // Namespaces whose pools and pods are watched; empty: all.
  std::vector<std::string> namespaces;
  // Reconcile workers; 0 runs none (a benchmark or test then calls Reconcile() itself).
  int workers = 2;
  // The status writes: how often, how many conflicts, and the write fence.
  PoolReconcilerOptions reconcile;
  // An informer failing this long without a success is stale (logged, in a metric and /readyz).
  std::chrono::milliseconds stale_after{std::chrono::seconds(60)};
  // The live carbon sources (spec.carbon.configMapRef watches, carbonAwareSdk polls), which the
  // controller runs for its reconciler (reconcile.grid is set to them).
  carbon::GridIntensitiesOptions carbon;
  // Distinct energy exporters (spec.energy.exporter) the pools of one namespace may name.
  std::size_t max_exporter_selectors_per_namespace = 4;
  // Namespaces besides its own whose exporter pods a pool may read (--exporter-namespaces).
  std::set<std::string> exporter_namespaces;
  // The autoscaler: the client it reads and writes /scale through (null: no autoscaler) and its
  // options (its fence and directory are reconcile's, its `changed` reconciles the pool); its
  // metrics may be null. Both must outlive the controller.
  ScaleClient* scales = nullptr;
  PoolScalerOptions scaler;
  ScalerMetrics* scaler_metrics = nullptr;
};

// Also the reconciler's PoolStore: reads across the informers of every watched namespace.
class PoolController final : public PoolStore {
 public:
  // `kube_metrics` and `pool_metrics` may be null (no metrics); `recorder` and `client` must
  // outlive the controller.
  PoolController(kube::Client& client, kube::EventRecorder& recorder, PoolControllerOptions options,
                 const Clock& clock, KubeMetrics* kube_metrics, PoolMetrics* pool_metrics);
  ~PoolController() override;  // Stop()s
  PoolController(const PoolController&) = delete;
  PoolController& operator=(const PoolController&) = delete;
  PoolController(PoolController&&) = delete;
  PoolController& operator=(PoolController&&) = delete;

  // Starts the informers, and the reconcile workers, which begin once every cache has synced.
  void Start();
  void Stop();
  // Every informer has its first list; and each kind on its own, for /readyz to name.
  bool HasSynced() const;
  bool PoolsSynced() const;
  bool PodsSynced() const;
  bool NodesSynced() const;
  // No informer of the kind has failed to list and watch for longer than stale_after.
  bool PoolsFresh() const;
  bool PodsFresh() const;
  bool NodesFresh() const;

  // Whether this replica writes status and Events, and scales. Becoming the leader reconciles
  // every pool.
  void SetLeading(bool leading);
  // The autoscaler; null without options.scales.
  PoolScaler* scaler() { return scaler_.get(); }

  // A pool's current workers ("namespace/name"), sorted by pod name; nullptr for a pool that is
  // not known or not yet reconciled.
  std::shared_ptr<const PoolMembers> Workers(const std::string& pool_key) const {
    return reconciler_.Workers(pool_key);
  }

  // Reconciles one pool now, on the calling thread, without the queue's retry rules (for tests
  // and benchmarks that run no workers).
  kube::Result<kube::ReconcileResult> Reconcile(const std::string& key) {
    return reconciler_.Reconcile(key);
  }

  // PoolStore.
  std::shared_ptr<const PoolObject> GetPool(const std::string& key) const override;
  std::vector<std::shared_ptr<const PoolObject>> ListPools() const override;
  std::vector<std::shared_ptr<const kube::PodView>> ListPods() const override;
  std::shared_ptr<const kube::NodeView> GetNode(const std::string& name) const override;

 private:
  void AddHandlers();
  void EnqueuePoolsSelecting(const kube::PodView& pod);
  void EnqueuePoolsOnNode(const std::string& node);
  void EnqueueAll();

  const PoolControllerOptions options_;
  // Logs the ConfigMap watches' failed lists and watches, then counts them (before grid_).
  std::unique_ptr<kube::ReflectorMetrics> config_map_hooks_;
  std::unique_ptr<MetricsFetcher> sdk_fetcher_;
  std::unique_ptr<carbon::GridIntensities> grid_;  // its `changed` adds to controller_'s queue
  // Logs the exporter pod watches' failed lists and watches, then counts them (before
  // exporters_).
  std::unique_ptr<kube::ReflectorMetrics> exporter_hooks_;
  std::unique_ptr<ExporterPods> exporters_;  // its `changed` adds to controller_'s queue
  KubePoolClient status_client_;
  // Null without options.scales. Before the reconciler, which reads its reports; stopped first.
  std::unique_ptr<PoolScaler> scaler_;
  PoolReconciler reconciler_;
  // Reflector hooks that log failed lists and watches, then count them; before the informers.
  std::vector<std::unique_ptr<kube::ReflectorMetrics>> reflector_hooks_;
  std::vector<std::unique_ptr<kube::Informer<PoolObject>>> pools_;
  std::vector<std::unique_ptr<kube::Informer<kube::PodView>>> pods_;
  std::unique_ptr<kube::Informer<kube::NodeView>> nodes_;
  // Logs a reconcile that threw, then counts every reconcile.
  std::unique_ptr<kube::ControllerMetrics> controller_hooks_;
  kube::Controller controller_;  // last: its workers stop before what they use goes
};

}  // namespace eoc::controller
