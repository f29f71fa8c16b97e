// What the autoscaler (controller/pool_scaler.h) tells the reconciler to publish of a pool's
// scaling, and the interface through which the reconciler asks it, so that the reconciler stays
// the one writer of each pool's status (the scaler patches desiredReplicas and lastScaleTime
// itself only right after writing /scale, so that a successor always finds its last write).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/inference_pool.h"

namespace eoc::controller {

// The ScalingActive condition's reasons the autoscaler gives.
namespace reasons {
inline constexpr const char* kActive = "Active";                  // True: deciding and applying
inline constexpr const char* kRecommending = "Recommending";      // True: mode Recommend
inline constexpr const char* kMetricsPartial = "MetricsPartial";  // True: not scaling down
inline constexpr const char* kDraining = "Draining";  // True: a scale-in waits for its workers
// True: scaling, but the target's kind removes pods the autoscaler cannot predict, so a scale-in
// does not drain.
inline constexpr const char* kNoDrain = "NoDrain";
inline constexpr const char* kMetricsUnknown = "MetricsUnknown";  // False: holding
inline constexpr const char* kExternalChange = "ExternalChange";  // False: adopted, not writing
inline constexpr const char* kHorizontalPodAutoscaler = "HorizontalPodAutoscaler";  // False
inline constexpr const char* kScaleTargetUnavailable = "ScaleTargetUnavailable";    // False
inline constexpr const char* kScaleFailed = "ScaleFailed";                          // False
inline constexpr const char* kPending = "Pending";  // Unknown: the autoscaler has not run yet
}  // namespace reasons

struct ScalingReport {
  // ScalingActive: type, status, reason and message (the reconciler sets the generation and the
  // transition time).
  api::Condition condition;
  // status.desiredReplicas and status.lastScaleTime; unset and "" leave the status's own.
  std::optional<std::int32_t> desired_replicas;
  std::string last_scale_time;
  // The pods (names, sorted) a scale-in drains: published as draining until they are gone.
  std::vector<std::string> draining;

  bool operator==(const ScalingReport&) const = default;
};

// What the reconciler asks of the autoscaler; thread-safe, never blocks.
class ScalingSource {
 public:
  virtual ~ScalingSource() = default;
  // The pool (valid, autoscaling enabled) is to be scaled from now on; cheap when it already is.
  // The autoscaler drops a pool itself once it no longer is.
  virtual void Track(const std::string& pool_key) = 0;
  // What the pool's status should say of its scaling; nullopt until this replica, leading, has
  // ticked for the pool.
  virtual std::optional<ScalingReport> Report(const std::string& pool_key) const = 0;
};

}  // namespace eoc::controller
