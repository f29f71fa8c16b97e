// The autoscaler's conformance record: a CSV row per tick of the policy (its input and decision)
// and the policy's parameters by the CRD's names, the form tests/scripts/ray_policy_check.py
// replays against its model of Ray Serve's policy. bench_autoscale_replay writes one from its
// queue model (bench/results/autoscaler-conformance.*), eoc-sim from a simulated run
// (--autoscaler-record).
//
//   std::string csv = RecordCsv(ticks, /*complete_column=*/true);
//   nlohmann::json params = {{"autoscaling", PolicyJson(controller::PolicyOf(spec))}};
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "autoscale/policy.h"

namespace eoc::sim {

// One tick of the autoscaler: the policy's input and its decision.
struct AutoscalerTick {
  double seconds = 0;
  std::optional<double> total;  // ongoing requests; nullopt: unknown
  bool complete = true;
  std::int32_t current = 0;
  std::int32_t target = 0;
  std::int32_t decision = 0;
};

// The record: `time_s,ongoing,current,target,decision` (times and totals to 17 significant
// digits, an unknown total empty), with a last column `complete` (1 or 0) when asked for (the
// holds on missing metrics that the model reads from it).
std::string RecordCsv(const std::vector<AutoscalerTick>& ticks, bool complete_column);

// The policy's parameters, named as spec.autoscaling names them.
nlohmann::json PolicyJson(const autoscale::PolicyConfig& config);

}  // namespace eoc::sim
