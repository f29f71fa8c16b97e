// The autoscaler's wiring (leader only): on every tick (1 s by default) of each pool with
// autoscaling enabled and a valid spec, it counts the ready workers, reads their ongoing requests
// (running + waiting, as scraped) and the picks waiting in every replica's queue (this one's, and
// the others' fresh demand annotations: demand.h), asks the policy
// (src/autoscale/policy.h) and applies its decision through the /scale subresource of the pool's
// scaleTargetRef (any kind that has one, found through discovery).
//
//   PoolScaler scaler(store, members, scale_client, recorder,
//                     {.fence = fence, .directory = &directory, .changed = reconcile}, clock,
//                     &scaler_metrics);
//   scaler.Start({synced});        // a kube::Controller of its own runs the ticks
//   scaler.Track("prod/chat");     // the reconciler, for each valid autoscaled pool
//   scaler.SetLeading(true);
//   scaler.Report("prod/chat");    // ScalingActive, desiredReplicas, lastScaleTime for the status
//
// Playing fair (DESIGN.md, the InferencePool API):
//   - The replicas it last wrote are status.desiredReplicas (patched right after each /scale
//     write); a new leader starts from them, so its predecessor's write is its own.
//   - /scale at other replicas than that was changed by someone else: adopted as the target,
//     ScalingActive False ExternalChange, an Event, and no write for downscaleDelaySeconds.
//   - An autoscaling/v1 HorizontalPodAutoscaler on the same target: ScalingActive False, no write.
//   - initialReplicas is written only to a target this pool never scaled (no lastScaleTime), and
//     only when it has fewer replicas.
//   - Writes are conditional on /scale's resourceVersion: a write that meets a conflict reads
//     /scale again and retries only if the replicas are still its own.
//   - mode Recommend decides, reports (status, Events, metrics) and never writes /scale.
// A new leader's delay timers start from nothing: it never applies a decision its predecessor's
// timer was counting towards before a full delay of its own.
//
// Scale-in drains (scale_in.h): a decision below /scale's replicas first marks the pods the
// workload will remove as draining (the report's `draining`, which the reconciler publishes in the
// routing table: no new work, their sessions move), pinning them with the deletion cost where it
// is honoured; /scale is written once their scraped running and waiting requests are zero (seen
// at least a scrape interval after the drain began, with no pick of this replica since), or after
// autoscaling.drainTimeoutSeconds. A next decision that no longer shrinks cancels the drain (and
// unpins); one that shrinks less drains fewer. Kinds whose scale-in cannot be predicted are
// written at once, and ScalingActive says NoDrain.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "autoscale/ongoing_window.h"
#include "autoscale/policy.h"
#include "common/clock.h"
#include "controller/demand.h"
#include "controller/pool_reconciler.h"
#include "controller/scale_client.h"
#include "controller/scale_in.h"
#include "controller/scaler_metrics.h"
#include "controller/scaling_report.h"
#include "kube/controller.h"
#include "kube/event_sink.h"
#include "kube/write_fence.h"
#include "routing/pool_directory.h"

namespace eoc::controller {

struct Drain;

struct PoolScalerOptions {
  // The control loop's tick: how often each pool's policy runs (--autoscaler-tick-ms).
  std::chrono::milliseconds tick{1000};
  // /scale is read again at least this often between writes (and always after a conflict), to
  // see changes made by someone else.
  std::chrono::milliseconds scale_read_interval{5000};
  // How often the HorizontalPodAutoscalers of a pool's namespace are listed.
  std::chrono::milliseconds hpa_check_interval{30000};
  // Asked immediately before each write to /scale and to the status. Empty: always.
  kube::WriteFence fence;
  // Where each pool's routing state is (loads as scraped, this replica's waiting picks); null:
  // none (every load is unknown). Must outlive the scaler.
  routing::PoolDirectory* directory = nullptr;
  // A pool's report changed: the reconciler should write its status. Called on a tick's thread.
  std::function<void(const std::string& pool_key)> changed;
  // This replica's name in the pools' demand annotations (demand.h), whose reports are left out
  // (its own queue is counted directly).
  std::string replica;
  // Whether a Deployment's scale-in pins the pods it drains with
  // controller.kubernetes.io/pod-deletion-cost (scale_in.h, kDeletionCost) rather than predicting
  // the ReplicaSet controller's own ranking: nullopt decides by the server's version (1.22 and
  // later honour the cost); true or false forces it (--pod-deletion-cost).
  std::optional<bool> deletion_cost;
};

// A pool's current workers (the reconciler's membership), nullptr while unknown.
// The policy's parameters from a pool's spec.autoscaling (maxReplicas, when absent, is
// minReplicas). The scaler and the simulator (sim/) configure the policy with it.
autoscale::PolicyConfig PolicyOf(const api::AutoscalingSpec& autoscaling);

using MembersLookup = std::function<std::shared_ptr<const PoolMembers>(const std::string& key)>;

class PoolScaler final : public kube::Reconciler, public ScalingSource {
 public:
  // Everything passed by reference (and `metrics`, which may be null) must outlive the scaler.
  PoolScaler(const PoolStore& store, MembersLookup members, ScaleClient& scales,
             kube::EventSink& events, PoolScalerOptions options, const Clock& clock,
             ScalerMetrics* metrics);
  ~PoolScaler() override;  // Stop()s
  PoolScaler(const PoolScaler&) = delete;
  PoolScaler& operator=(const PoolScaler&) = delete;
  PoolScaler(PoolScaler&&) = delete;
  PoolScaler& operator=(PoolScaler&&) = delete;

