// Grid intensity from a ConfigMap (spec.carbon.configMapRef.name, in the pool's namespace): each
// key of its `data` a zone, each value that zone's gCO2e/kWh as text ("70", "412.5").
//
//   kube::Informer<IntensityConfigMap> cm(client, {.resource = kube::resources::kConfigMaps,
//                                                  .ns = "prod",
//                                                  .field_selector = "metadata.name=grid"},
//                                         ToIntensityConfigMap, clock);
//   ReadIntensityConfigMap(cm.Get("prod/grid").get(), "prod/grid", {"eastus"}, now, zones);
//   zones.Get("eastus", now);   // 70 while the ConfigMap says so
//
// The informer keeps only what is read: the zones' numbers and, for a value that is not one, why.
// A present ConfigMap is read afresh on every reconcile (its value is as new as the reconcile); a
// deleted one, a zone's key removed, or a value that is not a believable intensity is a failing
// source, so the pool's table keeps the last good value for its hold (spec.carbon.maxStaleSeconds).
#pragma once

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>

#include "signals/carbon_intensity.h"

namespace eoc::controller::carbon {

// A value longer than this is refused (a number needs a few characters; this bounds the cache).
inline constexpr std::size_t kMaxIntensityValueLength = 64;

struct IntensityConfigMap {
  std::string ns;
  std::string name;
  std::map<std::string, double, std::less<>> values;        // zone -> gCO2e/kWh
  std::map<std::string, std::string, std::less<>> invalid;  // zone -> why its value is refused
  std::size_t ignored = 0;  // keys past signals::kMaxCarbonZones, not read
};

// Throws kube::MappingError (JsonShapeError) naming the field for a document without
// metadata.name, or whose `data` is not an object of strings.
IntensityConfigMap ToIntensityConfigMap(const nlohmann::json& object);

// Records in `into`, at `now`, each of `zones` as the ConfigMap `key` ("namespace/name") gives it:
// its value (Update), or (Fail) why it has none: the ConfigMap is not there (`config_map` null),
// has no key for the zone, or holds something that is not an intensity there.
void ReadIntensityConfigMap(const IntensityConfigMap* config_map, std::string_view key,
                            std::span<const std::string> zones, signals::SteadyTime now,
                            signals::ZoneIntensities& into);

}  // namespace eoc::controller::carbon
