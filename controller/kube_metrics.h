// The operator's metrics about its Kubernetes machinery: src/kube reports through hook interfaces
// of its own (it knows nothing of Prometheus), and these adapters turn the hooks into families of
// the process's registry.
//
//   eoc::telemetry::Metrics metrics;
//   eoc::controller::KubeMetrics kube(metrics.registry());
//   ReflectorOptions o{.resource = resources::kPods, .metrics = &kube.Reflector("pods")};
//   WorkQueue queue("inferencepools", RealClock(), nullptr, &kube.WorkQueue("inferencepools"));
//   LeaderElector elector(client, config, callbacks, {.metrics = &kube.Leader("eoc-operator")});
//   Controller c("inferencepool", reconciler, {}, {.metrics = &kube.Controller("inferencepool")});
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "kube/controller.h"
#include "kube/leader_election.h"
#include "kube/reflector.h"
#include "kube/work_queue.h"

namespace eoc::controller {

class KubeMetrics {
 public:
  explicit KubeMetrics(prometheus::Registry& registry);
  ~KubeMetrics();
  KubeMetrics(const KubeMetrics&) = delete;
  KubeMetrics& operator=(const KubeMetrics&) = delete;
  KubeMetrics(KubeMetrics&&) = delete;
  KubeMetrics& operator=(KubeMetrics&&) = delete;

  // One adapter per resource, queue, Lease or controller name, created on first use and kept for
  // the process's life (callers hold references).
  kube::ReflectorMetrics& Reflector(const std::string& resource);
  kube::WorkQueueMetrics& WorkQueue(const std::string& name);
  kube::LeaderElectionMetrics& Leader(const std::string& lease);
  // Reconciles by outcome and their duration (controller-runtime's controller_runtime_reconcile_*).
  kube::ControllerMetrics& Controller(const std::string& name);

 private:
  class ReflectorAdapter;
  class WorkQueueAdapter;
  class LeaderAdapter;
  class ControllerAdapter;

  prometheus::Family<prometheus::Counter>& lists_;
  prometheus::Family<prometheus::Counter>& watches_;
  prometheus::Family<prometheus::Counter>& events_;
  prometheus::Family<prometheus::Counter>& errors_;
  prometheus::Family<prometheus::Gauge>& stale_;
  prometheus::Family<prometheus::Counter>& invalid_;
  prometheus::Family<prometheus::Gauge>& depth_;
  prometheus::Family<prometheus::Counter>& adds_;
  prometheus::Family<prometheus::Counter>& retries_;
  prometheus::Family<prometheus::Histogram>& queue_duration_;
  prometheus::Family<prometheus::Histogram>& work_duration_;
  prometheus::Family<prometheus::Gauge>& leading_;
  prometheus::Family<prometheus::Counter>& lease_errors_;
  prometheus::Family<prometheus::Counter>& reconciles_;
  prometheus::Family<prometheus::Histogram>& reconcile_duration_;

  std::mutex mu_;
  std::map<std::string, std::unique_ptr<ReflectorAdapter>> reflectors_;
  std::map<std::string, std::unique_ptr<WorkQueueAdapter>> queues_;
  std::map<std::string, std::unique_ptr<LeaderAdapter>> leaders_;
  std::map<std::string, std::unique_ptr<ControllerAdapter>> controllers_;
};

}  // namespace eoc::controller
