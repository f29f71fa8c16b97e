#include "controller/scrape_pool.h"

#include <algorithm>

#include "common/url.h"
#include "controller/workers.h"

namespace eoc::controller {

NodeExporters ExportersByNode(const std::vector<std::shared_ptr<const kube::PodView>>& pods,
                              std::int32_t port, std::string path) {
  NodeExporters out{.by_node = {}, .path = std::move(path)};
  std::map<std::string, const kube::PodView*> chosen;  // node -> the first by name
  for (const auto& pod : pods) {
    if (pod == nullptr || !IsServing(*pod) || pod->node_name.empty()) continue;
    const kube::PodView*& first = chosen[pod->node_name];
    if (first == nullptr || pod->name < first->name) first = pod.get();
  }
  for (const auto& [node, pod] : chosen) {
    out.by_node.emplace(
        node, ExporterTarget{.pod = pod->ns + "/" + pod->name, .address = PodAddress(*pod, port)});
  }
  return out;
}

ScrapePool ScrapePoolOf(const api::InferencePool& pool, const PoolMembers& members,
                        const std::map<std::string, double>& grid_g_per_kwh,
                        const NodeExporters& exporters) {
  const std::vector<routing::Worker>& workers = members.workers;
  const api::MetricsSpec& m = pool.spec.metrics;
  ScrapePool out{.key = pool.ns + "/" + pool.name,
                 .engine = pool.spec.engine,
                 .path = m.path.empty() ? "/metrics" : m.path,
                 .interval = m.Interval(),
                 .timeout = std::chrono::seconds(std::max(1, m.timeout_seconds)),
                 .access = m.access,
                 .energy_source = pool.spec.energy.source,
                 .exporter_path = exporters.path};
  const bool read_exporters = pool.spec.energy.source != api::EnergySource::kStatic;
  std::map<std::string, ExporterTarget> named;  // by pod: the exporters some target names
  if (pool.spec.engine == api::Engine::kGeneric) {
    out.generic_names.running = m.names.running;
    out.generic_names.waiting = m.names.waiting;
    out.generic_names.kv_cache_usage = m.names.kv_cache_usage;
    out.generic_names.prompt_tokens = m.names.prompt_tokens;
    out.generic_names.generation_tokens = m.names.generation_tokens;
  }
  const std::string port = std::to_string(m.port > 0 ? m.port : pool.spec.target_port);
  out.targets.reserve(workers.size());
  for (std::size_t i = 0; i < workers.size(); ++i) {
    const routing::Worker& w = workers[i];
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
                           .grid_g_per_kwh = GridIntensityOf(w.capability, grid_g_per_kwh),
                           .exporter = {}});
    const std::string* node = i < members.notes.size() ? &members.notes[i].node : nullptr;
    if (!read_exporters || node == nullptr) continue;
    const auto exporter = exporters.by_node.find(*node);
    if (exporter == exporters.by_node.end()) continue;
    out.targets.back().exporter = exporter->second.pod;
    named.emplace(exporter->second.pod, exporter->second);
  }
  out.exporters.reserve(named.size());
  for (auto& [pod, target] : named) out.exporters.push_back(std::move(target));
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
