// The standard endpoints every replica serves: liveness, readiness and Prometheus metrics.
//
//   eoc::server::ReadinessChecks readiness;
//   readiness.Add("informers-synced", [&] { return informers.HasSynced(); });
//   server.Handle("GET", "/healthz", eoc::server::HealthzHandler());
//   readiness.Add("pods-fresh", [&] { return !pods.Stale(); }, eoc::server::kInformational);
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

// A required check fails /readyz; an informational one only shows in /readyz?verbose.
enum class CheckKind : bool { kRequired, kInformational };
inline constexpr CheckKind kRequired = CheckKind::kRequired;
inline constexpr CheckKind kInformational = CheckKind::kInformational;

// Named conditions the replica must meet before it takes traffic (caches synced, ...), and
// informational ones worth showing beside them (caches fresh, ...).
class ReadinessChecks {
 public:
  using Check = std::function<bool()>;
  struct Result {
    std::string name;
    CheckKind kind = kRequired;
    bool ok = false;
  };

  // Adds the check `name`, or replaces the one of that name. Thread-safe: checks may be added
  // while the server runs.
  void Add(std::string name, Check check, CheckKind kind = kRequired);

  // Every check's outcome, in the order added; one that throws fails (and the throw is logged).
  // Runs the checks without holding a lock, so a check may call Add.
  std::vector<Result> Run() const;

 private:
  struct Entry {
    std::string name;
    Check check;
    CheckKind kind;
  };
  mutable std::mutex mu_;
  std::vector<Entry> checks_;  // guarded by mu_
  telemetry::Logger log_{"readiness"};
};

// 200 "ok" when every required check passes; else 503 with the failing names, one per line.
// With the query `verbose`, every check on a line of its own, as the API server's /readyz does:
// "[+]name ok", "[-]name failed", or "[-]name failed (informational)", then the verdict.
// `checks` must outlive the server.
Handler ReadyzHandler(const ReadinessChecks& checks);

// 200 with the text `text()` returns, as Prometheus text format 0.0.4. A `text` that throws makes
// the answer a 500.
Handler MetricsHandler(std::function<std::string()> text);

}  // namespace eoc::server
