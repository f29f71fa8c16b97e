#include "kube_metrics.h"

#include <chrono>

namespace eoc::controller {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;

double Seconds(std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); }

// 1 ms to about 16 minutes: work-queue waits reach the 1000 s backoff cap.
prometheus::Histogram::BucketBoundaries DurationBuckets() {
  return {0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60, 300, 1000};
}

prometheus::Histogram::BucketBoundaries ReconcileBuckets() {
  // 100 us to about 50 s: a reconcile is a cache read and at most a few API calls.
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
          0.1,    0.25,    0.5,    1,     2.5,    5,     10,   25,    50};
}

}  // namespace

class KubeMetrics::ReflectorAdapter final : public kube::ReflectorMetrics {
 public:
  ReflectorAdapter(KubeMetrics& m, const std::string& resource)
      : lists_(m.lists_.Add({{"resource", resource}})),
        watches_(m.watches_.Add({{"resource", resource}})),
        errors_(m.errors_.Add({{"resource", resource}})),
        stale_(m.stale_.Add({{"resource", resource}})),
        invalid_(m.invalid_.Add({{"resource", resource}})),
        events_(m.events_),
        resource_(resource) {}

  void OnList(std::size_t /*items*/) override { lists_.Increment(); }
  void OnWatchStart() override { watches_.Increment(); }
  void OnEvent(kube::WatchEventType type) override {
    events_.Add({{"resource", resource_}, {"type", kube::ToString(type)}}).Increment();
  }
  void OnError(const kube::Status& /*status*/) override { errors_.Increment(); }
  // One adapter serves every informer of the resource (one per watched namespace).
  void OnStale(bool stale, std::chrono::nanoseconds /*failing_for*/) override {
    if (stale) {
      stale_.Increment();
    } else {
      stale_.Decrement();
    }
  }
  void OnInvalidObject(const std::string& /*key*/, const std::string& /*resource_version*/,
                       const std::string& /*why*/) override {
    invalid_.Increment();
  }

 private:
  prometheus::Counter& lists_;
  prometheus::Counter& watches_;
  prometheus::Counter& errors_;
  prometheus::Gauge& stale_;
  prometheus::Counter& invalid_;
  prometheus::Family<prometheus::Counter>& events_;
  const std::string resource_;
};

class KubeMetrics::WorkQueueAdapter final : public kube::WorkQueueMetrics {
 public:
  WorkQueueAdapter(KubeMetrics& m, const std::string& name)
      : depth_(m.depth_.Add({{"name", name}})),
        adds_(m.adds_.Add({{"name", name}})),
        retries_(m.retries_.Add({{"name", name}})),
        queue_duration_(m.queue_duration_.Add({{"name", name}}, DurationBuckets())),
        work_duration_(m.work_duration_.Add({{"name", name}}, DurationBuckets())) {}

  void OnAdd() override { adds_.Increment(); }
  void OnDepth(std::size_t depth) override { depth_.Set(static_cast<double>(depth)); }
  void OnRetry() override { retries_.Increment(); }
  void OnLatency(std::chrono::nanoseconds queued) override {
    queue_duration_.Observe(Seconds(queued));
  }
  void OnWorkDuration(std::chrono::nanoseconds work) override {
    work_duration_.Observe(Seconds(work));
  }

 private:
  prometheus::Gauge& depth_;
  prometheus::Counter& adds_;
  prometheus::Counter& retries_;
  prometheus::Histogram& queue_duration_;
  prometheus::Histogram& work_duration_;
};

class KubeMetrics::LeaderAdapter final : public kube::LeaderElectionMetrics {
 public:
  LeaderAdapter(KubeMetrics& m, const std::string& lease)
      : leading_(m.leading_.Add({{"lease", lease}})),
        errors_(m.lease_errors_.Add({{"lease", lease}})) {}

  void OnLeadershipChanged(bool leading) override { leading_.Set(leading ? 1 : 0); }
  void OnLeaseError(const kube::Status& /*error*/) override { errors_.Increment(); }

 private:
  prometheus::Gauge& leading_;
  prometheus::Counter& errors_;
};

class KubeMetrics::ControllerAdapter final : public kube::ControllerMetrics {
 public:
  ControllerAdapter(KubeMetrics& m, const std::string& name)
      : success_(m.reconciles_.Add({{"controller", name}, {"result", "success"}})),
        error_(m.reconciles_.Add({{"controller", name}, {"result", "error"}})),
        requeue_(m.reconciles_.Add({{"controller", name}, {"result", "requeue"}})),
        duration_(m.reconcile_duration_.Add({{"controller", name}}, ReconcileBuckets())) {}

