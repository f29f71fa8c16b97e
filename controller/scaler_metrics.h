// The autoscaler's metrics, per pool: the policy's desired replicas, the target it decided and the
// ready workers it saw; decisions applied by direction; the age of the running delay timer; the
// ticks it held, by reason; the workers a scale-in is draining, and its drains by how they ended.
//
//   ScalerMetrics m(metrics.registry());
//   m.Observe("prod", "chat", decision, target, current, timer_age_up, timer_age_down);
//   m.Decided("prod", "chat", "up");   m.Held("prod", "chat", "MetricsUnknown");
//   m.Draining("prod", "chat", 2);     m.Drained("prod", "chat", "drained");
//   m.RemovePool("prod", "chat");
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>

namespace eoc::controller {

class ScalerMetrics {
 public:
  explicit ScalerMetrics(prometheus::Registry& registry);

  struct Tick {
    double desired = 0;        // the policy's desired replicas (fractional; 0 when it did not run)
    std::int32_t target = 0;   // the target after the tick
    std::int32_t current = 0;  // the ready workers it saw
    double delay_up_seconds = 0;  // the running timer's age, by its direction (0: none)
    double delay_down_seconds = 0;
  };
  void Observe(const std::string& ns, const std::string& pool, const Tick& tick);
  // A new target applied (or, in Recommend mode, recommended): "up" or "down".
  void Decided(const std::string& ns, const std::string& pool, std::string_view direction);
  // A tick that held the target or did not write it: the reason as the condition names it.
  void Held(const std::string& ns, const std::string& pool, std::string_view reason);
  // The workers a scale-in of the pool is draining now.
  void Draining(const std::string& ns, const std::string& pool, std::size_t workers);
  // A drain ended: "drained" (its workers finished), "timeout" (drainTimeoutSeconds passed) or
  // "cancelled" (the decision no longer shrank, or someone else set the replicas).
  void Drained(const std::string& ns, const std::string& pool, std::string_view reason);
  void RemovePool(const std::string& ns, const std::string& pool);

 private:
  prometheus::Family<prometheus::Gauge>& desired_;
  prometheus::Family<prometheus::Gauge>& target_;
  prometheus::Family<prometheus::Gauge>& current_;
  prometheus::Family<prometheus::Gauge>& delay_;
  prometheus::Family<prometheus::Counter>& decisions_;
  prometheus::Family<prometheus::Counter>& holds_;
  prometheus::Family<prometheus::Gauge>& draining_;
  prometheus::Family<prometheus::Counter>& drains_;
  std::mutex mu_;
  // The hold reasons each pool has counted, so that RemovePool finds their series.
  std::map<std::pair<std::string, std::string>, std::set<std::string, std::less<>>> held_;
};

}  // namespace eoc::controller
