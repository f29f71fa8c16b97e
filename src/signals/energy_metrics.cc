#include "signals/energy_metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <map>
#include <utility>

namespace eoc::signals {
namespace {

const std::string kDcgmPower = "DCGM_FI_DEV_POWER_USAGE";                // W
const std::string kDcgmEnergy = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION";  // mJ
constexpr double kJoulesPerMillijoule = 1e-3;

const std::string kPodCpuWatts = "kepler_pod_cpu_watts";
const std::string kPodCpuJoules = "kepler_pod_cpu_joules_total";
const std::string kPodGpuWatts = "kepler_pod_gpu_watts";
const std::string kContainerJoules = "kepler_container_joules_total";
// Kepler 0.7's kinds that make up a container's total without overlap, as its own
// kepler_container_joules_total adds them: the RAPL package (which already holds the core and
// uncore domains, so kepler_container_{core,uncore}_joules_total are not added), DRAM (outside
// the package), "other" (the platform minus package and DRAM) and the GPU.
const std::vector<std::string> kContainerKinds = {
    "kepler_container_package_joules_total",
    "kepler_container_dram_joules_total",
    "kepler_container_other_joules_total",
    "kepler_container_gpu_joules_total",
};

using PodKey = std::pair<std::string, std::string>;  // namespace, pod

// A sample's value when it can be a power or energy figure: finite and not negative.
std::optional<double> Figure(const Sample& sample) {
  if (!std::isfinite(sample.value) || sample.value < 0) return std::nullopt;
  return sample.value;
}

void Add(std::optional<double>& into, double value) { into = into.value_or(0) + value; }

// The entry of `key` in `pods`, made when new; nullptr once kMaxPods pods are there (and then
// `truncated` is set).
template <typename T>
T* Slot(std::map<PodKey, T>& pods, PodKey key, bool& truncated) {
  const auto found = pods.find(key);
  if (found != pods.end()) return &found->second;
  if (pods.size() >= EnergyMap::kMaxPods) {
    truncated = true;
    return nullptr;
  }
  return &pods.emplace(std::move(key), T{}).first->second;
}

// The compute slices of a MIG profile ("1g.6gb": 1, "3g.20gb": 3); 1 when there is none.
double Slices(std::optional<std::string_view> profile) {
  if (!profile) return 1;
  int slices = 0;
  const auto [end, error] =
      std::from_chars(profile->data(), profile->data() + profile->size(), slices);
  if (error != std::errc() || slices <= 0 || slices > 64 ||
      end == profile->data() + profile->size() || *end != 'g') {
    return 1;
  }
  return slices;
}

// One GPU or MIG instance on a DCGM page.
struct Instance {
  std::optional<PodKey> holder;  // none: no pod holds it
  double slices = 1;
  double power_sum = 0;  // over its valid samples
  int power_count = 0;
  double energy_sum = 0;
  int energy_count = 0;
};

EnergyReading ReadDcgm(const Page& page) {
  // By GPU (its UUID, else its index on its host), then by MIG instance ("" for a whole GPU).
  std::map<std::string, std::map<std::string, Instance, std::less<>>, std::less<>> gpus;
  for (const std::string* name : {&kDcgmPower, &kDcgmEnergy}) {
    const Family* family = page.Find(*name);
    if (family == nullptr) continue;
    for (const Sample& sample : family->samples) {
      std::string gpu(sample.LabelValue("UUID").value_or(""));
      if (gpu.empty()) {
        gpu = std::string(sample.LabelValue("Hostname").value_or("")) + "/" +
              std::string(sample.LabelValue("gpu").value_or(""));
      }
      Instance& instance = gpus[gpu][std::string(sample.LabelValue("GPU_I_ID").value_or(""))];
      const std::string_view pod = sample.LabelValue("pod").value_or("");
      if (!instance.holder && !pod.empty()) {
        instance.holder =
            PodKey(std::string(sample.LabelValue("namespace").value_or("")), std::string(pod));
      }
      instance.slices = Slices(sample.LabelValue("GPU_I_PROFILE"));
      const std::optional<double> value = Figure(sample);
      if (!value) continue;
      if (name == &kDcgmPower) {
        instance.power_sum += *value;
        ++instance.power_count;
      } else {
        instance.energy_sum += *value * kJoulesPerMillijoule;
        ++instance.energy_count;
      }
    }
  }

  EnergyReading reading;
  std::map<PodKey, PodEnergy> pods;
  for (const auto& [gpu, instances] : gpus) {
    // The GPU's reading: the mean over its instances' series (each repeats the whole GPU's).
    double slices = 0;
    double power = 0;
    double energy = 0;
    int power_count = 0;
    int energy_count = 0;
    for (const auto& [id, instance] : instances) {
      slices += instance.slices;
      power += instance.power_sum;
      power_count += instance.power_count;
      energy += instance.energy_sum;
      energy_count += instance.energy_count;
    }
    for (const auto& [id, instance] : instances) {
      if (!instance.holder) continue;
      PodEnergy* pod = Slot(pods, *instance.holder, reading.truncated);
      if (pod == nullptr) continue;
      const double share = instance.slices / slices;
      if (power_count > 0) Add(pod->watts, power / power_count * share);
      if (energy_count > 0) Add(pod->joules_total, energy / energy_count * share);
      ++pod->gpus;
    }
  }
  for (auto& [key, pod] : pods) {
    pod.pod_namespace = key.first;
    pod.pod = key.second;
    reading.pods.push_back(std::move(pod));
  }
  return reading;
}

// One pod's sums on a Kepler page.
struct KeplerPod {
  // 0.10: by zone, only psys, package and dram.
  std::map<std::string, double, std::less<>> cpu_watts;
  std::map<std::string, double, std::less<>> cpu_joules;
  std::optional<double> gpu_watts;
  // 0.6/0.7
  std::optional<double> container_total;
  std::optional<double> container_kinds;
};

// A pod's CPU figure from its zones: psys (the whole platform) where there is one, else package
// plus dram; nullopt when it has neither.
std::optional<double> ZoneTotal(const std::map<std::string, double, std::less<>>& zones) {
  if (const auto psys = zones.find("psys"); psys != zones.end()) return psys->second;
  std::optional<double> total;
  for (const std::string_view zone : {"package", "dram"}) {
    if (const auto found = zones.find(zone); found != zones.end()) Add(total, found->second);
  }
  return total;
}

EnergyReading ReadKepler(const Page& page) {
  EnergyReading reading;
  std::map<PodKey, KeplerPod> pods;
  // Each family's samples, with the labels that name their pod, and what to add them to.
  const auto each = [&](const std::string& name, std::string_view namespace_label,
                        const std::function<void(KeplerPod&, const Sample&, double)>& add) {
    const Family* family = page.Find(name);
    if (family == nullptr) return;
    for (const Sample& sample : family->samples) {
      const std::string_view pod = sample.LabelValue("pod_name").value_or("");
      const std::optional<double> value = Figure(sample);
      if (pod.empty() || !value) continue;
      const std::string_view state = sample.LabelValue("state").value_or("running");
      if (state != "running") continue;  // 0.10 keeps terminated pods' energy a while
      KeplerPod* entry = Slot(
          pods,
          PodKey(std::string(sample.LabelValue(namespace_label).value_or("")), std::string(pod)),
          reading.truncated);
      if (entry != nullptr) add(*entry, sample, *value);
    }
  };
  const auto zoned = [](std::map<std::string, double, std::less<>> KeplerPod::*zones) {
    return [zones](KeplerPod& pod, const Sample& sample, double value) {
      const std::string_view zone = sample.LabelValue("zone").value_or("");
      if (zone == "psys" || zone == "package" || zone == "dram") {
        (pod.*zones)[std::string(zone)] += value;
      }
    };
  };
  each(kPodCpuWatts, "pod_namespace", zoned(&KeplerPod::cpu_watts));
  each(kPodCpuJoules, "pod_namespace", zoned(&KeplerPod::cpu_joules));
  each(kPodGpuWatts, "pod_namespace",
       [](KeplerPod& pod, const Sample&, double value) { Add(pod.gpu_watts, value); });
  each(kContainerJoules, "container_namespace",
       [](KeplerPod& pod, const Sample&, double value) { Add(pod.container_total, value); });
  for (const std::string& kind : kContainerKinds) {
    each(kind, "container_namespace",
         [](KeplerPod& pod, const Sample&, double value) { Add(pod.container_kinds, value); });
  }

  for (const auto& [key, sums] : pods) {
    PodEnergy pod{.pod_namespace = key.first, .pod = key.second};
    std::optional<double> watts = ZoneTotal(sums.cpu_watts);
    if (sums.gpu_watts) Add(watts, *sums.gpu_watts);
    const std::optional<double> joules = ZoneTotal(sums.cpu_joules);
    if (watts || joules) {
      pod.source = EnergySource::kKepler;
      pod.watts = watts;
      if (!sums.gpu_watts) pod.joules_total = joules;
    } else {
      pod.source = EnergySource::kKeplerLegacy;
      pod.joules_total = sums.container_total ? sums.container_total : sums.container_kinds;
    }
    if (pod.watts || pod.joules_total) reading.pods.push_back(std::move(pod));
  }
  return reading;
}

}  // namespace

std::string_view EnergySourceName(EnergySource source) {
  switch (source) {
    case EnergySource::kDcgm:
      return "DCGM";
    case EnergySource::kKeplerLegacy:
      return "Kepler 0.7";
    case EnergySource::kKepler:
      return "Kepler";
  }
  return "unknown";
}

EnergyMap::EnergyMap(Kind kind, std::vector<std::string> families)
    : kind_(kind), families_(std::move(families)) {
  std::sort(families_.begin(), families_.end());
}

EnergyMap EnergyMap::Dcgm() { return EnergyMap(Kind::kDcgm, {kDcgmPower, kDcgmEnergy}); }

EnergyMap EnergyMap::Kepler() {
  std::vector<std::string> families = {kPodCpuWatts, kPodCpuJoules, kPodGpuWatts, kContainerJoules};
  families.insert(families.end(), kContainerKinds.begin(), kContainerKinds.end());
  return {Kind::kKepler, std::move(families)};
}

EnergyReading EnergyMap::Read(const Page& page) const {
  return kind_ == Kind::kDcgm ? ReadDcgm(page) : ReadKepler(page);
}

}  // namespace eoc::signals
