#include "server/handlers.h"

#include <algorithm>
#include <exception>

namespace eoc::server {

Handler HealthzHandler() {
  return [](const Request&, Response& response) { response.body().assign("ok\n"); };
}

void ReadinessChecks::Add(std::string name, Check check, CheckKind kind) {
  const std::lock_guard lock(mu_);
  const auto it = std::find_if(checks_.begin(), checks_.end(),
                               [&](const Entry& entry) { return entry.name == name; });
  if (it != checks_.end()) {
    it->check = std::move(check);
    it->kind = kind;
  } else {
    checks_.push_back({std::move(name), std::move(check), kind});
  }
}

std::vector<ReadinessChecks::Result> ReadinessChecks::Run() const {
  std::vector<Entry> checks;
  {
    const std::lock_guard lock(mu_);
    checks = checks_;
  }
  std::vector<Result> results;
  results.reserve(checks.size());
  for (auto& entry : checks) {
    bool ok = false;
    try {
      ok = entry.check();
    } catch (const std::exception& e) {
      log_.Warn("readiness check threw", {{"check", entry.name}, {"error", e.what()}});
    } catch (...) {
      log_.Warn("readiness check threw", {{"check", entry.name}, {"error", "unknown"}});
    }
    results.push_back({std::move(entry.name), entry.kind, ok});
  }
  return results;
}

namespace {

bool HasVerbose(std::string_view query) {
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view param = query.substr(0, amp);
    if (param == "verbose" || param.starts_with("verbose=")) return true;
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return false;
}

}  // namespace

Handler ReadyzHandler(const ReadinessChecks& checks) {
  return [&checks](const Request& request, Response& response) {
    const std::vector<ReadinessChecks::Result> results = checks.Run();
    const bool ready = std::all_of(results.begin(), results.end(),
                                   [](const auto& r) { return r.ok || r.kind == kInformational; });
    if (!ready) response.set_status(503);
    std::string& body = response.body();
    if (HasVerbose(request.query())) {
      for (const auto& r : results) {
        body.append(r.ok ? "[+]" : "[-]").append(r.name).append(r.ok ? " ok" : " failed");
        if (!r.ok && r.kind == kInformational) body.append(" (informational)");
        body.append("\n");
      }
      body.append(ready ? "readyz check passed\n" : "readyz check failed\n");
      return;
    }
    if (ready) {
      body.assign("ok\n");
      return;
    }
    for (const auto& r : results) {
      if (!r.ok && r.kind == kRequired) body.append(r.name).append("\n");
    }
  };
}

Handler MetricsHandler(std::function<std::string()> text) {
  return [text = std::move(text)](const Request&, Response& response) {
    response.set_content_type(kPrometheusContentType);
    response.body() = text();
  };
}

}  // namespace eoc::server
