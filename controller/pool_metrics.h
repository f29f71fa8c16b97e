// The InferencePool reconciler's own metrics: status writes by outcome, each pool's workers, and
// each worker's weight in the pool's published routing table. (Reconciles by outcome and their
// duration are every controller's: KubeMetrics::Controller.) Thread-safe.
//
//   PoolMetrics m(metrics.registry());
//   m.StatusWritten(StatusWrite::kWritten);
//   m.SetWorkers("prod", "chat", 3);
//   m.SetRoutingWeights("prod", "chat", pool.status.routing);   ... m.RemovePool("prod", "chat");
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "api/inference_pool.h"

namespace eoc::controller {

// kNotLeader: not written, the Lease having lapsed between the reconcile's start and its write.
enum class StatusWrite : std::uint8_t { kWritten, kConflict, kError, kNotLeader };
const char* ToString(StatusWrite outcome);  // "written", "conflict", "error", "not-leader"

class PoolMetrics {
 public:
  explicit PoolMetrics(prometheus::Registry& registry);

  void StatusWritten(StatusWrite outcome);
  void SetWorkers(const std::string& ns, const std::string& pool, std::size_t workers);
  // The weights (of 1000) of the table's workers; those of workers no longer in it, or of a pool
  // with no table, go.
  void SetRoutingWeights(const std::string& ns, const std::string& pool,
                         const std::optional<api::RoutingTable>& table);
  void RemovePool(const std::string& ns, const std::string& pool);

 private:
  void RemoveWeightsLocked(const std::string& ns, const std::string& pool,
                           const std::set<std::string>& keep);

  prometheus::Family<prometheus::Counter>& status_writes_;
  prometheus::Family<prometheus::Gauge>& workers_;
  prometheus::Family<prometheus::Gauge>& weights_;
  std::mutex mu_;
  std::map<std::pair<std::string, std::string>, std::set<std::string>> weighted_;  // pods by pool
};

}  // namespace eoc::controller
