// The standard endpoints every replica serves: liveness, readiness and Prometheus metrics.
//
//   eoc::server::ReadinessChecks readiness;
//   readiness.Add("informers-synced", [&] { return informers.HasSynced(); });
//   server.Handle("GET", "/healthz", eoc::server::HealthzHandler());
//   server.Handle("GET", "/readyz", eoc::server::ReadyzHandler(readiness));
//   server.Handle("GET", "/metrics",
//                 eoc::server::MetricsHandler([&] { return metrics.Serialize(); }));
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "server/server.h"
#include "telemetry/logging.h"

namespace eoc::server {

// 200 "ok": the process is alive and serving.
Handler HealthzHandler();

// Named conditions the replica must meet before it takes traffic (caches synced, ...).
class ReadinessChecks {
 public:
  using Check = std::function<bool()>;

  // Adds the check `name`, or replaces the one of that name. Thread-safe: checks may be added
  // while the server runs.
  void Add(std::string name, Check check);

  // The names of the checks that return false or throw (a throw is logged), in the order added.
  // Runs the checks without holding a lock, so a check may call Add.
  std::vector<std::string> Failing() const;

 private:
  mutable std::mutex mu_;
  std::vector<std::pair<std::string, Check>> checks_;  // guarded by mu_
  telemetry::Logger log_{"readiness"};
};

// 200 "ok" when every check passes; else 503 with the failing names, one per line. `checks` must
// outlive the server.
Handler ReadyzHandler(const ReadinessChecks& checks);

// 200 with the text `text()` returns, as Prometheus text format 0.0.4. A `text` that throws makes
// the answer a 500.
Handler MetricsHandler(std::function<std::string()> text);

}  // namespace eoc::server
