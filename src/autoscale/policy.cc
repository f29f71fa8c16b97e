#include "autoscale/policy.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace eoc::autoscale {
namespace {

constexpr double kMaxReplicasDouble = std::numeric_limits<std::int32_t>::max();

// ceil(x), as a replica count: NaN and anything below zero are 0, anything past int32 its max.
std::int32_t CeilReplicas(double x) {
  if (!(x > 0)) return 0;
  return static_cast<std::int32_t>(std::min(std::ceil(x), kMaxReplicasDouble));
}

std::int32_t Clamp(const PolicyConfig& config, std::int32_t replicas) {
  return std::max(config.min_replicas, std::min(config.max_replicas, replicas));
}

Decision Finish(const PolicyConfig& config, Decision d) {
  d.replicas = Clamp(config, d.replicas);
  return d;
}

// Ray's _apply_scaling_factors for current > 0, then max(0, ...).
std::int32_t ApplyFactors(const PolicyConfig& config, double desired, std::int32_t current) {
  const double delta = desired - current;
  const double factor = delta > 0 ? config.upscaling_factor : config.downscaling_factor;
  const double raw = std::ceil(current + (factor * delta));
  std::int32_t scaled = CeilReplicas(raw);
  if (std::ceil(desired) < current && raw == current) scaled = current - 1;
  return scaled;
}

// Ray's _apply_delay_logic: the decision for `scaled` against `target` at `now`.
Decision ApplyDelay(const PolicyConfig& config, std::int32_t scaled, std::int32_t target,
                    double now, DelayTimer& timer) {
  Decision d{.replicas = target, .step = Step::kDelaying, .scaled = scaled};
  if (scaled == target) {
    timer = {};
    d.step = Step::kSteady;
    return d;
  }
  const Direction direction = scaled > target ? Direction::kUp : Direction::kDown;
  if (timer.direction != direction) timer = {.direction = direction, .since_seconds = now};
  double delay = config.upscale_delay_seconds;
  std::int32_t value = scaled;
  if (direction == Direction::kDown) {
    if (target == 1) {
      delay = config.downscale_to_zero_delay_seconds;
    } else {
      delay = config.downscale_delay_seconds;
      value = std::max(1, value);
    }
  }
  if (now - timer.since_seconds + kDelayToleranceSeconds >= delay) {
    timer = {};
    d.replicas = value;
    d.step = Step::kScaled;
  }
  return d;
}

}  // namespace

double DelayTimer::AgeSeconds(double now_seconds) const {
  return running() ? std::max(0.0, now_seconds - since_seconds) : 0.0;
}

Decision Decide(const PolicyConfig& config, const PolicyInput& in, DelayTimer& timer) {
  if (in.current <= 0) {
    // Requests waiting on an empty pool: up at once, the timer left as it was.
    if (in.total.value_or(0) > 0) {
      const std::int32_t up = std::max({CeilReplicas(config.upscaling_factor), 1, in.target});
      return Finish(config, {.replicas = up, .step = Step::kFromZero, .scaled = up});
    }
    // Nothing waiting: the core policy's answer is target, applied at once when above zero; at
    // zero it is a steady tick of the delay logic.
    if (in.target > 0) {
      return Finish(config,
                    {.replicas = in.target, .step = Step::kIdleAtZero, .scaled = in.target});
    }
    Decision d = ApplyDelay(config, 0, in.target, in.now_seconds, timer);
    d.step = Step::kIdleAtZero;
    return Finish(config, d);
  }
  if (!in.total || !std::isfinite(*in.total) || *in.total < 0) {
    timer = {};
    return Finish(config, {.replicas = in.target, .step = Step::kMetricsUnknown});
  }
  const double current = in.current;
  const double desired = current * (*in.total / (config.target_ongoing_requests * current));
  const std::int32_t scaled = ApplyFactors(config, desired, in.current);
  if (!in.complete && scaled < in.target) {
    timer = {};
    return Finish(config, {.replicas = in.target,
                           .step = Step::kMetricsPartial,
                           .desired = desired,
                           .scaled = scaled});
  }
  Decision d = ApplyDelay(config, scaled, in.target, in.now_seconds, timer);
  d.desired = desired;
  return Finish(config, d);
}

}  // namespace eoc::autoscale
