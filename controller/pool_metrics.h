// The InferencePool reconciler's metrics: reconciles by result and their duration (as
// controller-runtime's controller_runtime_reconcile_*), status writes by outcome, and each pool's
// workers.
//
//   PoolMetrics m(metrics.registry());
//   m.Reconciled(ReconcileResult::kSuccess, elapsed);
//   m.SetWorkers("prod", "chat", 3);   ... m.RemovePool("prod", "chat");
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <chrono>
#include <cstddef>
#include <string>

namespace eoc::controller {

enum class ReconcileResult : std::uint8_t { kSuccess, kError, kRequeue };
const char* ToString(ReconcileResult result);  // "success", "error", "requeue"

// kNotLeader: not written, the Lease having lapsed between the reconcile's start and its write.
enum class StatusWrite : std::uint8_t { kWritten, kConflict, kError, kNotLeader };
const char* ToString(StatusWrite outcome);  // "written", "conflict", "error", "not-leader"

class PoolMetrics {
 public:
  explicit PoolMetrics(prometheus::Registry& registry);

  void Reconciled(ReconcileResult result, std::chrono::nanoseconds took);
  void StatusWritten(StatusWrite outcome);
  void SetWorkers(const std::string& ns, const std::string& pool, std::size_t workers);
  void RemovePool(const std::string& ns, const std::string& pool);

 private:
  prometheus::Family<prometheus::Counter>& reconciles_;
  prometheus::Family<prometheus::Histogram>& duration_;
  prometheus::Family<prometheus::Counter>& status_writes_;
  prometheus::Family<prometheus::Gauge>& workers_;
};

}  // namespace eoc::controller
