// The InferencePool reconciler's own metrics: status writes by outcome, and each pool's workers.
// (Reconciles by outcome and their duration are every controller's: KubeMetrics::Controller.)
//
//   PoolMetrics m(metrics.registry());
//   m.StatusWritten(StatusWrite::kWritten);
//   m.SetWorkers("prod", "chat", 3);   ... m.RemovePool("prod", "chat");
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace eoc::controller {

// kNotLeader: not written, the Lease having lapsed between the reconcile's start and its write.
enum class StatusWrite : std::uint8_t { kWritten, kConflict, kError, kNotLeader };
const char* ToString(StatusWrite outcome);  // "written", "conflict", "error", "not-leader"

class PoolMetrics {
 public:
  explicit PoolMetrics(prometheus::Registry& registry);

  void StatusWritten(StatusWrite outcome);
  void SetWorkers(const std::string& ns, const std::string& pool, std::size_t workers);
  void RemovePool(const std::string& ns, const std::string& pool);

 private:
  prometheus::Family<prometheus::Counter>& status_writes_;
  prometheus::Family<prometheus::Gauge>& workers_;
};

}  // namespace eoc::controller
