// The autoscaling policy: Ray Serve's default policy (python/ray/serve/autoscaling_policy.py on
// its master branch in 2026, after ray-project/ray#62144), decision for decision. Pure: no I/O,
// time passed in. One call a control-loop tick:
//
//   eoc::autoscale::DelayTimer timer;  // the pool's, kept between ticks
//   Decision d = Decide(config, {.now_seconds = now, .current = ready, .target = target,
//                                .total = ongoing, .complete = true}, timer);
//   target = d.replicas;                // what to scale to (clamped to the bounds)
//
// With t = targetOngoingRequests, on each tick:
//   1. From zero: current 0 and total > 0 (requests wait somewhere) decides, with no delay,
//      max(ceil(upscalingFactor), 1, target). current 0 and nothing waiting decides target. Neither
//      touches the timer, except that at target 0 the latter is a steady tick (below), as in Ray.
//   2. desired = current * (total / (t * current)), in that order (it is not total / t at every
//      boundary: current 7, total 464, t 16 gives 29.000000000000004).
//   3. scaled = ceil(current + f * (desired - current)), f the upscaling factor when desired >
//      current and the downscaling factor otherwise; a downscale the factor rounds away
//      (ceil(desired) < current but scaled == current) is current - 1. Then max(0, scaled) (a
//      downscaling factor over 1 can overshoot below zero), and at most 2^31 - 1.
//   4. The delay: a scaled value above target is applied once every tick since the timer started
//      has pointed up for upscaleDelaySeconds (elapsed + 1e-6 >= delay, Ray's tolerance for
//      float clocks); below target, for downscaleDelaySeconds, but never under one replica, or for
//      downscaleToZeroDelaySeconds when target is 1 (the only way to zero). The timer starts at
//      the first tick of a direction and resets when it fires, when the direction flips, and when
//      scaled equals target; until it fires the decision is target.
//   5. Then the bounds: max(minReplicas, min(maxReplicas, decision)).
// Metrics: `total` nullopt means the ready workers' load is unknown (none scraped, or stale):
// the policy holds at target. `complete` false means some ready worker's load is missing from
// `total`: a decision to go up stands (the load is at least that), one to go down is held. A hold
// resets the timer, since that tick pointed nowhere on fresh figures. Neither applies from zero.
//
// Time is in seconds on any monotonic timeline (doubles, as Ray's clock is), so a replay of a
// trace and the controller's steady clock drive the same comparisons.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "common/enum_name.h"

namespace eoc::autoscale {

// Ray's tolerance for elapsed-time comparisons: a 400 s delay counted on a float clock may come
// out as 399.9999999999999.
inline constexpr double kDelayToleranceSeconds = 1e-6;

// The parameters, named as spec.autoscaling names them.
struct PolicyConfig {
  std::int32_t min_replicas = 1;
  std::int32_t max_replicas = 1;
  double target_ongoing_requests = 16;
  double upscale_delay_seconds = 30;
  double downscale_delay_seconds = 600;
  double downscale_to_zero_delay_seconds = 600;
  double upscaling_factor = 1;
  double downscaling_factor = 1;
};

enum class Direction { kNone, kUp, kDown };
inline constexpr std::array<EnumName<Direction>, 3> kDirectionNames{
    {{Direction::kNone, "none"}, {Direction::kUp, "up"}, {Direction::kDown, "down"}}};

// Which way the decision has pointed on every tick since `since_seconds`.
struct DelayTimer {
  Direction direction = Direction::kNone;
  double since_seconds = 0;  // meaningful while running()

  bool running() const { return direction != Direction::kNone; }
  // How long it has run at `now` (0 when it is not running).
  double AgeSeconds(double now_seconds) const;
  bool operator==(const DelayTimer&) const = default;
};

struct PolicyInput {
  double now_seconds = 0;
  std::int32_t current = 0;  // ready workers
  std::int32_t target = 0;   // the replicas last decided
  // Ongoing requests (running + waiting) of the ready workers over the look-back period, plus
  // the picks waiting in every replica's queue; nullopt when the workers' load is unknown.
  std::optional<double> total;
  // Whether `total` counts every ready worker.
  bool complete = true;
};

// How the tick decided.
enum class Step {
  kSteady,          // scaled equals target: nothing to do
  kDelaying,        // the timer runs: target for now
  kScaled,          // the timer fired (or there was no delay): the scaled value
  kFromZero,        // an empty pool with requests waiting: up at once
  kIdleAtZero,      // an empty pool, nothing waiting: target
  kMetricsUnknown,  // no load figures: held at target
  kMetricsPartial,  // some workers' load missing and the decision went down: held at target
};
inline constexpr std::array<EnumName<Step>, 7> kStepNames{{
    {Step::kSteady, "Steady"},
    {Step::kDelaying, "Delaying"},
    {Step::kScaled, "Scaled"},
    {Step::kFromZero, "FromZero"},
    {Step::kIdleAtZero, "IdleAtZero"},
    {Step::kMetricsUnknown, "MetricsUnknown"},
    {Step::kMetricsPartial, "MetricsPartial"},
}};
inline std::string_view ToString(Step step) { return EnumToString(step, kStepNames); }

struct Decision {
  std::int32_t replicas = 0;  // the new target, within [minReplicas, maxReplicas]
  Step step = Step::kSteady;
  // The figures behind it (for Events and logs): the core policy's desired replicas (0 when it
  // did not run) and the value after the scaling factors (before the delay and the bounds).
  double desired = 0;
  std::int32_t scaled = 0;
};

// One tick. `timer` is the pool's, updated in place.
Decision Decide(const PolicyConfig& config, const PolicyInput& input, DelayTimer& timer);

}  // namespace eoc::autoscale
