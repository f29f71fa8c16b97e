#include "controller/pool_metrics.h"

namespace eoc::controller {

const char* ToString(StatusWrite outcome) {
  switch (outcome) {
    case StatusWrite::kWritten:
      return "written";
    case StatusWrite::kConflict:
      return "conflict";
    case StatusWrite::kError:
      return "error";
    case StatusWrite::kNotLeader:
      return "not-leader";
  }
  return "unknown";
}

PoolMetrics::PoolMetrics(prometheus::Registry& registry)
    : status_writes_(prometheus::BuildCounter()
                         .Name("eoc_pool_status_writes_total")
                         .Help("Writes of an InferencePool's status, by outcome (written, "
                               "conflict, error, not-leader).")
                         .Register(registry)),
      workers_(prometheus::BuildGauge()
                   .Name("eoc_pool_workers")
                   .Help("Ready workers of an InferencePool: the members of its routing table.")
                   .Register(registry)),
      weights_(prometheus::BuildGauge()
                   .Name("eoc_worker_routing_weight")
                   .Help("A worker's weight, of 1000, in its InferencePool's published routing "
                         "table (status.routing).")
                   .Register(registry)) {
  for (const auto outcome : {StatusWrite::kWritten, StatusWrite::kConflict, StatusWrite::kError,
                             StatusWrite::kNotLeader}) {
    status_writes_.Add({{"result", ToString(outcome)}});
  }
}

void PoolMetrics::StatusWritten(StatusWrite outcome) {
  status_writes_.Add({{"result", ToString(outcome)}}).Increment();
}

void PoolMetrics::SetWorkers(const std::string& ns, const std::string& pool, std::size_t workers) {
  workers_.Add({{"namespace", ns}, {"pool", pool}}).Set(static_cast<double>(workers));
}

void PoolMetrics::SetRoutingWeights(const std::string& ns, const std::string& pool,
                                    const std::optional<api::RoutingTable>& table) {
  std::set<std::string> pods;
  const std::lock_guard lock(mu_);
  if (table) {
    for (const api::RoutingWorker& w : table->workers) {
      weights_.Add({{"namespace", ns}, {"pool", pool}, {"pod", w.pod}})
          .Set(static_cast<double>(w.weight));
      pods.insert(w.pod);
    }
  }
  RemoveWeightsLocked(ns, pool, pods);
  if (pods.empty()) {
    weighted_.erase({ns, pool});
  } else {
    weighted_[{ns, pool}] = std::move(pods);
  }
}

void PoolMetrics::RemoveWeightsLocked(const std::string& ns, const std::string& pool,
                                      const std::set<std::string>& keep) {
  const auto it = weighted_.find({ns, pool});
  if (it == weighted_.end()) return;
  for (const std::string& pod : it->second) {
    if (keep.contains(pod)) continue;
    weights_.Remove(&weights_.Add({{"namespace", ns}, {"pool", pool}, {"pod", pod}}));
  }
}

void PoolMetrics::RemovePool(const std::string& ns, const std::string& pool) {
  auto& gauge = workers_.Add({{"namespace", ns}, {"pool", pool}});
  workers_.Remove(&gauge);
  const std::lock_guard lock(mu_);
  RemoveWeightsLocked(ns, pool, {});
  weighted_.erase({ns, pool});
}

}  // namespace eoc::controller
