#include "sim/autoscaler_record.h"

#include <array>
#include <cstdio>

namespace eoc::sim {
namespace {

std::string Exact(double value) {
  std::array<char, 32> buf{};
  std::snprintf(buf.data(), buf.size(), "%.17g", value);
  return buf.data();
}

}  // namespace

std::string RecordCsv(const std::vector<AutoscalerTick>& ticks, bool complete_column) {
  std::string out = "time_s,ongoing,current,target,decision";
  out += complete_column ? ",complete\n" : "\n";
  for (const AutoscalerTick& t : ticks) {
    out += Exact(t.seconds);
    out += ',';
    if (t.total) out += Exact(*t.total);
    out += ',' + std::to_string(t.current) + ',' + std::to_string(t.target) + ',' +
           std::to_string(t.decision);
    if (complete_column) out += t.complete ? ",1" : ",0";
    out += '\n';
  }
  return out;
}

nlohmann::json PolicyJson(const autoscale::PolicyConfig& config) {
  return {{"minReplicas", config.min_replicas},
          {"maxReplicas", config.max_replicas},
          {"targetOngoingRequests", config.target_ongoing_requests},
          {"upscaleDelaySeconds", config.upscale_delay_seconds},
          {"downscaleDelaySeconds", config.downscale_delay_seconds},
          {"downscaleToZeroDelaySeconds", config.downscale_to_zero_delay_seconds},
          {"upscalingFactor", config.upscaling_factor},
          {"downscalingFactor", config.downscaling_factor}};
}

}  // namespace eoc::sim
