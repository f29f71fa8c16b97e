#include "controller/scrape_pool.h"

#include <algorithm>

#include "common/url.h"
#include "controller/workers.h"

namespace eoc::controller {

ScrapePool ScrapePoolOf(const api::InferencePool& pool, const std::vector<routing::Worker>& workers,
                        const std::map<std::string, double>& grid_g_per_kwh) {
  const api::MetricsSpec& m = pool.spec.metrics;
  ScrapePool out{.key = pool.ns + "/" + pool.name,
                 .engine = pool.spec.engine,
                 .path = m.path.empty() ? "/metrics" : m.path,
                 .interval = std::chrono::seconds(std::max(1, m.interval_seconds)),
                 .timeout = std::chrono::seconds(std::max(1, m.timeout_seconds)),
                 .access = m.access,
                 .energy_source = pool.spec.energy.source};
  if (pool.spec.engine == api::Engine::kGeneric) {
    out.generic_names.running = m.names.running;
    out.generic_names.waiting = m.names.waiting;
    out.generic_names.kv_cache_usage = m.names.kv_cache_usage;
    out.generic_names.prompt_tokens = m.names.prompt_tokens;
    out.generic_names.generation_tokens = m.names.generation_tokens;
  }
  const std::string port = std::to_string(m.port > 0 ? m.port : pool.spec.target_port);
  out.targets.reserve(workers.size());
  for (const routing::Worker& w : workers) {
    std::string error;
    const auto host = SplitHostPort(w.address, &error);
    if (!host || host->host.empty()) continue;  // not made by DescribeWorker: cannot happen
    std::string address =
        host->bracketed ? "[" + std::string(host->host) + "]" : std::string(host->host);
    address.append(":").append(port);
    out.targets.push_back({.key = w.key,
                           .pod = w.pod,
                           .address = std::move(address),
                           .max_concurrency = w.capability.max_concurrency,
                           .profile = w.profile,
                           .grid_g_per_kwh = GridIntensityOf(w.capability, grid_g_per_kwh)});
  }
  std::sort(out.targets.begin(), out.targets.end(),
            [](const ScrapeTarget& a, const ScrapeTarget& b) { return a.pod < b.pod; });
  return out;
}

signals::EngineMap EngineMapOf(api::Engine engine, const signals::GenericMetricNames& generic) {
  switch (engine) {
    case api::Engine::kVllm:
      return signals::EngineMap::Vllm();
    case api::Engine::kSglang:
      return signals::EngineMap::Sglang();
    case api::Engine::kTrtllm:
      return signals::EngineMap::Trtllm();
    case api::Engine::kGeneric:
      return signals::EngineMap::Generic(generic);
  }
  return signals::EngineMap::Generic(generic);
}

}  // namespace eoc::controller
