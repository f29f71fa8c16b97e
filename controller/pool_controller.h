// The InferencePool controller: informers over InferencePools, worker Pods and Nodes, a work
// queue of pool keys, and the reconcile that turns a pool into its set of workers and publishes
// its status (leader only). Pod and Node changes map to the pools they touch; each pool is
// reconciled by one worker at a time.
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

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "api/inference_pool.h"
#include "common/clock.h"
#include "controller/kube_metrics.h"
#include "controller/pool_metrics.h"
#include "controller/workers.h"
#include "kube/client.h"
#include "kube/event_recorder.h"
#include "kube/informer.h"
#include "kube/node_view.h"
#include "kube/pod_view.h"
#include "kube/work_queue.h"
#include "kube/write_fence.h"
#include "routing/pool_directory.h"

namespace eoc::controller {

inline const kube::ResourceRef kInferencePools{std::string(api::kGroup), std::string(api::kVersion),
                                               std::string(api::kPlural)};

// What the pool informer keeps of an InferencePool.
struct PoolObject {
  api::InferencePool pool;
  std::string resource_version;
};
PoolObject ToPoolObject(const nlohmann::json& object);

struct PoolControllerOptions {
  // Namespaces whose pools and pods are watched; empty: all.
  std::vector<std::string> namespaces;
  // Reconcile workers; 0 runs none (a benchmark or test then calls Reconcile() itself).
  int workers = 2;
  // A pool's status is written at most this often; a change inside it waits for the rest.
  std::chrono::milliseconds min_publish_interval{1000};
  // Attempts to write a status that meets a conflict, each after a fresh read.
  int max_conflict_attempts = 5;
  // Asked immediately before each status write: the Lease must be held at that moment, not only
  // when the reconcile began (the recorder has a fence of its own for Events). Empty: always.
  kube::WriteFence fence;
  // An informer failing this long without a success is stale (logged, in a metric and /readyz).
  std::chrono::milliseconds stale_after{std::chrono::seconds(60)};
  // Where the pick path finds each valid pool's routing state (written by every replica, as
  // pools come, go, or change); null: none. Must outlive the controller.
  routing::PoolDirectory* directory = nullptr;
};

class PoolController {
 public:
  // `kube_metrics` and `pool_metrics` may be null (no metrics); `recorder` and `client` must
  // outlive the controller.
  PoolController(kube::Client& client, kube::EventRecorder& recorder, PoolControllerOptions options,
                 const Clock& clock, KubeMetrics* kube_metrics, PoolMetrics* pool_metrics);
  ~PoolController();  // Stop()s
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

  // Whether this replica writes status and Events. Becoming the leader reconciles every pool.
  void SetLeading(bool leading);

  // A pool's current workers ("namespace/name"), sorted by pod name; nullptr for a pool that is
  // not known or not yet reconciled.
  std::shared_ptr<const PoolMembers> Workers(const std::string& pool_key) const;

  // Reconciles one pool now, on the calling thread (the workers call this; so may tests).
  ReconcileResult Reconcile(const std::string& key);

 private:
  struct PoolRecord {
    std::shared_ptr<const PoolMembers> workers;
    std::chrono::steady_clock::time_point last_write{};
    std::unordered_map<std::string, std::string> annotation_errors;  // reported: pod -> error
  };

  void AddHandlers();
  void EnqueuePoolsSelecting(const kube::PodView& pod);
  void EnqueuePoolsOnNode(const std::string& node);
  void EnqueueAll();
  void RunWorker();
  bool WaitUntilSynced();

  std::shared_ptr<const PoolObject> GetPool(const std::string& key) const;
  std::vector<std::shared_ptr<const PoolObject>> ListPools() const;
  std::vector<std::shared_ptr<const kube::PodView>> ListPods() const;
  PoolMembers SelectWorkers(const api::InferencePool& pool) const;

  // Writes `pool`'s status if it differs; on a conflict reads the pool again and recomputes.
  ReconcileResult Publish(const PoolObject& object, const std::vector<routing::Worker>& workers);
  void RecordSpecEvents(const api::InferencePool& pool, const api::InferencePoolStatus& written);
  void RecordAnnotationErrors(const api::InferencePool& pool, const PoolMembers& members,
                              PoolRecord& record);
  kube::ObjectReference Reference(const api::InferencePool& pool) const;

  kube::Client& client_;
  kube::EventRecorder& recorder_;
  const PoolControllerOptions options_;
  const Clock& clock_;
  PoolMetrics* const metrics_;
  std::atomic<bool> leading_{false};
  std::atomic<bool> stopping_{false};

  mutable std::mutex mu_;
  std::unordered_map<std::string, PoolRecord> records_;  // by pool key; guarded by mu_

  kube::WorkQueue queue_;
  // Reflector hooks that log failed lists and watches, then count them; before the informers.
  std::vector<std::unique_ptr<kube::ReflectorMetrics>> reflector_hooks_;
  std::vector<std::unique_ptr<kube::Informer<PoolObject>>> pools_;
  std::vector<std::unique_ptr<kube::Informer<kube::PodView>>> pods_;
  std::unique_ptr<kube::Informer<kube::NodeView>> nodes_;
  std::vector<std::thread> workers_;
};

}  // namespace eoc::controller