  void OnReconcile(kube::ReconcileOutcome outcome, std::chrono::nanoseconds took) override {
    switch (outcome) {
      case kube::ReconcileOutcome::kSuccess:
        success_.Increment();
        break;
      case kube::ReconcileOutcome::kError:
        error_.Increment();
        break;
      case kube::ReconcileOutcome::kRequeue:
        requeue_.Increment();
        break;
    }
    duration_.Observe(Seconds(took));
  }

 private:
  prometheus::Counter& success_;
  prometheus::Counter& error_;
  prometheus::Counter& requeue_;
  prometheus::Histogram& duration_;
};

KubeMetrics::KubeMetrics(prometheus::Registry& r)
    : lists_(BuildCounter()
                 .Name("eoc_reflector_lists_total")
                 .Help("Full lists of a watched resource: the first, and every relist.")
                 .Register(r)),
      watches_(BuildCounter()
                   .Name("eoc_reflector_watches_total")
                   .Help("Watches started on a resource (each restart counts).")
                   .Register(r)),
      events_(BuildCounter()
                  .Name("eoc_reflector_events_total")
                  .Help("Watch events handled, by resource and event type.")
                  .Register(r)),
      errors_(BuildCounter()
                  .Name("eoc_reflector_errors_total")
                  .Help("Failed lists and watches of a resource.")
                  .Register(r)),
      stale_(BuildGauge()
                 .Name("eoc_informer_stale")
                 .Help("Informers of a resource whose lists and watches have failed for longer "
                       "than --informer-stale-after (their caches may be behind).")
                 .Register(r)),
      invalid_(BuildCounter()
                   .Name("eoc_informer_invalid_objects_total")
                   .Help("Objects of a resource left out of the cache because they could not be "
                         "read, once per object and resourceVersion.")
                   .Register(r)),
      depth_(BuildGauge()
                 .Name("eoc_workqueue_depth")
                 .Help("Keys waiting in a work queue.")
                 .Register(r)),
      adds_(BuildCounter()
                .Name("eoc_workqueue_adds_total")
                .Help("Keys added to a work queue.")
                .Register(r)),
      retries_(BuildCounter()
                   .Name("eoc_workqueue_retries_total")
                   .Help("Keys re-added with backoff after a failed reconcile.")
                   .Register(r)),
      queue_duration_(BuildHistogram()
                          .Name("eoc_workqueue_queue_duration_seconds")
                          .Help("Time a key waited in a work queue before a worker took it.")
                          .Register(r)),
      work_duration_(BuildHistogram()
                         .Name("eoc_workqueue_work_duration_seconds")
                         .Help("Time a worker spent on a key.")
                         .Register(r)),
      leading_(BuildGauge()
                   .Name("eoc_leader_election_leading")
                   .Help("1 while this replica holds the Lease, else 0.")
                   .Register(r)),
      lease_errors_(BuildCounter()
                        .Name("eoc_leader_election_errors_total")
                        .Help("Failed reads and writes of the Lease.")
                        .Register(r)),
      reconciles_(BuildCounter()
                      .Name("eoc_reconcile_total")
                      .Help("Reconciles of a controller, by result (success, error, requeue).")
                      .Register(r)),
      reconcile_duration_(BuildHistogram()
                              .Name("eoc_reconcile_duration_seconds")
                              .Help("Time one reconcile took, API calls included.")
                              .Register(r)) {}

KubeMetrics::~KubeMetrics() = default;

template <class Adapter>
static Adapter& FindOrAdd(std::map<std::string, std::unique_ptr<Adapter>>& map,
                          const std::string& name, KubeMetrics& m) {
  auto& slot = map[name];
  if (!slot) slot = std::make_unique<Adapter>(m, name);
  return *slot;
}

kube::ReflectorMetrics& KubeMetrics::Reflector(const std::string& resource) {
  const std::lock_guard lock(mu_);
  return FindOrAdd(reflectors_, resource, *this);
}

kube::WorkQueueMetrics& KubeMetrics::WorkQueue(const std::string& name) {
  const std::lock_guard lock(mu_);
  return FindOrAdd(queues_, name, *this);
}

kube::LeaderElectionMetrics& KubeMetrics::Leader(const std::string& lease) {
  const std::lock_guard lock(mu_);
  return FindOrAdd(leaders_, lease, *this);
}

kube::ControllerMetrics& KubeMetrics::Controller(const std::string& name) {
  const std::lock_guard lock(mu_);
  return FindOrAdd(controllers_, name, *this);
}

}  // namespace eoc::controller
