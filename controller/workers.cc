#include "controller/workers.h"

#include <algorithm>
#include <charconv>

#include "common/text.h"

namespace eoc::controller {
namespace {

// A pod annotation may name this many models; more is a mistake, not a fleet.
constexpr std::size_t kMaxAnnotatedModels = 64;

Accelerator AcceleratorOf(const kube::PodView& pod) {
  for (const auto& [resource, units] : pod.extended_requests) {
    if (units <= 0) continue;
    if (resource == "nvidia.com/gpu" || resource == "amd.com/gpu") return Accelerator::kGpu;
    if (resource == "google.com/tpu") return Accelerator::kTpu;
  }
  return Accelerator::kCpu;
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

const api::AcceleratorProfile* FindProfile(const routing::Capability& capability,
                                           const api::EnergySpec& energy) {
  const api::AcceleratorProfile* by_class = nullptr;
  for (const auto& profile : energy.profiles) {
    if (profile.accelerator == capability.accelerator_product) return &profile;
    if (profile.accelerator == AcceleratorName(capability.accelerator)) by_class = &profile;
  }
  return by_class;
}

double GridIntensityOf(const routing::Capability& capability,
                       const std::map<std::string, double>& intensities) {
  if (capability.zone.empty()) return 0;
  const auto zone = intensities.find(capability.zone);
  return zone != intensities.end() ? zone->second : 0;
}

bool IsServing(const kube::PodView& pod) {
  return pod.ready && !pod.terminating() && !pod.pod_ip.empty() &&
         pod.phase == kube::PodPhase::kRunning;
}

std::string PodAddress(const kube::PodView& pod, std::int32_t port) {
  const bool v6 = pod.pod_ip.find(':') != std::string::npos;
  std::string address = v6 ? "[" + pod.pod_ip + "]" : pod.pod_ip;
  address.append(":").append(std::to_string(port));
  return address;
}

bool Selects(const api::InferencePool& pool, const kube::PodView& pod) {
  return pod.ns == pool.ns && !pool.spec.selector.empty() && pool.spec.selector.Matches(pod.labels);
}

DescribedWorker DescribeWorker(const kube::PodView& pod, const kube::NodeView* node,
                               const api::InferencePoolSpec& spec) {
  DescribedWorker out;
  routing::Worker& w = out.worker;
  w.pod = pod.ns + "/" + pod.name;
  w.key = routing::WorkerKeyOf(w.pod);
  w.address = PodAddress(pod, spec.target_port);
  w.weight = kEqualWeight;
  out.notes.node = pod.node_name;
  routing::Capability& c = w.capability;
  c.accelerator = AcceleratorOf(pod);
  c.accelerator_product = AcceleratorName(c.accelerator);
  if (node != nullptr) {
    if (const std::string* product = kube::Lookup(node->labels, kGpuProductLabel)) {
      c.accelerator = Accelerator::kGpu;
      c.accelerator_product = *product;
    }
    if (const std::string* zone = kube::Lookup(node->labels, spec.carbon.zone_label)) {
      c.zone = *zone;
    }
  }
  c.models = spec.models;
  c.max_concurrency = spec.routing.max_concurrency_per_worker.value_or(0);
  std::string& error = out.notes.annotation_error;
  if (const std::string* models = kube::Lookup(pod.annotations, api::kModelsAnnotation)) {
    if (auto parsed = ParseModels(*models)) {
      c.models = std::move(*parsed);
    } else {
      error = std::string(api::kModelsAnnotation) + ": must list 1 to " +
              std::to_string(kMaxAnnotatedModels) + " model names, got " + Quoted(*models);
    }
  }
  if (const std::string* limit = kube::Lookup(pod.annotations, api::kMaxConcurrencyAnnotation)) {
    if (auto parsed = ParsePositive(*limit)) {
      c.max_concurrency = *parsed;
    } else {
      if (!error.empty()) error += "; ";
      error += std::string(api::kMaxConcurrencyAnnotation) + ": must be a positive integer, got " +
               Quoted(*limit);
    }
  }
  const api::AcceleratorProfile* profile = FindProfile(c, spec.energy);
  w.profile = profile != nullptr ? profile->energy : routing::EnergyProfile{};
  return out;
}

std::string_view PodName(const routing::Worker& worker) {
  const std::string_view pod = worker.pod;
  return pod.substr(pod.find('/') + 1);  // npos + 1 == 0: the whole, for a pod without one
}

PoolMembers SelectWorkers(const api::InferencePool& pool,
                          const std::vector<std::shared_ptr<const kube::PodView>>& pods,
                          const NodeLookup& nodes) {
  std::vector<DescribedWorker> selected;
  for (const auto& pod : pods) {
    if (!IsServing(*pod) || !Selects(pool, *pod)) continue;
    const auto node = pod->node_name.empty() ? nullptr : nodes(pod->node_name);
    selected.push_back(DescribeWorker(*pod, node.get(), pool.spec));
  }
  std::sort(selected.begin(), selected.end(),
            [](const DescribedWorker& a, const DescribedWorker& b) {
              return a.worker.pod < b.worker.pod;
            });
  PoolMembers out;
  out.workers.reserve(selected.size());
  out.notes.reserve(selected.size());
  for (auto& [worker, notes] : selected) {
    out.workers.push_back(std::move(worker));
    out.notes.push_back(std::move(notes));
  }
  return out;
}

}  // namespace eoc::controller
