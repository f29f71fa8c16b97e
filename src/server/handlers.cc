#include "server/handlers.h"

#include <algorithm>
#include <exception>

namespace eoc::server {

Handler HealthzHandler() {
  return [](const Request&, Response& response) { response.body().assign("ok\n"); };
}

void ReadinessChecks::Add(std::string name, Check check) {
  const std::lock_guard lock(mu_);
  const auto it = std::find_if(checks_.begin(), checks_.end(),
                               [&](const auto& entry) { return entry.first == name; });
  if (it != checks_.end()) {
    it->second = std::move(check);
  } else {
    checks_.emplace_back(std::move(name), std::move(check));
  }
}

std::vector<std::string> ReadinessChecks::Failing() const {
  std::vector<std::pair<std::string, Check>> checks;
  {
    const std::lock_guard lock(mu_);
    checks = checks_;
  }
  std::vector<std::string> failing;
  for (auto& [name, check] : checks) {
    bool ok = false;
    try {
      ok = check();
    } catch (const std::exception& e) {
      log_.Warn("readiness check threw", {{"check", name}, {"error", e.what()}});
    } catch (...) {
      log_.Warn("readiness check threw", {{"check", name}, {"error", "unknown"}});
    }
    if (!ok) failing.push_back(std::move(name));
  }
  return failing;
}

Handler ReadyzHandler(const ReadinessChecks& checks) {
  return [&checks](const Request&, Response& response) {
    const std::vector<std::string> failing = checks.Failing();
    if (failing.empty()) {
      response.body().assign("ok\n");
      return;
    }
    response.set_status(503);
    for (const auto& name : failing) response.body().append(name).append("\n");
  };
}

Handler MetricsHandler(std::function<std::string()> text) {
  return [text = std::move(text)](const Request&, Response& response) {
    response.set_content_type(kPrometheusContentType);
    response.body() = text();
  };
}

}  // namespace eoc::server
