#include "controller/workers.h"

#include <algorithm>
#include <charconv>

#include "common/text.h"

namespace eoc::controller {
namespace {

// A pod annotation may name this many models; more is a mistake, not a fleet.
constexpr std::size_t kMaxAnnotatedModels = 64;

std::string AcceleratorOf(const kube::PodView& pod) {
  for (const auto& [resource, units] : pod.extended_requests) {
    if (units <= 0) continue;
    if (resource == "nvidia.com/gpu" || resource == "amd.com/gpu") return "GPU";
    if (resource == "google.com/tpu") return "TPU";
  }
  return "CPU";
}

// "a, b,,c" -> {"a", "b", "c"}; nullopt when it names no model or too many.
std::optional<std::vector<std::string>> ParseModels(std::string_view list) {
  std::vector<std::string> models;
  while (!list.empty()) {
    const auto comma = list.find(',');
    const std::string_view item = TrimWhitespace(list.substr(0, comma));
    if (!item.empty()) models.emplace_back(item);
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  if (models.empty() || models.size() > kMaxAnnotatedModels) return std::nullopt;
  std::sort(models.begin(), models.end());
  models.erase(std::unique(models.begin(), models.end()), models.end());
  return models;
}

std::optional<std::int32_t> ParsePositive(std::string_view text) {
  text = TrimWhitespace(text);
  std::int32_t n = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || ptr != text.data() + text.size() || n < 1) return std::nullopt;
  return n;
}

}  // namespace

bool IsServing(const kube::PodView& pod) {
  return pod.ready && !pod.terminating() && !pod.pod_ip.empty() &&
         pod.phase == kube::PodPhase::kRunning;
}

bool Selects(const api::InferencePool& pool, const kube::PodView& pod) {
  return pod.ns == pool.ns && !pool.spec.selector.empty() && pool.spec.selector.Matches(pod.labels);
}

Worker DescribeWorker(const kube::PodView& pod, const kube::NodeView* node,
                      const api::InferencePoolSpec& spec) {
  Worker w;
  w.pod = pod.name;
  // An IPv6 pod IP is written in brackets, so that the port stays separable.
  const bool v6 = pod.pod_ip.find(':') != std::string::npos;
  w.address = (v6 ? "[" + pod.pod_ip + "]" : pod.pod_ip) + ":" + std::to_string(spec.target_port);
  w.node = pod.node_name;
  w.accelerator = AcceleratorOf(pod);
  w.accelerator_product = w.accelerator;
  if (node != nullptr) {
    if (const std::string* product = kube::Lookup(node->labels, kGpuProductLabel)) {
      w.accelerator = "GPU";
      w.accelerator_product = *product;
    }
    if (const std::string* zone = kube::Lookup(node->labels, spec.carbon.zone_label)) {
      w.zone = *zone;
    }
  }
  w.models = spec.models;
  w.max_concurrency = spec.routing.max_concurrency_per_worker.value_or(0);
  if (const std::string* models = kube::Lookup(pod.annotations, api::kModelsAnnotation)) {
    if (auto parsed = ParseModels(*models)) {
      w.models = std::move(*parsed);
    } else {
      w.annotation_error = std::string(api::kModelsAnnotation) + ": must list 1 to " +
                           std::to_string(kMaxAnnotatedModels) + " model names, got " +
                           Quoted(*models);
    }
  }
  if (const std::string* limit = kube::Lookup(pod.annotations, api::kMaxConcurrencyAnnotation)) {
    if (auto parsed = ParsePositive(*limit)) {
      w.max_concurrency = *parsed;
    } else {
      if (!w.annotation_error.empty()) w.annotation_error += "; ";
      w.annotation_error += std::string(api::kMaxConcurrencyAnnotation) +
                            ": must be a positive integer, got " + Quoted(*limit);
    }
  }
  return w;
}

std::vector<Worker> SelectWorkers(const api::InferencePool& pool,
                                  const std::vector<std::shared_ptr<const kube::PodView>>& pods,
                                  const NodeLookup& nodes) {
  std::vector<Worker> out;
  for (const auto& pod : pods) {
    if (!IsServing(*pod) || !Selects(pool, *pod)) continue;
    const auto node = pod->node_name.empty() ? nullptr : nodes(pod->node_name);
    out.push_back(DescribeWorker(*pod, node.get(), pool.spec));
  }
  std::sort(out.begin(), out.end(), [](const Worker& a, const Worker& b) { return a.pod < b.pod; });
  return out;
}

}  // namespace eoc::controller