  // Runs the ticks on a worker of its own once every check holds.
  void Start(std::vector<kube::Controller::SyncedCheck> synced);
  void Stop();
  // Leading: every tracked pool ticks from a fresh start (its state read from its status).
  // Not leading: the ticks stop and every pool's state and report are dropped.
  void SetLeading(bool leading);

  // One tick of one pool (the kube::Controller calls it; tests call it directly).
  kube::Result<kube::ReconcileResult> Reconcile(const std::string& key) override;

  // ScalingSource.
  void Track(const std::string& pool_key) override;
  std::optional<ScalingReport> Report(const std::string& pool_key) const override;

 private:
  struct State;
  std::shared_ptr<State> StateFor(const std::string& key, const api::InferencePool& pool);
  void Untrack(const std::string& key, const api::InferencePool* pool);
  void SetReport(const std::string& key, const api::InferencePool& pool, State& s,
                 ScalingReport report);
  // The report's desiredReplicas and lastScaleTime follow a write at once (before the status
  // patch), so that a status the reconciler writes meanwhile never carries the figures before it.
  void ReportScale(const std::string& key, const api::InferencePool& pool, State& s);
  static std::optional<std::int32_t> StatusReplicas(const api::InferencePool& pool, const State& s);
  // One tick of a pool this replica scales, with its state.
  kube::Result<kube::ReconcileResult> Tick(const std::string& key, const PoolObject& object,
                                           State& s);
  // The policy's load figures for the pool now.
  autoscale::PolicyInput Measure(const std::string& key, const PoolObject& object, State& s,
                                 Clock::TimePoint now);
  // Writes `replicas` to /scale and, once written, the status; an Event says why.
  kube::Result<bool> Apply(const std::string& key, const api::InferencePool& pool, State& s,
                           std::int32_t replicas, const std::string& why);

  // The scale-in half (pool_scaler_drain.cc). Applies a decision of `replicas` (below /scale's, or
  // while a drain runs) through a drain; sets `report` while one is pending. Whether /scale was
  // written.
  kube::Result<bool> ScaleIn(const std::string& key, const PoolObject& object, State& s,
                             std::int32_t replicas, const std::string& why, Clock::TimePoint now,
                             ScalingReport& report);
  // A drain whose /scale is written ends once the workload has removed its pods.
  void FollowWrittenDrain(const api::InferencePool& pool, State& s, Clock::TimePoint now);
  // Ends a drain that no longer applies: a pending one's pods are unpinned, an Event says why.
  void CancelDrain(const api::InferencePool& pool, State& s, const std::string& why);
  // Forgets the pool's drain (its gauge back to 0).
  void EndDrain(const api::InferencePool& pool, State& s);
  // Chooses the pods to drain for `replicas` among the pool's active `pods`; keeps the start of a
  // drain re-planned.
  void PlanDrain(const std::string& key, const api::InferencePool& pool, State& s,
                 ScaleInOrder order, std::int32_t replicas,
                 const std::vector<std::shared_ptr<const kube::PodView>>& pods,
                 Clock::TimePoint now);
  // Pins the drain's pods not yet pinned, unpins the pool's other pods carrying the drain's cost.
  // Whether every drained pod is pinned.
  bool Pin(const api::InferencePool& pool, Drain& drain,
           const std::vector<std::shared_ptr<const kube::PodView>>& pods);
  // Requests still on the drain's pods (running + waiting as scraped, plus this replica's picks
  // since); nullopt while one of them is unknown.
  std::optional<double> InFlight(const std::string& key, const api::InferencePool& pool,
                                 const Drain& drain) const;
  // How the target's scale-in removes pods; nullopt while the server's version is not known.
  std::optional<ScaleInOrder> OrderFor(const api::ScaleTargetRef& ref);
  // The pool's pods that the target workload counts: those its /scale's selector picks (all the
  // pool's when it has none), active (scale_in.h, IsActive).
  std::vector<std::shared_ptr<const kube::PodView>> ActivePods(const api::InferencePool& pool,
                                                               const State& s) const;
  bool Fenced() const { return !options_.fence || options_.fence(); }
  double Seconds(Clock::TimePoint t) const;

  const PoolStore& store_;
  const MembersLookup members_;
  ScaleClient& scales_;
  kube::EventSink& events_;
  const PoolScalerOptions options_;
  const Clock& clock_;
  ScalerMetrics* const metrics_;
  const Clock::TimePoint epoch_;  // the policy's time 0
  const std::string own_demand_;  // DemandAnnotationKey(options_.replica)
  DemandReadings demand_;

  mutable std::mutex mu_;
  std::set<std::string> tracked_;                         // guarded by mu_
  std::map<std::string, std::shared_ptr<State>> states_;  // guarded by mu_; leader only
  std::map<std::string, ScalingReport> reports_;          // guarded by mu_; leader only
  bool leading_ = false;                                  // guarded by mu_
  std::optional<int> server_minor_;                       // guarded by mu_; from /version

  kube::Controller controller_;  // last: its worker stops before what it uses goes
};

}  // namespace eoc::controller
