// The energy exporters' maps: from a parsed /metrics page of dcgm-exporter or Kepler (a DaemonSet
// pod serving every worker on its node) to the watts and joules of each pod on that node. Each
// map names the families the parser is to keep. Pure.
//
//   const EnergyMap map = EnergyMap::Dcgm();
//   ParseResult parsed = ParseExposition(text, {.keep = map.Filter()});
//   EnergyReading reading = map.Read(parsed.page());
//   for (const PodEnergy& p : reading.pods) {
//     p.pod, p.pod_namespace  // "vllm-agg-0-vllmdecodeworker-s65j5", "dynamo-workload"
//     p.watts                 // std::optional<double>: 113.611 (a gauge, when the page has one)
//     p.joules_total          // std::optional<double>: a counter, in joules (CounterRate: watts)
//   }
//
// Series read (README.md, "Energy series", has the table):
//   DCGM    DCGM_FI_DEV_POWER_USAGE (W, gauge), DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION (mJ,
//           counter), per GPU (UUID, else gpu and Hostname) and MIG instance (GPU_I_ID), held by
//           the pod of the labels `pod` and `namespace` (present but empty, or absent, on GPUs no
//           pod holds: skipped).
//   Kepler  0.10 rewrite: kepler_pod_cpu_watts, kepler_pod_cpu_joules_total (labels pod_name,
//           pod_namespace, zone, state), kepler_pod_gpu_watts. 0.6/0.7: the counters
//           kepler_container_joules_total, else kepler_container_{package,dram,other,gpu}_
//           joules_total (labels pod_name, container_namespace, mode), summed over containers.
// How series combine into one pod's figures:
// - DCGM: a pod's figure is the sum over the GPUs it holds. A MIG instance repeats its whole
//   GPU's reading (dcgm-mig-a30-issue317-excerpt.prom): the GPU's reading is the mean over its
//   instances' series, and each instance gets the share of its compute slices (GPU_I_PROFILE
//   "3g.20gb": 3) among the instances the page lists, so a GPU is never counted twice.
// - Kepler 0.10: zones psys (the platform), else package + dram (package holds core and
//   uncore); only state "running" (or none). The GPU's watts add to the CPU's; the rewrite has no
//   GPU counter, so joules_total is absent for a pod with GPU watts (a rate of it would miss the
//   GPU). Kepler 0.7: both modes (dynamic and idle) make up the pod's energy.
// - A pod on both generations' series takes the 0.10 figures.
// - A value that is NaN, infinite or negative is absent. At most kMaxPods pods are read from a
//   page; past that, `truncated` is set and the rest are dropped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "signals/exposition.h"

namespace eoc::signals {

// Where a pod's figures came from.
enum class EnergySource : std::uint8_t {
  kDcgm,
  kKeplerLegacy,  // Kepler 0.6/0.7: kepler_container_*_joules_total
  kKepler,        // Kepler 0.10+: kepler_pod_*
};

// "DCGM", "Kepler 0.7", "Kepler".
std::string_view EnergySourceName(EnergySource source);

// One pod's power on one exporter's page; each figure absent when the page has no series for it.
struct PodEnergy {
  std::string pod_namespace;
  std::string pod;
  std::optional<double> watts;         // a gauge
  std::optional<double> joules_total;  // a counter since the exporter (or GPU) started, in J
  int gpus = 0;                        // DCGM: GPUs and MIG instances held; Kepler: 0
  EnergySource source = EnergySource::kDcgm;
};

struct EnergyReading {
  std::vector<PodEnergy> pods;  // by namespace, then pod name
  bool truncated = false;       // the page had more than kMaxPods pods; the rest are dropped
};

class EnergyMap {
 public:
  static constexpr std::size_t kMaxPods = 4096;

  static EnergyMap Dcgm();
  // Both generations: 0.6/0.7 and the 0.10 rewrite.
  static EnergyMap Kepler();

  // The families this map reads, for ParseOptions::keep.
  const std::vector<std::string>& families() const { return families_; }
  FamilyFilter Filter() const { return KeepFamilies(families_); }

  // Each pod's figures on the page; empty when the page has none of the series read.
  EnergyReading Read(const Page& page) const;

 private:
  enum class Kind : std::uint8_t { kDcgm, kKepler };
  EnergyMap(Kind kind, std::vector<std::string> families);

  Kind kind_;
  std::vector<std::string> families_;
};

}  // namespace eoc::signals
