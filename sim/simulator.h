// The simulator: a trace replayed against a simulated fleet on a virtual clock, routed and scaled
// by the controller's own code. Nothing here decides what the controller decides; it calls what
// the controller calls:
//   membership      controller::SelectWorkers over the fleet's pods and nodes (workers.h)
//   scrapes         each worker's vLLM page with DCGM's power series (metrics_pages.h), read by
//                   controller::ReadScrape and ObserveGoodScrape into PoolState::ObserveLoad, every
//                   spec.metrics.intervalSeconds, so the routing sees load as stale as it is live
//   the table       the leader's WeighWorkers, MarkDraining, DecideTablePublish and
//                   BuildRoutingTable, then UpdatePoolDirectory (after each scrape round, each
//                   membership change and every second)
//   picks           PoolState::Pick with a waiting callback (a pick that waits is placed when
//                   capacity appears, or times out at the pool's queue timeout); or, for a policy
//                   with a `baseline`, that peer's router (baseline.h) in its place
//   the autoscaler  autoscale::OngoingWindow, InputAt and Decide with controller::PolicyOf, every
//                   second; a scale-in drains the pods PodsToDrain chooses (deletion-cost order)
//                   and removes them once their scraped load is zero, or at drainTimeoutSeconds
// What the simulator adds is the world: arrivals from the trace, engines (engine.h) that step
// with measured timing and power (power_profile.h), cold starts, zones whose intensity may change
// by the hour, and the accounting (report.h).
//
//   Scenario s = LoadScenario("scenario.yaml");
//   Trace trace = ReadTraceFile(s.trace_path, s.trace);
//   std::vector<PowerProfile> profiles = LoadProfiles(s);
//   for (const Policy& p : s.policies) reports.push_back(Simulate(s, trace, profiles, p, {}));
//
// Deterministic: the same scenario, trace, profiles and policy give the same report, byte for
// byte, on any run (every random choice comes from the scenario's seed; events at the same time
// run in the order they were scheduled).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "api/inference_pool.h"
#include "sim/autoscaler_record.h"
#include "sim/power_profile.h"
#include "sim/report.h"
#include "sim/scenario.h"
#include "sim/trace.h"

namespace eoc::sim {

struct SimulateOptions {
  // Called about every simulated minute with the simulated time and the trace's last arrival.
  std::function<void(double seconds, double last_arrival)> progress;
  double sample_seconds = 10;  // RunReport::samples' spacing
  // Set: every autoscaler tick is appended here.
  std::vector<AutoscalerTick>* ticks = nullptr;
  // Past the last arrival, how long requests may still take before they are cut off (counted as
  // timed out).
  double drain_seconds = 3600;
};

// Each accelerator class's measured profile (LoadPowerProfile), in the scenario's order. Throws
// ProfileError, or ScenarioError when the classes mix leaderboard versions.
std::vector<PowerProfile> LoadProfiles(const Scenario& scenario);

// spec.energy.profiles as the measured figures give them, for a pool whose spec has none: for each
// class, its idle watts, and its watts and output tokens per second at the largest measured
// batch. The routing's energy model then starts from what the simulated hardware draws, as an
// operator would write it from the same measurements.
std::vector<api::AcceleratorProfile> MeasuredEnergyProfiles(
    const Scenario& scenario, const std::vector<PowerProfile>& profiles);

// One run of `policy` on `trace`. `profiles` as LoadProfiles gives them. A pool without energy
// profiles gets MeasuredEnergyProfiles. Throws std::invalid_argument for a scenario the run cannot
// start (no worker group, a class without a profile).
RunReport Simulate(const Scenario& scenario, const Trace& trace,
                   const std::vector<PowerProfile>& profiles, const Policy& policy,
                   const SimulateOptions& options);

}  // namespace eoc::sim
