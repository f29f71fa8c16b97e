// The names the CRD gives each enumeration's values, in the order the schema lists them: the one
// place both ToString and the parser read them from. Internal to src/api.
//
//   eoc::api::internal::EnumToString(Engine::kVllm, eoc::api::internal::kEngineNames)  // "vllm"
#pragma once

#include <array>
#include <cstddef>
#include <string>

#include "api/inference_pool.h"
#include "api/json_reader.h"

namespace eoc::api::internal {

inline constexpr std::array<EnumName<Engine>, 4> kEngineNames{{
    {Engine::kVllm, "vllm"},
    {Engine::kSglang, "sglang"},
    {Engine::kTrtllm, "trtllm"},
    {Engine::kGeneric, "generic"},
}};

inline constexpr std::array<EnumName<MetricsAccess>, 2> kMetricsAccessNames{{
    {MetricsAccess::kDirect, "Direct"},
    {MetricsAccess::kApiServerProxy, "APIServerProxy"},
}};

// Shared with the routing engine: common/routing_terms.h holds the one table.
using eoc::kStrategyNames;

inline constexpr std::array<EnumName<ScalingMode>, 2> kScalingModeNames{{
    {ScalingMode::kApply, "Apply"},
    {ScalingMode::kRecommend, "Recommend"},
}};

inline constexpr std::array<EnumName<EnergySource>, 4> kEnergySourceNames{{
    {EnergySource::kAuto, "Auto"},
    {EnergySource::kDcgm, "DCGM"},
    {EnergySource::kKepler, "Kepler"},
    {EnergySource::kStatic, "Static"},
}};

// "a, b or c", each name in backticks: for documentation.
template <class E, std::size_t N>
std::string NamesInProse(const std::array<EnumName<E>, N>& names) {
  std::string out;
  for (std::size_t i = 0; i < N; ++i) {
    if (i > 0) out += i + 1 == N ? " or " : ", ";
    out += "`" + std::string(names[i].name) + "`";
  }
  return out;
}

}  // namespace eoc::api::internal
