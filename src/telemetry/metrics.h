// The process's Prometheus metrics: a prometheus-cpp registry that modules register their
// families in, and its text exposition for /metrics.
//
//   eoc::telemetry::Metrics metrics;
//   auto& relists = prometheus::BuildCounter()
//                       .Name("eoc_reflector_relists_total")
//                       .Help("Full relists of a watched resource.")
//                       .Register(metrics.registry());
//   relists.Add({{"resource", "pods"}}).Increment();
//   std::string text = metrics.Serialize();   // Prometheus text format 0.0.4
//
// Not for the pick path: prometheus-cpp's Family and Histogram take a mutex on every call
// (DESIGN.md, "Rules of the house").
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>

#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace eoc::telemetry {

// A gauge or counter family named `name` with `help`, registered in `registry`.
inline prometheus::Family<prometheus::Gauge>& GaugeFamily(prometheus::Registry& registry,
                                                          const char* name, const char* help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(registry);
}
inline prometheus::Family<prometheus::Counter>& CounterFamily(prometheus::Registry& registry,
                                                              const char* name, const char* help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(registry);
}

class Metrics {
 public:
  Metrics() = default;
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;
  Metrics(Metrics&&) = delete;
  Metrics& operator=(Metrics&&) = delete;
  ~Metrics() = default;

  // Thread-safe, as prometheus::Registry is.
  prometheus::Registry& registry() { return registry_; }

  // Families made afresh each time the metrics are read, beside the registry's: for series kept
  // off the registry's locks (the pick endpoint's per-thread counts, server/pick_metrics.h).
  // `collect` is called from the thread that reads the metrics; it must be thread-safe and
  // outlive this object's use. Thread-safe.
  using Collector = std::function<std::vector<prometheus::MetricFamily>()>;
  void AddCollector(Collector collect);

  // Every registered family, then every collector's, in the Prometheus text format (version
  // 0.0.4). Thread-safe.
  std::string Serialize() const;

 private:
  prometheus::Registry registry_;
  mutable std::mutex mu_;
  std::vector<Collector> collectors_;  // guarded by mu_
};

}  // namespace eoc::telemetry
