// What the autoscaler's leader keeps of one pool between ticks (controller/pool_scaler.h), shared
// by the scaler's two halves: the ticks (pool_scaler.cc) and the scale-in that drains
// (pool_scaler_drain.cc). Internal to them.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "autoscale/ongoing_window.h"
#include "autoscale/policy.h"
#include "common/clock.h"
#include "controller/pool_scaler.h"
#include "controller/scale_client.h"
#include "controller/scaling_report.h"

namespace eoc::controller {

// "Deployment llm", as Events and conditions name the target.
inline std::string TargetName(const api::ScaleTargetRef& ref) { return ref.kind + " " + ref.name; }

// A figure in a message: four significant digits.
inline std::string Number(double x) {
  std::array<char, 32> buf{};
  std::snprintf(buf.data(), buf.size(), "%.4g", x);
  return buf.data();
}

inline ScalingReport MakeReport(const char* status, const char* reason, std::string message) {
  return {.condition = {.type = std::string(api::kConditionScalingActive),
                        .status = status,
                        .reason = reason,
                        .message = std::move(message)}};
}

// A scale-in waiting for the workers it drains (scale_in.h), then for the workload to remove them.
struct Drain {
  std::int32_t from = 0;          // /scale's replicas when it began
  std::int32_t to = 0;            // the replicas /scale is set to once they are drained
  std::vector<std::string> pods;  // the pods drained: names without the namespace, sorted
  std::set<std::string> pinned;   // those carrying kDrainDeletionCost (kDeletionCost only)
  Clock::TimePoint since;         // when it began (its timeout runs from here)
  Clock::TimePoint marked;        // when its pods last changed (a zero counts from a scrape after)
  // /scale written: the pods stay draining until the workload has removed them.
  std::optional<Clock::TimePoint> written;

  bool Has(std::string_view pod) const { return std::binary_search(pods.begin(), pods.end(), pod); }
};

struct PoolScaler::State {
  autoscale::DelayTimer timer;
  std::optional<autoscale::OngoingWindow> window;
  std::int32_t target = 0;
  // The replicas this pool last wrote to /scale (status.desiredReplicas); nullopt until known.
  std::optional<std::int32_t> written;
  std::string last_scale_time;  // "" when this pool never scaled its target
  std::optional<ScaleState> scale;
  Clock::TimePoint scale_read_at;
  std::optional<Clock::TimePoint> hpa_checked_at;
  std::vector<std::string> hpas;
  Clock::TimePoint writes_held_until;
  std::optional<Drain> drain;
  std::optional<ScalingReport> report;
};

}  // namespace eoc::controller
