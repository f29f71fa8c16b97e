#include "controller/pool_metrics.h"

namespace eoc::controller {
namespace {

constexpr const char* kController = "inferencepool";

prometheus::Histogram::BucketBoundaries DurationBuckets() {
  // 100 us to about 50 s: a reconcile is a cache read and at most a few API calls.
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
          0.1,    0.25,    0.5,    1,     2.5,    5,     10,   25,    50};
}

}  // namespace

const char* ToString(ReconcileResult result) {
  switch (result) {
    case ReconcileResult::kSuccess:
      return "success";
    case ReconcileResult::kError:
      return "error";
    case ReconcileResult::kRequeue:
      return "requeue";
  }
  return "unknown";
}

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
    : reconciles_(prometheus::BuildCounter()
                      .Name("eoc_reconcile_total")
                      .Help("Reconciles of a controller, by result (success, error, requeue).")
                      .Register(registry)),
      duration_(prometheus::BuildHistogram()
                    .Name("eoc_reconcile_duration_seconds")
                    .Help("Time one reconcile took, API calls included.")
                    .Register(registry)),
      status_writes_(prometheus::BuildCounter()
                         .Name("eoc_pool_status_writes_total")
                         .Help("Writes of an InferencePool's status, by outcome (written, "
                               "conflict, error, not-leader).")
                         .Register(registry)),
      workers_(prometheus::BuildGauge()
                   .Name("eoc_pool_workers")
                   .Help("Ready workers of an InferencePool: the members of its routing table.")
                   .Register(registry)) {
  for (const auto result :
       {ReconcileResult::kSuccess, ReconcileResult::kError, ReconcileResult::kRequeue}) {
    reconciles_.Add({{"controller", kController}, {"result", ToString(result)}});
  }
  for (const auto outcome : {StatusWrite::kWritten, StatusWrite::kConflict, StatusWrite::kError,
                             StatusWrite::kNotLeader}) {
    status_writes_.Add({{"result", ToString(outcome)}});
  }
  duration_.Add({{"controller", kController}}, DurationBuckets());
}

void PoolMetrics::Reconciled(ReconcileResult result, std::chrono::nanoseconds took) {
  reconciles_.Add({{"controller", kController}, {"result", ToString(result)}}).Increment();
  duration_.Add({{"controller", kController}}, DurationBuckets())
      .Observe(std::chrono::duration<double>(took).count());
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
