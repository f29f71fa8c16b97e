// The routing words that the InferencePool API (src/api) and the routing engine (src/routing)
// both speak, defined once: the Strategy, the Accelerator class, and an EnergyProfile, each
// enumeration with the one table of its names (the CRD's and the status's spelling).
//
//   Strategy s = StrategyNamed("JouleWeighted").value();   // the spec's routing.strategy
//   StrategyName(s)                                       // "JouleWeighted", as the status says
//   AcceleratorName(Accelerator::kGpu)                     // "GPU", what energy profiles match
//   EnergyProfile{.idle_watts = 60, .max_watts = 300, .max_tokens_per_second = 2400}
//       .marginal_joules_per_token()                      // 0.1
//
// Why a shared leaf and not a mapping in controller/: `api` and `routing` may not include each
// other (DESIGN.md, "Rules of the house"), and these are one concept each (DESIGN.md: "one name
// per concept"). Two enumerations kept in step by a mapping would be two name tables to keep in
// step by hand, and a strategy added to one and not the other would compile. A leaf header that
// both include, next to the other shared helpers, has nothing to keep in step. What stays apart
// is what is not the same concept: the spec's `routing` block (api::RoutingSpec, with the CRD's
// defaults) and the engine's options (routing::PoolState::Options), mapped in
// controller/routing_config.h.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "common/enum_name.h"

namespace eoc {

// The routing strategies, as the CRD's `routing.strategy` names them (JouleWeighted is the
// default). RoundRobin and LeastBusy give every worker an equal weight; the other three weigh
// workers by their load (routing/weights.h).
enum class Strategy : std::uint8_t {
  kRoundRobin,
  kLeastBusy,
  kLatencyWeighted,
  kJouleWeighted,
  kCarbonWeighted
};

inline constexpr std::array<EnumName<Strategy>, 5> kStrategyNames{{
    {Strategy::kRoundRobin, "RoundRobin"},
    {Strategy::kLeastBusy, "LeastBusy"},
    {Strategy::kLatencyWeighted, "LatencyWeighted"},
    {Strategy::kJouleWeighted, "JouleWeighted"},
    {Strategy::kCarbonWeighted, "CarbonWeighted"},
}};

// "RoundRobin", "LeastBusy", ...
constexpr std::string_view StrategyName(Strategy strategy) {
  return EnumToString(strategy, kStrategyNames);
}
// The strategy of that name (exactly); nullopt for any other name.
constexpr std::optional<Strategy> StrategyNamed(std::string_view name) {
  return EnumNamed(name, kStrategyNames);
}

// A worker's accelerator class (DESIGN.md, "Capability"). A node's product label (e.g.
// nvidia.com/gpu.product) names the product within the class.
enum class Accelerator : std::uint8_t { kCpu, kGpu, kTpu, kNpu, kMixed };

inline constexpr std::array<EnumName<Accelerator>, 5> kAcceleratorNames{{
    {Accelerator::kCpu, "CPU"},
    {Accelerator::kGpu, "GPU"},
    {Accelerator::kTpu, "TPU"},
    {Accelerator::kNpu, "NPU"},
    {Accelerator::kMixed, "Mixed"},
}};

// "CPU", "GPU", "TPU", "NPU", "Mixed": the class names an energy profile may match.
constexpr std::string_view AcceleratorName(Accelerator accelerator) {
  return EnumToString(accelerator, kAcceleratorNames);
}

// A worker's power curve, one entry of the pool's `energy.profiles` without its key: power is
// idle_watts + marginal joules per token x tokens per second, up to max_watts at
// max_tokens_per_second.
struct EnergyProfile {
  double idle_watts = 0;
  double max_watts = 0;
  double max_tokens_per_second = 0;

  // (max_watts - idle_watts) / max_tokens_per_second; 0 (unknown) when the profile is incomplete.
  constexpr double marginal_joules_per_token() const {
    if (max_tokens_per_second <= 0 || max_watts <= idle_watts) return 0;
    return (max_watts - idle_watts) / max_tokens_per_second;
  }

  bool operator==(const EnergyProfile&) const = default;
};

}  // namespace eoc
