// What one simulated run measured (a policy on a trace), how its figures are summarised, and the
// forms they leave the simulator in: JSON for machines, a table comparing policies for people.
//
//   RunReport r = Simulate(scenario, trace, profiles, scenario.policies[0], {});
//   r.ttft.p99                      // seconds, over the requests that got a first token
//   nlohmann::json j = ToJson(r);   // every figure, the time series and the latency samples
//   std::cout << ComparisonTable({r1, r2});
//
// Definitions (also in the README):
//   ttft       arrival at the gateway to the first output token (queueing for a pick included)
//   tpot       (finish - first token) / (output tokens - 1), for requests of 2 or more tokens
//   e2e        arrival to the last output token
//   slo        the share of all requests (shed and timed out ones count as misses) whose ttft and
//              tpot are within the scenario's SLOs
//   joules     every worker's energy: its steps, and its idle watts while it exists but does not
//              step (cold starts and draining included); per token: per output token
//   grams      each joule at its worker's zone's intensity at that moment (J / 3.6e6 x g/kWh)
//   imbalance  each second, over the ready workers, max over mean of their requests in flight
//              (running and queued in the engine), averaged over the seconds whose mean is > 0
//   capacity imbalance
//              the same with each worker's requests in flight over its capacity, its KV cache in
//              tokens (every request in flight holds some of it; the sequence limit is the same
//              on every class): the most loaded worker's share of the load over its share of the
//              capacity. 1 when every worker carries in proportion to what it can hold; equal to
//              `imbalance` on a fleet of one class
//   prefix hit the prompt tokens the engines found in their prefix caches, over those they looked
//   up
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace eoc::sim {

// Percentiles of one latency, in seconds (nearest rank); all 0 when there is no sample.
struct LatencySummary {
  std::size_t count = 0;
  double mean = 0;
  double p50 = 0;
  double p90 = 0;
  double p99 = 0;
  double max = 0;
};
// The summary of `samples` (any order; sorted here).
LatencySummary Summarise(std::vector<double> samples);

// One point of the run's time series, taken every RunReport::sample_seconds.
struct Sample {
  double seconds = 0;
  std::int32_t replicas = 0;   // pods: starting, ready and draining, every group
  std::int32_t ready = 0;      // ready workers (draining ones excluded)
  std::int32_t target = 0;     // the autoscaler's target for the scale target group
  std::int64_t in_flight = 0;  // requests in the engines (running and queued)
  std::int64_t waiting = 0;    // picks waiting in the pool's queue
  double watts = 0;            // the fleet's draw at that moment
};

// A scale event: the autoscaler changed the scale target's replicas.
struct ScaleEvent {
  double seconds = 0;
  std::int32_t from = 0;
  std::int32_t to = 0;
};

// Per accelerator class.
struct ClassFigures {
  std::int64_t requests = 0;  // requests the class's workers took
  std::int64_t output_tokens = 0;
  double joules = 0;
  double grams = 0;
};

struct RunReport {
  std::string policy;
  std::string strategy;  // the pool's spec.routing.strategy
  // Accounting: requests == finished + shed + timed_out, always.
  std::int64_t requests = 0;
  std::int64_t finished = 0;
  std::int64_t shed = 0;       // refused at once (queue full, no worker, too large for any cache)
  std::int64_t timed_out = 0;  // waited in the pool's queue past its timeout, or cut off by a
                               // drain's timeout or the end of the simulation
  std::map<std::string, std::int64_t> pick_reasons;  // by PickReason name, of picked requests
  std::map<std::string, std::int64_t> refusals;      // by PickStatus name, of shed ones
  LatencySummary ttft;
  LatencySummary tpot;
  LatencySummary e2e;
  double slo_attainment = 0;  // 0..1
  double simulated_seconds = 0;
  std::int64_t prompt_tokens = 0;
  std::int64_t output_tokens = 0;
  double output_tokens_per_second = 0;  // output tokens over simulated seconds
  double replica_seconds = 0;
  std::int32_t scale_ups = 0;
  std::int32_t scale_downs = 0;
  std::int32_t direction_flips = 0;  // an up after a down or a down after an up
  std::vector<ScaleEvent> scale_events;
  double joules = 0;
  double idle_joules = 0;  // of `joules`, drawn while not stepping
  double grams = 0;
  double joules_per_token = 0;  // per output token
  double grams_per_token = 0;
  double prefix_hit_rate = 0;  // 0..1
  std::int64_t preemptions = 0;
  double load_imbalance = 0;      // mean of max/mean in flight (1: even)
  double capacity_imbalance = 0;  // the same, each worker's in flight over its capacity
  std::map<std::string, ClassFigures> classes;
  double sample_seconds = 10;
  std::vector<Sample> samples;
  // For CDFs: every finished request's ttft and e2e (seconds), in arrival order.
  std::vector<double> ttft_samples;
  std::vector<double> e2e_samples;
};

// Every figure; with `samples` the time series and the latency samples too.
nlohmann::json ToJson(const RunReport& report, bool samples = true);

// A fixed-width table, a row per run: requests, finished, shed, timed out, TTFT p50/p99, TPOT p50,
// SLO attainment, J/token, gCO2e/token, replica-seconds, scale events, imbalance, prefix hits.
std::string ComparisonTable(const std::vector<RunReport>& reports);

}  // namespace eoc::sim
