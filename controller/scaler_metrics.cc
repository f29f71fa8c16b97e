#include "controller/scaler_metrics.h"

#include <array>

#include "telemetry/metrics.h"

namespace eoc::controller {
namespace {

using telemetry::CounterFamily;
using telemetry::GaugeFamily;

constexpr const char* kUp = "up";
constexpr const char* kDown = "down";
constexpr std::array<const char*, 3> kDrainReasons = {"drained", "timeout", "cancelled"};

}  // namespace

ScalerMetrics::ScalerMetrics(prometheus::Registry& registry)
    : desired_(
          GaugeFamily(registry, "eoc_autoscaler_desired_replicas",
                      "The autoscaling policy's desired replicas on its last tick: ready workers "
                      "times ongoing requests over their target (before factors, delays and "
                      "bounds).")),
      target_(GaugeFamily(
          registry, "eoc_autoscaler_target_replicas",
          "The replicas the autoscaler last decided for the pool (status.desiredReplicas).")),
      current_(
          GaugeFamily(registry, "eoc_autoscaler_current_replicas",
                      "The pool's ready workers, as the autoscaler's last tick counted them.")),
      delay_(GaugeFamily(registry, "eoc_autoscaler_delay_timer_seconds",
                         "How long the autoscaler's decision has pointed the same way (up or down) "
                         "without being applied yet; 0 when no timer runs.")),
      decisions_(
          CounterFamily(registry, "eoc_autoscaler_decisions_total",
                        "New targets the autoscaler applied (or recommended), by direction.")),
      holds_(
          CounterFamily(registry, "eoc_autoscaler_holds_total",
                        "Autoscaler ticks that held the target or did not write it, by reason "
                        "(MetricsUnknown, MetricsPartial, ExternalChange, HorizontalPodAutoscaler, "
                        "ScaleTargetUnavailable, ScaleFailed, Draining).")),
      draining_(GaugeFamily(registry, "eoc_autoscaler_draining_workers",
                            "Workers a scale-in of the pool is draining: they take no new work, "
                            "and /scale is written once they have finished their requests.")),
      drains_(CounterFamily(registry, "eoc_autoscaler_drains_total",
                            "Scale-in drains by how they ended: drained (the workers finished "
                            "their requests), timeout (drainTimeoutSeconds passed first), "
                            "cancelled (the decision no longer shrank the pool).")) {}

void ScalerMetrics::Observe(const std::string& ns, const std::string& pool, const Tick& tick) {
  desired_.Add({{"namespace", ns}, {"pool", pool}}).Set(tick.desired);
  target_.Add({{"namespace", ns}, {"pool", pool}}).Set(tick.target);
  current_.Add({{"namespace", ns}, {"pool", pool}}).Set(tick.current);
  delay_.Add({{"namespace", ns}, {"pool", pool}, {"direction", kUp}}).Set(tick.delay_up_seconds);
  delay_.Add({{"namespace", ns}, {"pool", pool}, {"direction", kDown}})
      .Set(tick.delay_down_seconds);
  draining_.Add({{"namespace", ns}, {"pool", pool}});  // 0 until a drain, not absent
}

void ScalerMetrics::Decided(const std::string& ns, const std::string& pool,
                            std::string_view direction) {
  decisions_.Add({{"namespace", ns}, {"pool", pool}, {"direction", std::string(direction)}})
      .Increment();
}

void ScalerMetrics::Held(const std::string& ns, const std::string& pool, std::string_view reason) {
  {
    const std::lock_guard lock(mu_);
    held_[{ns, pool}].emplace(reason);
  }
  holds_.Add({{"namespace", ns}, {"pool", pool}, {"reason", std::string(reason)}}).Increment();
}

void ScalerMetrics::Draining(const std::string& ns, const std::string& pool, std::size_t workers) {
  draining_.Add({{"namespace", ns}, {"pool", pool}}).Set(static_cast<double>(workers));
}

void ScalerMetrics::Drained(const std::string& ns, const std::string& pool,
                            std::string_view reason) {
  drains_.Add({{"namespace", ns}, {"pool", pool}, {"reason", std::string(reason)}}).Increment();
}

void ScalerMetrics::RemovePool(const std::string& ns, const std::string& pool) {
  for (auto* family : {&desired_, &target_, &current_, &draining_}) {
    family->Remove(&family->Add({{"namespace", ns}, {"pool", pool}}));
  }
  for (const char* direction : {kUp, kDown}) {
    delay_.Remove(&delay_.Add({{"namespace", ns}, {"pool", pool}, {"direction", direction}}));
    decisions_.Remove(
        &decisions_.Add({{"namespace", ns}, {"pool", pool}, {"direction", direction}}));
  }
  for (const char* reason : kDrainReasons) {
    drains_.Remove(&drains_.Add({{"namespace", ns}, {"pool", pool}, {"reason", reason}}));
  }
  const std::lock_guard lock(mu_);
  const auto it = held_.find({ns, pool});
  if (it == held_.end()) return;
  for (const std::string& reason : it->second) {
    holds_.Remove(&holds_.Add({{"namespace", ns}, {"pool", pool}, {"reason", reason}}));
  }
  held_.erase(it);
}

}  // namespace eoc::controller
