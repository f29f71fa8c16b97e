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

void PoolMetrics::RemovePool(const std::string& ns, const std::string& pool) {
  auto& gauge = workers_.Add({{"namespace", ns}, {"pool", pool}});
  workers_.Remove(&gauge);
}

}  // namespace eoc::controller
