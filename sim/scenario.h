// A simulation scenario: which trace, which fleet (accelerator classes with their measured
// profiles, zones with their grid intensity, groups of workers), the InferencePool spec that
// routes and scales it (parsed and defaulted by the very src/api code the controller runs), the
// SLOs, and the policies to compare on the same trace and seed. Read from YAML; every problem is
// reported with the field it is in.
//
//   Scenario s = LoadScenario("scenario.yaml");   // throws ScenarioError: "fleet[1].zone: ..."
//   for (const Policy& p : s.policies) Run(s, p.pool);   // each a parsed api::InferencePool
//
// The file (paths relative to the scenario's folder; numbers in the units their names say):
//
//   seed: 1                              # everything random: the trace's models, the picks
//   trace:
//     path: traces/azure-llm-2023-code.csv    # Azure CSV or Mooncake JSONL (sim/trace.h)
//     timeScale: 1                       # TraceOptions, by the same names
//     rateScale: 1
//     startSeconds: 0
//     durationSeconds: 600
//     maxRequests: 5000
//     blockSizeTokens: 16                # Azure's synthetic prefix blocks
//     sessions: {share: 0.6, meanTurns: 4, maxOpen: 10000}
//     prefixes: {sharedShare: 0.5, sharedPrefixes: 8, zipfS: 1, minTokens: 64, maxTokens: 1024}
//   profiles:                            # the measured figures (sim/power_profile.h): one
//     mlenergy: energy-profiles/mlenergy.csv   # version, task and model for the whole fleet
//     gpus: energy-profiles/gpus.csv
//     version: v3.0
//     task: lm-arena-chat
//     model: meta-llama/Llama-3.1-8B-Instruct
//   accelerators:                        # the classes the fleet has
//     - name: NVIDIA-H100-80GB-HBM3      # its nodes' nvidia.com/gpu.product label
//       gpu: H100-80GB-HBM3              # its rows in mlenergy.csv
//       gpus: 1                          # GPUs an instance uses
//       idleWatts: 67                    # per GPU; required where gpus.csv has no reading
//       kvCacheTokens: 300000            # the engine (sim/engine.h)
//       prefillTokensPerSecond: 20000
//       maxNumSeqs: 256
//       maxBatchedTokens: 8192
//       kvBlockTokens: 16
//   zones:
//     - {name: eu-north-1, gramsPerKwh: 30}           # constant, or by hour of the day:
//     - {name: eu-west-1, hourlyGramsPerKwh: [250, 240, ...]}   # 24 values, from 00:00
//   fleet:                               # groups of workers: a class in a zone
//     - {name: h100, accelerator: NVIDIA-H100-80GB-HBM3, zone: eu-west-1, replicas: 4,
//        scaleTarget: true}              # at most one group: the pool's scaleTargetRef
//   coldStartSeconds: 30                 # from a scale-up to a new worker serving
//   slo: {ttftSeconds: 2, tpotSeconds: 0.1}
//   pool:                                # an InferencePool spec, as the CRD has it
//     routing: {strategy: JouleWeighted}
//     autoscaling: {minReplicas: 1, maxReplicas: 8}
//   policies:                            # each merged into `pool` (a JSON merge patch, as
//     - {name: joules, pool: {routing: {strategy: JouleWeighted}}}    # kubectl patch --type
//     - {name: round-robin, pool: {routing: {strategy: RoundRobin}}}  # merge); none: `pool` alone
//     - {name: envoy, baseline: {kind: power-of-two}}   # a peer's router instead (baseline.h;
//                                                       # its parameters by its own names)
//
// The pool's spec gets what the simulated cluster fixes when it does not say: the selector
// (app=sim), targetPort 8000, engine vllm, and the scale target group's Deployment as
// scaleTargetRef. Unknown fields are errors (a typo must not silently become a default).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "api/inference_pool.h"
#include "sim/baseline.h"
#include "sim/engine.h"
#include "sim/power_profile.h"
#include "sim/trace.h"

namespace eoc::sim {

// Every problem of a scenario, one "field: message" a line.
class ScenarioError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct AcceleratorClass {
  std::string name;  // the node's nvidia.com/gpu.product: what the pool's energy profiles match
  ProfileKey profile;
  std::optional<double> idle_watts;  // per GPU; nullopt: gpus.csv's reading
  EngineParams engine;               // prefix_block_tokens is the trace's, set when it is read
};

struct Zone {
  std::string name;
  // gCO2e/kWh: one value all day, or 24, hour by hour from 00:00 of the simulated day.
  std::vector<double> grams_per_kwh;

  double GramsPerKwhAt(double seconds) const;
};

struct WorkerGroup {
  std::string name;         // its Deployment's name
  std::string accelerator;  // an AcceleratorClass::name
  std::string zone;         // a Zone::name
  std::int32_t replicas = 1;
  bool scale_target = false;
};

struct Slo {
  double ttft_seconds = 2;
  double tpot_seconds = 0.1;
};

struct Policy {
  std::string name;
  api::InferencePool pool;  // parsed, defaulted, valid
  // Set: a peer's router (baseline.h) places the requests instead of the pool's routing; the
  // pool's metrics and autoscaling still apply.
  std::optional<BaselineSpec> baseline;
};

struct Scenario {
  std::uint64_t seed = 1;
  std::string trace_path;
  TraceOptions trace;
  std::string mlenergy_csv;
  std::string gpus_csv;
  std::vector<AcceleratorClass> accelerators;
  std::vector<Zone> zones;
  std::vector<WorkerGroup> fleet;
  double cold_start_seconds = 30;
  Slo slo;
  std::vector<Policy> policies;  // at least one
};

// A scenario document (YAML read as JSON). Relative paths are taken from `base_dir`. Throws
// ScenarioError with every problem found.
Scenario ReadScenario(const nlohmann::json& doc, const std::string& base_dir);

// The scenario file at `path` (at most 1 MiB), its paths relative to its folder.
Scenario LoadScenario(const std::string& path);

}  // namespace eoc::sim
